"""What in a query or a filter looks mistyped: said beside the results, never a refusal.

A filter typed in the query is searched the way it was typed (`filters.split_query`): a
word shaped like a filter whose field no indexed file has is words (`ownr:priya`), a
parenthesis without its pair has no words and so is left out (`tag:payments )`). When
the field is close to one that files have, or the query uses the filter language, the
user probably meant a filter: each such slip is a `QueryWarning` with the query as it was
probably meant. A value no file has where a longer one exists (`owner:priya` beside
"Priya Raman", in the query or in `--filter`) is one too, since equality on a value is
not a substring search. Filter syntax a front end was given as a filter (`--filter`,
`filter`) stays an error (`FilterError`): there nothing else could be meant.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Literal, Protocol

from kb_lsp.engine.metadata.filters import (
    BUILTIN_FIELDS,
    FIELD_ALIASES,
    FilterError,
    Node,
    Not,
    SplitQuery,
    Term,
    parse_filter,
)
from kb_lsp.protocol import QueryWarning

# A word of the query shaped like a filter term: `-field:value`, `field>=value`.
_FILTER_WORD = re.compile(r"(-?)([A-Za-z_][\w.\-]*)(>=|<=|[:=<>])(.+)", re.DOTALL)
# Fields whose `:` is not equality on stored values (a substring, a folder, a number).
_NOT_VALUES = frozenset({"folder", "title", "modified", "size", "words", "has"})
# Values read to find the one a short value stands for.
_LONGER_VALUES = 20


class FieldValues(Protocol):
    """What a hint reads of the indexed files' metadata (every root's)."""

    def keeps_any(self, term: Term) -> bool: ...

    def values_containing(self, field: str, fragment: str, limit: int) -> list[tuple[str, int]]: ...


class Parsed(Protocol):
    """A query as the search read it (`search.query.ParsedQuery`): what the warnings need."""

    @property
    def query(self) -> str: ...

    @property
    def given(self) -> str | None: ...  # the filter given apart, as typed

    @property
    def explicit(self) -> Node | None: ...  # ... and parsed

    @property
    def split(self) -> SplitQuery | None: ...  # the query's words and typed filter

    @property
    def known(self) -> frozenset[str]: ...  # the fields it was split by, lower-cased


def query_warnings(parsed: Parsed, values: FieldValues) -> list[QueryWarning]:
    """Every warning for a search of the `parsed` query (module docstring): read from the
    search's own parse, so a query the search refuses has none here — its error says it."""
    warnings: list[QueryWarning] = []
    query, split = parsed.query, parsed.split
    if split is not None:
        warnings += _typed_words(query, split, set(parsed.known), values)
        if split.filter is not None:
            warnings += _short_values(split.filter, "query", query, values)
    if parsed.explicit is not None and parsed.given is not None:
        warnings += _short_values(parsed.explicit, "filter", parsed.given, values)
    return warnings


def _typed_words(
    query: str, split: SplitQuery, known: set[str], values: FieldValues
) -> list[QueryWarning]:
    """Filter-shaped words with a field close to a known one, and parentheses without a
    pair (when the query uses the filter language: in plain words they are text)."""
    names = sorted({*BUILTIN_FIELDS, *known} - {"has"})
    out: list[QueryWarning] = []
    opened: list[int] = []
    strays: list[int] = []
    for start, end in split.words:
        word = query[start:end]
        if word in ("(", ")"):
            if word == "(":
                opened.append(start)
            elif opened:
                opened.pop()
            else:
                strays.append(start)
            continue
        match = _FILTER_WORD.fullmatch(word)
        if match is None or word.startswith(("http:", "https:")):
            continue
        typed = match.group(2)
        field = FIELD_ALIASES.get(typed.lower(), typed.lower())
        near = difflib.get_close_matches(field, names, n=1) if field not in names else []
        if not near:
            continue
        fixed = match.group(1) + near[0] + match.group(3) + match.group(4)
        fixed = _with_longer_value(fixed, values) or fixed
        out.append(
            QueryWarning(
                where="query",
                position=start,
                message=(
                    f"no indexed file has the field {typed!r}, so {word!r} was searched "
                    f"as words; did you mean {fixed}?"
                ),
                suggestion=_tidy(query[:start] + fixed + query[end:]),
            )
        )
    if split.filter is not None or out:
        for at in sorted([*strays, *opened]):
            pair = (
                "'(' without a matching ')'" if query[at] == "(" else "')' without a matching '('"
            )
            out.append(
                QueryWarning(
                    where="query",
                    position=at,
                    message=f"{pair}: left out",
                    suggestion=_tidy(query[:at] + query[at + 1 :]),
                )
            )
    return sorted(out, key=lambda w: w.position)


def _short_values(
    node: Node, where: Literal["query", "filter"], text: str, values: FieldValues
) -> list[QueryWarning]:
    """A `field:value` no file has where a longer value holds it (`owner:priya`)."""
    out: list[QueryWarning] = []
    for term in _terms(node):
        longer = _longer_value(term, values)
        if longer is None or term.end <= term.position:
            continue
        fixed = f"{term.field}:{_quoted(longer)}"
        out.append(
            QueryWarning(
                where=where,
                position=term.value_position,
                message=f"no file has {term.field} {term.value!r}; did you mean {fixed}?",
                suggestion=text[: term.position] + fixed + text[term.end :],
            )
        )
    return out


def _longer_value(term: Term, values: FieldValues) -> str | None:
    """The most common value of `term`'s field that holds its value at a word's start,
    when no file has the value itself; None otherwise."""
    if term.op != ":" or term.field in _NOT_VALUES or "*" in term.value:
        return None
    typed = term.value.strip().lower()
    if not typed or values.keeps_any(term):
        return None
    starts_word = re.compile(r"(?<!\w)" + re.escape(typed))
    for value, _files in values.values_containing(term.field, typed, _LONGER_VALUES):
        if value.lower() != typed and starts_word.search(value.lower()):
            return value
    return None


def _with_longer_value(term_text: str, values: FieldValues) -> str | None:
    """`term_text` (one filter term) with its value made the longer one files have."""
    try:
        node = parse_filter(term_text)
    except FilterError:
        return None
    negated = isinstance(node, Not)
    term = node.item if isinstance(node, Not) else node
    if not isinstance(term, Term):
        return None
    longer = _longer_value(term, values)
    if longer is None:
        return None
    return ("-" if negated else "") + f"{term.field}:{_quoted(longer)}"


def _terms(node: Node) -> Iterator[Term]:
    if isinstance(node, Term):
        yield node
    elif isinstance(node, Not):
        yield from _terms(node.item)
    elif not isinstance(node, Term) and hasattr(node, "items"):
        for item in node.items:
            yield from _terms(item)


def _quoted(value: str) -> str:
    if value and not re.search(r'[\s()"\\]', value):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _tidy(text: str) -> str:
    return re.sub(r"\s{2,}", " ", text).strip()


def merged_values(
    roots: Sequence[
        tuple[Callable[[Term], bool], Callable[[str, str, int], list[tuple[str, int]]]]
    ],
) -> FieldValues:
    """One `FieldValues` over several roots' (keeps_any, values_containing) pairs."""
    return _Merged(roots)


class _Merged:
    def __init__(
        self,
        roots: Sequence[
            tuple[Callable[[Term], bool], Callable[[str, str, int], list[tuple[str, int]]]]
        ],
    ) -> None:
        self._roots = roots

    def keeps_any(self, term: Term) -> bool:
        return any(keeps(term) for keeps, _ in self._roots)

    def values_containing(self, field: str, fragment: str, limit: int) -> list[tuple[str, int]]:
        counts: dict[str, int] = {}
        spelled: dict[str, str] = {}
        for _, read in self._roots:
            for value, files in read(field, fragment, limit):
                key = value.lower()
                counts[key] = counts.get(key, 0) + files
                spelled.setdefault(key, value)
        ranked = sorted(counts, key=lambda key: (-counts[key], key))
        return [(spelled[key], counts[key]) for key in ranked[:limit]]
