"""What a knowledge base answers of its index across every root: search, did-you-mean,
the warnings for a mistyped query, the metadata schema, a file's best passages, related
notes and the vocabulary's counts. Each answer reads the roots of one `snapshot`."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kb_lsp.config import Settings
from kb_lsp.engine.examples import IndexExamples, index_examples
from kb_lsp.engine.file_reads import FileReads
from kb_lsp.engine.metadata.filters import FilterError
from kb_lsp.engine.metadata.filters import Node as FilterNode
from kb_lsp.engine.metadata.hints import FieldValues, merged_values, query_warnings
from kb_lsp.engine.metadata.schema import TOP_VALUES, build_schema, note_extractions
from kb_lsp.engine.related import outgoing_links, related_files
from kb_lsp.engine.roots import RootIndex, Roots
from kb_lsp.engine.search import Searcher
from kb_lsp.engine.search.query import ParsedQuery, parse_query, ranked
from kb_lsp.engine.search.spelling import did_you_mean
from kb_lsp.protocol import QueryWarning, SchemaResponse, SearchHit, SearchMode


class Queries:
    """Search and the other reads of the index, over every root."""

    def __init__(
        self,
        roots: Roots,
        searcher: Callable[[], Searcher],
        files: FileReads,
        settings: Settings,
    ) -> None:
        self._roots = roots
        # The knowledge base's searcher of the moment: a benchmark's fusion grid swaps it.
        self._searcher = searcher
        self._files = files
        self.settings = settings  # the search threshold applies without reopening

    def search(
        self,
        query: str,
        *,
        limit: int = 10,
        paths: list[str] | None = None,
        mode: SearchMode = "hybrid",
        filter: str | None = None,
    ) -> list[SearchHit]:
        """See `KnowledgeBase.search`."""
        parsed = parse_query(query, filter, self.field_names, examples=self._example)
        return self._ranked(self._roots.snapshot(), parsed, limit, paths, mode)

    def search_with_hints(
        self,
        query: str,
        *,
        limit: int = 10,
        paths: list[str] | None = None,
        mode: SearchMode = "hybrid",
        filter: str | None = None,
    ) -> tuple[list[SearchHit], str | None, list[QueryWarning]]:
        """What `kb/search` answers: the list, a correction that lists something, and what
        looks mistyped — the query parsed once, over one snapshot of the roots."""
        roots = self._roots.snapshot()
        parsed = parse_query(query, filter, self.field_names, examples=self._example)
        hits = self._ranked(roots, parsed, limit, paths, mode)

        def finds(suggested: str) -> bool:
            return bool(self.search(suggested, limit=1, paths=paths, mode=mode, filter=filter))

        readers = [index.store.reader for index in roots]
        fix = did_you_mean(query, parsed.text, readers, finds)
        return hits, fix, query_warnings(parsed, self._values(roots))

    def _ranked(
        self,
        roots: list[RootIndex],
        parsed: ParsedQuery,
        limit: int,
        paths: list[str] | None,
        mode: SearchMode,
    ) -> list[SearchHit]:
        """The numbered list of `parsed` over `roots`, at the threshold of now."""
        sources = [index.source for index in roots]
        threshold = self.settings.search.threshold
        searcher = self._searcher()
        return ranked(
            searcher, sources, parsed, limit=limit, threshold=threshold, paths=paths, mode=mode
        )

    def did_you_mean(
        self,
        query: str,
        filter: str | None = None,
        *,
        paths: list[str] | None = None,
        mode: SearchMode = "hybrid",
    ) -> str | None:
        """`query` with each word the index does not know replaced by one it does, such
        that the same search lists something (`search/spelling.py`), or None."""
        text, _ = self.parse_query(query, filter)

        def finds(suggested: str) -> bool:
            return bool(self.search(suggested, limit=1, paths=paths, mode=mode, filter=filter))

        readers = [index.store.reader for index in self._roots.snapshot()]
        return did_you_mean(query, text, readers, finds)

    def query_warnings(self, query: str, filter: str | None = None) -> list[QueryWarning]:
        """What in `query` or `filter` looks mistyped (`metadata/hints.py`); none for a
        query the search refuses (its error says what is wrong)."""
        try:
            parsed = parse_query(query, filter, self.field_names)
        except FilterError:
            return []
        return query_warnings(parsed, self._values(self._roots.snapshot()))

    @staticmethod
    def _values(roots: list[RootIndex]) -> FieldValues:
        """The stored metadata values the warnings read, every root's."""
        pairs = [
            (
                lambda term, i=index: bool(i.store.reader.filter_paths(term, i.prefix)),
                lambda field, fragment, limit, i=index: i.store.reader.values_containing(
                    field, fragment, limit
                ),
            )
            for index in roots
        ]
        return merged_values(pairs)

    def parse_query(self, query: str, filter: str | None = None) -> tuple[str, FilterNode | None]:
        """The words of `query` and the filter (`filter` AND the one typed in `query`);
        an error's example is a term of this index (`examples.py`)."""
        parsed = parse_query(query, filter, self.field_names, examples=self._example)
        return parsed.text, parsed.filter

    def _example(self, name: str) -> str | None:
        return self.examples().term(name)

    def examples(self) -> IndexExamples:
        """Searches, questions and filter terms made from this index (`examples.py`)."""
        return index_examples(self.schema(), self._files.files())

    def field_names(self) -> set[str]:
        """Every metadata field some indexed file has."""
        names: set[str] = set()
        for index in self._roots.snapshot():
            names |= index.store.reader.field_names()
        return names

    def schema(self, top: int = TOP_VALUES, *, extracted: bool = False) -> SchemaResponse:
        """See `KnowledgeBase.schema`."""
        roots = self._roots.snapshot()
        files = sum(index.store.reader.file_count() for index in roots)
        summaries = [index.store.reader.field_summaries(top * 4) for index in roots]
        schema = build_schema(files, summaries, top)
        if extracted:
            schema.notes = [
                note
                for index in roots
                for note in note_extractions(index.prefix, index.store.reader.claims())
            ]
        return schema

    def search_in_file(self, path: str, query: str, *, limit: int = 5) -> list[SearchHit]:
        """The best passages of one file (one hit per chunk, not grouped)."""
        index, relative = self._roots.locate(path)
        return self._searcher().passages(index.source, relative, query, limit=limit)

    def related(
        self, path: str, *, limit: int = 10, exclude_linked: bool = False
    ) -> list[SearchHit]:
        """See `KnowledgeBase.related`."""
        index, relative = self._roots.locate(path)
        index.workspace.resolve_inside(relative)
        sources = [root.source for root in self._roots.snapshot()]
        exclude: frozenset[tuple[str, str]] = frozenset()
        if exclude_linked:
            reader = index.store.reader
            text = "\n\n".join(chunk.text for chunk in reader.chunks_of(relative))
            linked = outgoing_links(text, relative, reader.manifest())
            exclude = frozenset((index.source.root, p) for p in linked)
        return related_files(sources, index.source, relative, limit=limit, exclude=exclude)

    def term_counts(self, terms: Sequence[str]) -> dict[str, int]:
        """How many chunks of every root hold each term: the notes' vocabulary, stemmed
        as the index stems (what tells a follow-up question from a new one)."""
        counts: dict[str, int] = {}
        for index in self._roots.snapshot():
            for term, chunks in index.store.reader.term_counts(terms).items():
                counts[term] = counts.get(term, 0) + chunks
        return counts
