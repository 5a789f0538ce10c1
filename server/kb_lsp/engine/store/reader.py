"""The text side of one root's store, read: what search, related notes and the status ask
of the manifest, the chunks, FTS5 and the notes' metadata, under names that say what they
answer, without the vector index, its cache or the team index — so without numpy, Chroma
or the settings' models. A `Store` reads through one (`store_reader.py` adds the vectors);
a one-shot keyword search opens one alone (`open_text_reader`) and answers from it when
the index is current (`runtime/quick_search.py`); anything else opens the whole `Store`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kb_lsp.engine.metadata.tables import METADATA_VERSION
from kb_lsp.engine.snippet_blocks import BLOCKS_VERSION
from kb_lsp.engine.store.catalog import Catalog, FileRecord
from kb_lsp.engine.store.chunks import Chunks
from kb_lsp.engine.store.db import Database
from kb_lsp.engine.store.extractions import Applied, Extractions
from kb_lsp.engine.store.figures import StoreFigures, read_figures
from kb_lsp.engine.store.fts import Fts, KeywordHit
from kb_lsp.engine.store.notes import Notes
from kb_lsp.engine.terms import STEMS_VERSION

# The `meta` row of the glob translations a whole sync saved (`StoreWriter.save_glob_memo`).
GLOB_MEMO = "glob_translations"

if TYPE_CHECKING:
    from kb_lsp.engine.metadata.cards import Card
    from kb_lsp.engine.metadata.filters import Node as FilterNode
    from kb_lsp.engine.metadata.tables import FieldSummary
    from kb_lsp.engine.records import StoredChunk


class TextReader:
    """One root's text side over an open database. Its parts (`catalog`, `chunks`, `fts`,
    `notes`, `extractions`) are the store package's own; callers outside it read through
    the methods. Readers may call from any thread (`db.py`)."""

    def __init__(self, db: Database, root: Path) -> None:
        self.db = db
        self.root = root
        self.read_only = db.read_only
        self.catalog = Catalog(db)
        self.chunks = Chunks(db, root)
        self.fts = Fts(db, self.chunks, self.catalog.file_count)
        self.notes = Notes(db)
        self.extractions = Extractions(db)

    # --- the manifest --------------------------------------------------------------------

    def manifest(self) -> dict[str, FileRecord]:
        return self.catalog.manifest()

    def file(self, path: str) -> FileRecord | None:
        return self.catalog.file(path)

    def records(self, paths: Iterable[str]) -> dict[str, FileRecord]:
        return self.catalog.records(paths)

    def titles(self, paths: Iterable[str]) -> dict[str, str]:
        return self.catalog.titles(paths)

    def skipped(self) -> list[tuple[str, str]]:
        """(path, why) of the files a sync left out."""
        return self.catalog.skipped()

    # --- chunks and the full-text index --------------------------------------------------

    def chunks_of(self, path: str) -> list[StoredChunk]:
        return self.chunks.chunks_of(path)

    def first_chunks(self, paths: Iterable[str]) -> dict[str, StoredChunk]:
        return self.chunks.first_chunks(paths)

    def chunks_by_id(self, ids: Iterable[str]) -> dict[str, StoredChunk]:
        return self.chunks.chunks_by_id(ids)

    def keyword_search(self, match: str, k: int, paths: list[str] | None) -> list[KeywordHit]:
        """The best `k` chunks for the FTS5 query `match`, among `paths` when given."""
        return self.fts.search(match, k, paths)

    def snippets(self, match: str, rowids: Iterable[int]) -> dict[int, str]:
        return self.fts.snippets(match, rowids)

    def term_counts(self, terms: Sequence[str]) -> dict[str, int]:
        """How many chunks contain each of `terms` (FTS5's vocabulary)."""
        return self.fts.term_counts(terms)

    # The rest of the vocabulary, as a suggestion reads it (`search/spelling.py`).

    def terms_between(self, low: str, high: str) -> list[tuple[str, int]]:
        return self.fts.terms_between(low, high)

    def texts_with(self, term: str, limit: int) -> list[str]:
        return self.fts.texts_with(term, limit)

    def name_words(self) -> dict[str, int]:
        return self.fts.name_words()

    # --- the notes' metadata -------------------------------------------------------------

    def filter_paths(self, node: FilterNode, prefix: str = "") -> set[str]:
        return self.notes.filter_paths(node, prefix)

    def field_values(
        self, paths: Sequence[str], fields: Sequence[str]
    ) -> dict[str, dict[str, list[str]]]:
        return self.notes.field_values(paths, fields)

    def extractions_applied(self, paths: list[str]) -> dict[str, Applied]:
        """path -> the extraction behind its extracted values, for the given paths."""
        return self.extractions.applied(paths)

    def field_names(self) -> set[str]:
        return self.notes.field_names()

    def field_summaries(self, top: int) -> list[FieldSummary]:
        """Each field's values, the `top` most used first (what the schema shows)."""
        return self.notes.field_summaries(top)

    def cards(self, paths: Iterable[str]) -> dict[str, Card]:
        return self.notes.cards(paths)

    def cards_matching(self, match: str, k: int, allowed: list[str] | None) -> list[str]:
        """Files whose aliases, description or incoming anchor texts match `match`."""
        return self.notes.matching(match, k, allowed)

    # --- the whole -----------------------------------------------------------------------

    def current(self) -> bool:
        """Whether this process writes the store and nothing in it waits for an upgrade
        that opening a `Store` and syncing would make (metadata tables, stems, readable
        blocks: `chunks.py`)."""
        return (
            not self.read_only
            and self.db.get_meta("metadata") == METADATA_VERSION
            and self.db.get_meta("stems") == STEMS_VERSION
            and self.db.get_meta("blocks") == BLOCKS_VERSION
        )

    def figures(self) -> StoreFigures:
        return read_figures(self.db, self.catalog, self.notes)

    def close(self) -> None:
        self.db.close()


def open_text_reader(directory: Path, *, root: Path) -> TextReader:
    """The text side alone, its database opened here and closed by `TextReader.close`.
    Opening it takes the writer's lock as a `Store` does: a one-shot process that finds it
    held elsewhere leaves the answer to the full path."""
    return TextReader(Database(directory, one_shot=True), root)


def saved_glob_memo(reader: TextReader) -> str | None:
    """The glob translations the last whole sync saved (`workspace/glob_memo.py`): a row
    of `meta`, read beside the text side rather than as a 26th method of it."""
    return reader.db.get_meta(GLOB_MEMO)
