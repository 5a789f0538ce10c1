"""Where links point, and the words other notes use for a note (incoming anchor text).

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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

MAX_ANCHORS = 24
MAX_ANCHOR_CHARS = 120
_DENDRON_PREFIX = re.compile(r"^dendron://[^/]*/")
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
        base = "" if target.startswith("/") else posixpath.dirname(source)
        joined = posixpath.normpath(posixpath.join(base, target.lstrip("/")))
        if joined.startswith("../") or joined == "..":
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


def anchor_texts(links: Iterable[StoredLink], resolver: Resolver) -> dict[str, list[str]]:
    """target path -> its incoming anchor texts (distinct, most linking files first)."""
    counts: dict[str, dict[str, tuple[str, set[str]]]] = {}
    for link in links:
        target, text = resolver.resolve(link)
        if target is None or target == link.source:
            continue
        shown = " ".join(text.split())[:MAX_ANCHOR_CHARS]
        if not shown:
            continue
        per_target = counts.setdefault(target, {})
        entry = per_target.setdefault(shown.lower(), (shown, set()))
        entry[1].add(link.source)
    out: dict[str, list[str]] = {}
    for target, texts in counts.items():
        ranked = sorted(texts.values(), key=lambda item: (-len(item[1]), item[0].lower()))
        out[target] = [text for text, _ in ranked[:MAX_ANCHORS]]
    return out
