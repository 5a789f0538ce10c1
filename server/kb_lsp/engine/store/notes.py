"""The metadata of one store's notes (`metadata/`): filters, fields, cards and problems,
read with `Database.read` (nothing to read yet, or a store closed under a search, gives
the empty answer)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from kb_lsp.engine.metadata import cards as note_cards
from kb_lsp.engine.metadata import tables as metadata_tables
from kb_lsp.engine.store.db import Database

if TYPE_CHECKING:
    from kb_lsp.engine.metadata.filters import Node as FilterNode


class Notes:
    def __init__(self, db: Database) -> None:
        self._db = db

    def check_version(self) -> None:
        """Files indexed by an older metadata extraction are read again by the next sync:
        `pending` with an unknown hash (their vectors come from the cache)."""
        if self._db.get_meta("metadata") == metadata_tables.METADATA_VERSION:
            return
        with self._db.writer() as db:
            metadata_tables.recreate(db)
            db.execute("UPDATE files SET state = 'pending', sha256 = ''")
            self._db.set_meta(db, "metadata", metadata_tables.METADATA_VERSION)

    def filter_paths(self, node: FilterNode, prefix: str = "") -> set[str]:
        """The paths of the files a metadata filter keeps (`metadata/query.py`)."""
        # Loaded with the first filter: a search without one never parses the language.
        from kb_lsp.engine.metadata.query import matching_paths

        return self._db.read(lambda db: matching_paths(db, node, prefix), set())

    def field_values(
        self, paths: Sequence[str], fields: Sequence[str]
    ) -> dict[str, dict[str, list[str]]]:
        return self._db.read(lambda db: metadata_tables.values_of(db, paths, fields), {})

    def field_names(self) -> set[str]:
        return self._db.read(metadata_tables.field_names, set())

    def values_containing(
        self, field: str, fragment: str, limit: int = 20
    ) -> list[tuple[str, int]]:
        """Values of `field` holding `fragment`, the most common first (`owner:priya` ->
        "Priya Raman")."""
        return self._db.read(
            lambda db: metadata_tables.values_containing(db, field, fragment, limit), []
        )

    def field_summaries(self, top: int) -> list[metadata_tables.FieldSummary]:
        return self._db.read(lambda db: metadata_tables.summarise(db, top), [])

    def problems(self) -> list[metadata_tables.StoredProblem]:
        return self._db.read(metadata_tables.problems, [])

    def refresh_anchors(self) -> int:
        """Re-resolve every link and update incoming anchor texts (`metadata/anchors.py`)."""
        from kb_lsp.engine.metadata import anchors as note_anchors  # a writer's; see below

        with self._db.writer() as db:
            return note_anchors.refresh_all(db)

    def refresh_due_anchors(self) -> int:
        """Re-resolve only the links the files written or removed since the last refresh
        can re-target, and update those anchor texts (`metadata/anchors.py`)."""
        # The link resolver loads with the first refresh: a reader never needs it.
        from kb_lsp.engine.metadata import anchors as note_anchors

        if not self._db.read(note_anchors.any_due, False):
            return 0  # no write transaction for a sync that changed nothing
        with self._db.writer() as db:
            return note_anchors.refresh_due(db)

    def cards(self, paths: Iterable[str]) -> dict[str, note_cards.Card]:
        wanted = list(paths)
        return self._db.read(lambda db: note_cards.cards_of(db, wanted), {})

    def matching(self, match: str, k: int, allowed: list[str] | None) -> list[str]:
        """Notes whose aliases, description or incoming anchor texts match `match`."""
        if not match:
            return []
        return self._db.read(lambda db: note_cards.matching_notes(db, match, k, allowed), [])

    def missing_card_vectors(self) -> list[tuple[str, str]]:
        """(hash, text) of the note cards whose vector is not cached yet."""
        return self._db.read(note_cards.missing_vectors, [])
