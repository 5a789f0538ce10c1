"""A search's query read once: its words and its filter (the `filter` given AND the one
typed in the query), then the list it asks for — the ranked files, or for a filter
without words the files it keeps. The knowledge base and a one-shot keyword search
(`lean.py`) both search through here, so they parse and dispatch alike."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kb_lsp.engine.terms import query_terms

if TYPE_CHECKING:
    from kb_lsp.engine.metadata.filters import Node as FilterNode
    from kb_lsp.engine.metadata.filters import SplitQuery
    from kb_lsp.engine.search.candidates import SearchSource
    from kb_lsp.engine.search.searcher import Searcher
    from kb_lsp.protocol import SearchHit, SearchMode


@dataclass(frozen=True)
class ParsedQuery:
    query: str  # as typed
    text: str  # its words, any filter typed in it taken out
    filter: FilterNode | None
    # What the warnings for a mistyped query read (`metadata/hints.py`), kept so that
    # they do not split the query again: the `filter` given apart (as typed, and parsed),
    # the query's split when it uses the filter language, and the fields it was split by.
    given: str | None = None
    explicit: FilterNode | None = None
    split: SplitQuery | None = None
    known: frozenset[str] = frozenset()

    @property
    def only_filter(self) -> bool:
        """A filter without words (`tag:payments`): the files it keeps are the list."""
        return self.filter is not None and not query_terms(self.text)


def parse_query(
    query: str,
    filter: str | None,
    field_names: Callable[[], set[str]],
    *,
    examples: Callable[[str], str | None] | None = None,
) -> ParsedQuery:
    """The words of `query` and the filter (`filter` AND the one typed in `query`);
    `field_names()`: every metadata field some indexed file has (asked only when needed);
    `examples(field)`: a term of this index for an error's "e.g." (none: no example).
    Raises `FilterError` for a malformed filter."""
    given = bool(filter and filter.strip())
    typed = any(mark in query for mark in ":<>=(")  # the filter language in the query
    if not given and not typed:
        # The parser's module (its grammar, ~10 ms to load) stays unloaded, which a
        # one-shot keyword search notices.
        return ParsedQuery(query, query, None, filter, None)
    from kb_lsp.engine.metadata.filters import combine, parse_filter, split_query, unknown_field

    explicit = parse_filter(filter, examples=examples) if given and filter else None
    if explicit is not None and filter is not None:
        # Typed in the query, an unknown field is a word; given as a filter, a likely
        # typo of a known one is an error that names it.
        problem = unknown_field(explicit, field_names, filter)
        if problem is not None:
            raise problem
    if not typed:
        return ParsedQuery(query, query, explicit, filter, explicit)
    known = frozenset(name.lower() for name in field_names())
    split = split_query(query, known, examples=examples)
    return ParsedQuery(
        query, split.text, combine(explicit, split.filter), filter, explicit, split, known
    )


def ranked(
    searcher: Searcher,
    sources: Sequence[SearchSource],
    parsed: ParsedQuery,
    *,
    limit: int,
    threshold: float,
    paths: list[str] | None,
    mode: SearchMode,
) -> list[SearchHit]:
    """The numbered list of `parsed` (see `KnowledgeBase.search`)."""
    if parsed.filter is not None and parsed.only_filter:
        return searcher.list_matching(sources, parsed.filter, limit=limit, paths=paths)
    return searcher.search(
        sources,
        parsed.text,
        limit=limit,
        threshold=threshold,
        paths=paths,
        mode=mode,
        filter=parsed.filter,
    )
