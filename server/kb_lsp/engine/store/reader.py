"""The text side of one root's store, opened to read: the parts a keyword search reads
(the manifest, the chunks, FTS5, the notes' metadata and extracted values) without the
vector index, its cache or the team index — so without numpy, Chroma or the settings'
models. A one-shot keyword search answers from it when the index is current
(`runtime/quick_search.py`); anything else opens the whole `Store`.
"""

from __future__ import annotations

from pathlib import Path

from kb_lsp.engine.metadata.tables import METADATA_VERSION
from kb_lsp.engine.store.catalog import Catalog
from kb_lsp.engine.store.chunks import Chunks
from kb_lsp.engine.store.db import Database
from kb_lsp.engine.store.extractions import Extractions
from kb_lsp.engine.store.figures import StoreFigures, read_figures
from kb_lsp.engine.store.fts import Fts
from kb_lsp.engine.store.notes import Notes
from kb_lsp.engine.terms import STEMS_VERSION


class TextReader:
    """What `Store` offers search of its text side, under the same names (a search
    source takes either). Opening it takes the writer's lock as a `Store` does: a
    one-shot process that finds it held elsewhere leaves the answer to the full path."""

    def __init__(self, directory: Path, *, root: Path) -> None:
        self.directory = directory
        self.root = root
        self.db = Database(directory)
        self.read_only = self.db.read_only
        self.catalog = Catalog(self.db)
        self.chunks = Chunks(self.db, root)
        self.fts = Fts(self.db, self.chunks, self.catalog.file_count)
        self.notes = Notes(self.db)
        self.extractions = Extractions(self.db)

    def current(self) -> bool:
        """Whether this process writes the store and nothing in it waits for an upgrade
        that opening a `Store` and syncing would make (metadata tables, stems)."""
        return (
            not self.read_only
            and self.db.get_meta("metadata") == METADATA_VERSION
            and self.db.get_meta("stems") == STEMS_VERSION
        )

    def figures(self) -> StoreFigures:
        return read_figures(self.db, self.catalog, self.notes)

    def close(self) -> None:
        self.db.close()
