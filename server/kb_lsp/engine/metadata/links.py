"""The link grammar of the knowledge base, where links point, and the words other notes
use for a note (incoming anchor text).

The grammar (the one place it is written; metadata extraction, snippets, related notes
and hover all read links through it):

* wiki links and embeds: `[[Target]]`, `[[Target#Heading]]`, `[[Target|text]]`,
  `![[Target]]` (`wiki_links`);
* Markdown inline links and images: `[text](target "title")`, `[text](<a b.md>)`, text
  with one level of nested brackets (`markdown_links`); a target with a URI scheme, a
  protocol-relative `//host` or only a `#fragment` is not a workspace link (`is_external`);
* a bare path in prose, `notes/other.md` (`bare_paths`): not a link for the index, but
  what a hover offers to follow.

Resolution, against the workspace-relative paths of one root's indexed files:

* Markdown links (`[text](../a/b.md)`) resolve against the linking file's folder, or the
  root for a leading `/`; a target without an extension also tries `.md`.
* Wiki links and embeds follow Obsidian's rules: `[[Name]]` is the file whose path
  without `.md` is `Name` (case-insensitive), else the files whose path ends in
  `/Name` ("shortest path when possible"); several such files make the name ambiguous —
  the one in the linking file's folder wins, else the one with the shortest path, else the
  first in alphabetical order (so a link never resolves to two notes). `[[folder/Name]]`
  narrows the same way. A file's aliases (front matter) resolve too, when no file name
  matches.
* Dendron writes `[[label|target]]` (label first) and `dendron://vault/` prefixes: when
  the part before `|` resolves to nothing and the part after it resolves, that is read as
  Dendron's order.

Anchor text: for each target, the distinct texts of the links pointing at it from other
files — `[[T|this text]]`, `[this text](t.md)`, and for a bare `[[T]]` the name as
written (a shortened or differently spelled name is still evidence). Each linking file
counts once per text, and at most `MAX_ANCHORS` texts are kept per target (the most
linked first), so a hub page that every note links to gains no more than any page
linked with the same few words.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

MAX_ANCHORS = 24
MAX_ANCHOR_CHARS = 120
_DENDRON_PREFIX = re.compile(r"^dendron://[^/]*/")

_WIKI = re.compile(r"(!?)\[\[([^\[\]\n]+?)\]\]")
_MARKDOWN = re.compile(
    r"(!?)\[(?P<text>(?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*(?:<(?P<angled>[^>\n]+)>|(?P<plain>[^)\s]+))"
    r"(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)"
)
_BARE = re.compile(r"(?<![\w/.\-(\[])(?P<path>[\w.\-/]*[\w\-]\.(?:md|markdown))(?![\w/])")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.\-]*:")


@dataclass(frozen=True)
class LinkMatch:
    """One link as written on a line: where it is and what it says."""

    start: int  # code-point columns on the line
    end: int
    embed: bool  # `![[…]]` or `![…](…)`
    target: str  # wiki: without `#heading` and `|text`; Markdown: the raw destination
    text: str  # the anchor text ("" when none)
    heading: str = ""  # wiki: `[[T#Heading]]` → "Heading" (as written, unstripped)


def wiki_links(line: str) -> Iterator[LinkMatch]:
    """The wiki links and embeds of a line, in order (an empty `[[]]` is none)."""
    for match in _WIKI.finditer(line):
        target, _, text = match.group(2).partition("|")
        target, _, heading = target.partition("#")
        yield LinkMatch(
            match.start(),
            match.end(),
            bool(match.group(1)),
            target.strip(),
            text.strip(),
            heading,
        )


def wiki_display(line: str) -> str:
    """A line with each wiki link replaced by what it shows: its text, else its target."""
    return _WIKI.sub(lambda m: _shown(m.group(1), m.group(2)), line)


def _shown(bang: str, inside: str) -> str:
    target, _, text = inside.partition("|")
    return bang + (text or target.partition("#")[0])


def plain_links(text: str) -> str:
    """`text` with each Markdown link replaced by its text and each wiki link by what it
    shows (`wiki_display`)."""
    return wiki_display(_MARKDOWN.sub(lambda m: m.group("text"), text))


def markdown_links(line: str) -> Iterator[LinkMatch]:
    """The Markdown inline links and images of a line, in order."""
    for match in _MARKDOWN.finditer(line):
        target = (match.group("angled") or match.group("plain") or "").strip()
        yield LinkMatch(
            match.start(),
            match.end(),
            bool(match.group(1)),
            target,
            " ".join(match.group("text").split()),
        )


def bare_paths(line: str) -> Iterator[LinkMatch]:
    """Paths of Markdown files written in prose (`notes/other.md`)."""
    for match in _BARE.finditer(line):
        yield LinkMatch(match.start(), match.end(), False, match.group("path"), "")


def is_external(target: str) -> bool:
    """A web (or other scheme) link, a protocol-relative one, or a fragment of this file."""
    return bool(_SCHEME.match(target)) or target.startswith(("#", "//"))


_MD_SUFFIXES = (".md", ".markdown")


@dataclass(frozen=True)
class StoredLink:
    source: str  # the linking file's path
    kind: str  # "wiki" | "embed" | "markdown"
    target: str  # as written
    text: str  # the anchor text as written ("" for a bare wiki link)


def _stem(path: str) -> str:
    for suffix in _MD_SUFFIXES:
        if path.lower().endswith(suffix):
            return path[: -len(suffix)]
    return path


class Resolver:
    """Resolves link targets against a fixed set of file paths (one root)."""

    def __init__(self, paths: Iterable[str], aliases: Mapping[str, Sequence[str]] = {}) -> None:
        self.paths = sorted(paths)
        self.exact = {p.lower(): p for p in self.paths}
        self.by_stem: dict[str, list[str]] = {}
        self.by_name: dict[str, list[str]] = {}
        for path in self.paths:
            stem = _stem(path).lower()
            self.by_stem.setdefault(stem, []).append(path)
            self.by_name.setdefault(posixpath.basename(stem), []).append(path)
        self.by_alias: dict[str, list[str]] = {}
        for path, names in aliases.items():
            for name in names:
                self.by_alias.setdefault(" ".join(name.lower().split()), []).append(path)

    def resolve(self, link: StoredLink) -> tuple[str | None, str]:
        """The target path (or None) and the anchor text to credit it with."""
        if link.kind == "markdown":
            return self.markdown(link.source, link.target), link.text
        target = _DENDRON_PREFIX.sub("", link.target.strip())
        found = self.wiki(link.source, target)
        if found is None and link.text:
            other = _DENDRON_PREFIX.sub("", link.text.strip())
            swapped = self.wiki(link.source, other)
            if swapped is not None:
                return swapped, target  # Dendron's [[label|target]]
        return found, link.text or target

    def markdown(self, source: str, target: str) -> str | None:
        joined = _joined(source, target)
        if joined is None:
            return None
        for candidate in (joined, joined + ".md"):
            found = self.exact.get(candidate.lower())
            if found is not None:
                return found
        return None

    def wiki(self, source: str, target: str) -> str | None:
        name = target.strip().strip("/")
        if not name:
            return None
        key = _stem(name).lower()
        if key in self.by_stem:
            return self._pick(source, self.by_stem[key])
        base = posixpath.basename(key)
        candidates = [p for p in self.by_name.get(base, []) if _stem(p).lower().endswith(key)]
        if candidates:
            return self._pick(source, candidates)
        by_alias = self.by_alias.get(" ".join(name.lower().split()))
        if by_alias:
            return self._pick(source, by_alias)
        return None

    @staticmethod
    def _pick(source: str, candidates: Sequence[str]) -> str:
        if len(candidates) == 1:
            return candidates[0]
        folder = posixpath.dirname(source)
        return min(
            candidates,
            key=lambda p: (posixpath.dirname(p) != folder, p.count("/"), len(p), p),
        )


def _joined(source: str, target: str) -> str | None:
    """A Markdown link's target as a workspace path; None when it leaves the root."""
    base = "" if target.startswith("/") else posixpath.dirname(source)
    joined = posixpath.normpath(posixpath.join(base, target.lstrip("/")))
    return None if joined.startswith("../") or joined == ".." else joined


def _wiki_name(target: str) -> str:
    return _DENDRON_PREFIX.sub("", target.strip()).strip().strip("/")


def name_key(name: str) -> str:
    """The one name a file answers to by its path or an alias, and a link looks files up
    by: two names a `Resolver` matches (same stem, same file name, same alias or same
    path, in any case and spacing) have the same key, so the links a file's change can
    re-target are found by its keys alone (`metadata/anchors.py`)."""
    folded = " ".join(name.lower().split())
    return " ".join(posixpath.basename(_stem(folded)).split())


def file_names(path: str, aliases: Iterable[str]) -> set[str]:
    """The keys (`name_key`) a file answers to: its path's and its aliases'."""
    return {name_key(path), *(name_key(alias) for alias in aliases if alias)}


def lookup_names(link: StoredLink) -> set[str]:
    """The keys of every name `Resolver.resolve` may look `link` up by."""
    if link.kind == "markdown":
        joined = _joined(link.source, link.target)
        return set() if joined is None else {name_key(joined), name_key(joined + ".md")}
    names = {name_key(_wiki_name(link.target))}
    if link.text:
        names.add(name_key(_wiki_name(link.text)))  # Dendron's [[label|target]]
    return names


def rank_anchors(credits: Iterable[tuple[str, str, str]]) -> dict[str, list[str]]:
    """target path -> its anchor texts, from (linking file, target, text credited). Of
    texts that differ only in case, the first linking file's (by path) is shown: the
    answer must not hang on the order the links were read in."""
    counts: dict[str, dict[str, tuple[str, set[str]]]] = {}
    for source, target, text in sorted(credits):
        if target == source:
            continue
        shown = " ".join(text.split())[:MAX_ANCHOR_CHARS]
        if not shown:
            continue
        per_target = counts.setdefault(target, {})
        entry = per_target.setdefault(shown.lower(), (shown, set()))
        entry[1].add(source)
    out: dict[str, list[str]] = {}
    for target, texts in counts.items():
        ranked = sorted(texts.values(), key=lambda item: (-len(item[1]), item[0].lower()))
        out[target] = [text for text, _ in ranked[:MAX_ANCHORS]]
    return out
