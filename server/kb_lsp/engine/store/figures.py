"""The figures of one store that the status shows: files, chunks, vectors, skipped files
and metadata problems."""

from __future__ import annotations

from dataclasses import dataclass

from kb_lsp.engine.metadata import tables as metadata_tables
from kb_lsp.engine.store.catalog import Catalog
from kb_lsp.engine.store.db import Database
from kb_lsp.engine.store.notes import Notes


@dataclass(frozen=True)
class StoreFigures:
    files: int
    chunks: int
    complete_chunks: int  # of files whose vectors are all in (`Catalog.vector_coverage`)
    written_chunks: int
    skipped: tuple[tuple[str, str], ...]
    problems: tuple[metadata_tables.StoredProblem, ...]


def read_figures(db: Database, catalog: Catalog, notes: Notes) -> StoreFigures:
    """Every search answer carries the status, and on 7,425 files reading it costs 2 ms:
    read again only when something was committed since (`Database.current`)."""

    def read() -> StoreFigures:
        files, chunks = catalog.counts()
        complete, written = catalog.vector_coverage()
        skipped, problems = tuple(catalog.skipped()), tuple(notes.problems())
        return StoreFigures(files, chunks, complete, written, skipped, problems)

    return db.current("figures", read)
