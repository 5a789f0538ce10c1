"""Gitignore-style globs matched in time linear in the path: `.gitignore` lines, `kb.include`
and `kb.exclude`, a search's `paths`, a `list_files` glob.

pathspec stays the reader of git's rules (its `GitIgnoreSpecPattern` turns each pattern
into a regular expression, with git's edge cases), but its regular expressions are not
run by Python's `re`: that engine backtracks, and `*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b`
against a name of 30 `a`s took minutes while holding the GIL (no deadline fired, SIGTERM
waited). They run on RE2 (`google-re2`), whose automata never backtrack: each path costs
at most its length times the size of the patterns. The decision is pathspec's own —
the last matching pattern wins, a match of the file itself beats a match of a folder
above it — and a property test checks it against pathspec's answers.

The patterns go into RE2 sets of `_CHUNK` at most (one automaton answers "which of these
match" in one pass); a set that RE2 cannot build within its memory is split. Limits keep
the work per path small whatever a cloned repository writes in its `.gitignore`: a
pattern of at most `MAX_GLOB_CHARS` characters and `MAX_GLOB_WILDCARDS` wildcards, a
list of at most `MAX_GLOBS` patterns and `MAX_LIST_WILDCARDS` wildcards in all. A
pattern over a limit is refused (`GlobRefused`, naming it): strictly for a request, one
by one with a warning for a file or a setting, whose other patterns still count.

pathspec's translations are remembered (`translate`): a pattern is asked of it once per
process, and pathspec is imported only when a pattern is not remembered. A store keeps
the translations of its workspace's rules (`glob_memo.py`), so a one-shot keyword search
whose patterns were all translated before, by the same pathspec, never imports it.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

import re2

from kb_lsp.errors import InvalidInput

MAX_GLOB_CHARS = 1024
MAX_GLOB_WILDCARDS = 32
MAX_GLOBS = 10_000
MAX_LIST_WILDCARDS = 4096

_CHUNK = 128
# pathspec marks "matched a folder above the path" with this group at the end of its
# regular expressions (its own RE2 backend splits them the same way).
_DIR_GROUP = "(?P<ps_d>/)"
_DIR_OR_END = f"(?:{_DIR_GROUP}|$)"
# Lone surrogates (undecodable bytes of a file name, as os.fsdecode gives them) have no
# UTF-8: each becomes U+FFFD, one character for one, so `?` still counts it as one.
_SURROGATES = dict.fromkeys(range(0xD800, 0xE000), 0xFFFD)
# pathspec's `NORMALIZE_PATH_SEPS`: the platform's separators other than `/` (none on POSIX).
_SEPARATORS = [sep for sep in (os.sep, os.altsep) if sep and sep != "/"]

# pathspec's answer for one pattern: its regular expression and whether it includes
# (both None for a comment or a blank line), or the message of its refusal.
Translation = tuple[str | None, bool | None] | str
# Enough for any workspace's rules and many requests' globs; past it a pattern is asked
# of pathspec each time (correct, only slower) rather than the memo growing for ever.
MAX_REMEMBERED = 65_536
_remembered: dict[str, Translation] = {}

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # RE2 would print refusals on stderr
_OPTIONS.never_capture = True


class GlobRefused(InvalidInput):
    """A glob that is not matched: invalid, or over a limit. The message names it."""

    def __init__(self, pattern: str, reason: str) -> None:
        shown = pattern if len(pattern) <= 80 else pattern[:80] + "…"
        super().__init__(f"the glob {shown!r} is refused: {reason}")
        self.pattern = pattern
        self.reason = reason


def wildcards(pattern: str) -> int:
    """The wildcards of `pattern`: each run of `*`, each `?`, each `[…]` (escaped ones
    are literal characters)."""
    count = 0
    escaped = in_class = after_star = False
    for char in pattern:
        star = False
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif in_class:
            in_class = char != "]"
        elif char == "[":
            count += 1
            in_class = True
        elif char == "?":
            count += 1
        elif char == "*":
            count += 0 if after_star else 1
            star = True
        after_star = star
    return count


def translate(pattern: str) -> Translation:
    """pathspec's `GitIgnoreSpecPattern.pattern_to_regex` of `pattern`, remembered."""
    found = _remembered.get(pattern)
    if found is not None:
        return found
    # Here, not at the top: a process whose patterns are all remembered never loads
    # pathspec (39 modules with typing_extensions: a cold keyword search's largest
    # library after markdown-it).
    from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

    answer: Translation
    try:
        with warnings.catch_warnings():  # `[[` makes `re` warn; RE2 decides in `_variants`
            warnings.simplefilter("ignore")
            answer = GitIgnoreSpecPattern.pattern_to_regex(pattern)
    except Exception as err:  # pathspec raises several types for a pattern it refuses
        answer = str(err)
    if len(_remembered) < MAX_REMEMBERED:
        _remembered[pattern] = answer
    return answer


def remember(translations: Mapping[str, Translation]) -> None:
    """Add `translations` to the memo: pathspec's, as `translate` gave them (a store's,
    read back by `glob_memo.py`, which checks they are this pathspec's)."""
    for pattern, answer in translations.items():
        if len(_remembered) >= MAX_REMEMBERED:
            break
        _remembered[pattern] = answer


def normalized(path: str) -> str:
    """`pathspec.util.normalize_file(path)` for the `/`-separated strings we pass, in
    its three steps: the platform's other separators (`os.sep`, `os.altsep` when not
    `/`) become `/`, then one leading `/` is dropped, or else one leading `./`."""
    for separator in _SEPARATORS:
        path = path.replace(separator, "/")
    if path.startswith("/"):
        return path[1:]
    return path[2:] if path.startswith("./") else path


def _utf8(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return text.translate(_SURROGATES).encode("utf-8")


@dataclass(frozen=True)
class _Variant:
    """One regular expression of a pattern: pathspec's, or the folder or the file half
    of it when it ends with the folder mark."""

    index: int  # the pattern's position in the list
    pattern: str
    include: bool  # False for a negated pattern (`!keep.md`)
    folder: bool  # matched as a folder above the path (weaker than the file itself)
    regex: str


def _variants(index: int, pattern: str) -> list[_Variant]:
    """The regular expressions of one line; [] for a comment or a blank line;
    `GlobRefused` for a pattern pathspec or the limits refuse."""
    if len(pattern) > MAX_GLOB_CHARS:
        raise GlobRefused(pattern, f"longer than {MAX_GLOB_CHARS} characters ({len(pattern)})")
    translated = translate(pattern)
    if isinstance(translated, str):
        raise GlobRefused(pattern, f"not a valid glob ({translated})")
    regex, include = translated
    if include is None or regex is None:
        return []
    count = wildcards(pattern)
    if count > MAX_GLOB_WILDCARDS:
        raise GlobRefused(pattern, f"more than {MAX_GLOB_WILDCARDS} wildcards ({count})")
    regex = regex.translate(_SURROGATES)
    if regex.endswith(_DIR_OR_END):
        base = regex[: -len(_DIR_OR_END)]
        pairs = [(base + "/", True), (base + "$", False)]
    elif _DIR_GROUP in regex:
        pairs = [(regex.replace(_DIR_GROUP, "/"), True)]
    else:
        pairs = [(regex, False)]
    for text, _ in pairs:
        try:
            re2.compile(text, _OPTIONS)
        except re2.error:
            raise GlobRefused(pattern, "a bracket expression RE2 cannot read") from None
    return [_Variant(index, pattern, include, folder, text) for text, folder in pairs]


class _Chunk:
    """An RE2 set of some variants: which of them match, in one pass over the path."""

    def __init__(self, variants: list[_Variant]) -> None:
        self.variants = variants
        self.set = re2.Set.SearchSet(_OPTIONS)
        for variant in variants:
            self.set.Add(variant.regex)
        self.set.Compile()  # re2.error when it does not fit RE2's memory budget

    def matches(self, path: bytes) -> Iterator[_Variant]:
        for found in self.set.Match(path) or ():
            yield self.variants[found]


def _chunks(variants: list[_Variant]) -> list[_Chunk]:
    """The variants in sets RE2 can build: `_CHUNK` at a time, halved while too big."""
    out: list[_Chunk] = []
    pending = [variants[start : start + _CHUNK] for start in range(0, len(variants), _CHUNK)]
    while pending:
        part = pending.pop()
        try:
            out.append(_Chunk(part))
        except re2.error:
            if len(part) == 1:  # compiled alone in `_variants`: not seen within the limits
                raise GlobRefused(part[0].pattern, "too complex to match") from None
            middle = len(part) // 2
            pending += [part[:middle], part[middle:]]
    return out


class GlobList:
    """Gitignore-style patterns, in order, matched as pathspec's `GitIgnoreSpec` would.

    `refused` None: the first pattern over a limit raises `GlobRefused` (a request).
    Otherwise each refused pattern is passed to it and left out (a file or a setting).
    """

    def __init__(
        self,
        patterns: Iterable[str],
        refused: Callable[[GlobRefused], None] | None = None,
    ) -> None:
        self.patterns = tuple(patterns)  # as given: what a store remembers (`glob_memo.py`)
        variants: list[_Variant] = []
        total = kept = 0
        for index, pattern in enumerate(self.patterns):
            try:
                found = _variants(index, pattern)
                if found:
                    count = wildcards(pattern)
                    if kept >= MAX_GLOBS:
                        raise GlobRefused(pattern, f"more than {MAX_GLOBS} patterns in one list")
                    if total + count > MAX_LIST_WILDCARDS:
                        raise GlobRefused(
                            pattern, f"more than {MAX_LIST_WILDCARDS} wildcards in one list"
                        )
                    total += count
                    kept += 1
            except GlobRefused as err:
                if refused is None:
                    raise
                refused(err)
                continue
            variants += found
        self.size = kept
        self._chunks = _chunks(variants)

    def __bool__(self) -> bool:
        return self.size > 0

    def decide(self, path: str) -> bool | None:
        """True: a pattern includes `path` (for `.gitignore`: ignores it); False: a
        negated one re-includes it; None: none matches. `GitIgnoreSpec.check_file`'s
        `include`."""
        if not self._chunks:
            return None
        encoded = _utf8(normalized(path))
        # The strength of each matching pattern: 2 matched the path itself, 1 a folder.
        strength: dict[int, tuple[int, bool]] = {}
        for chunk in self._chunks:
            for variant in chunk.matches(encoded):
                level = 1 if variant.folder else 2
                if strength.get(variant.index, (0, False))[0] < level:
                    strength[variant.index] = (level, variant.include)
        decision: bool | None = None
        best = 0
        for index in sorted(strength, reverse=True):  # later patterns first
            level, include = strength[index]
            if level > best:
                decision, best = include, level
            if level == 2:
                break
        return decision

    def matches(self, path: str) -> bool:
        return self.decide(path) is True


def check(pattern: str) -> str:
    """`pattern` when it can be matched; `GlobRefused` (a `ValueError`) naming it if not."""
    GlobList([pattern])
    return pattern
