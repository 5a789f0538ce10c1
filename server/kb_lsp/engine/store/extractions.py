"""Metadata a model extracted, in one store: the cache and each file's applied values.

* `extractions(content_hash, schema_hash, model, result)`: every extraction a model
  made, by what it was made from, so an unchanged note is never asked about again —
  not after a restart, a rename or a rebuild of the metadata tables (this table is
  the store's own, not the metadata's, and survives `METADATA_VERSION` bumps).
* a file's extracted values are `file_fields` rows whose `source` is the model's
  identity, beside the rows of its front matter, and `file_extraction` says which
  extraction they came from. Only the values checked against the note (`verify.py`)
  are such rows; `extracted_values` holds them with their spans and, beside them, the
  guesses rejected, with the reasons. Phase 1 replaces a file's rows (its text
  changed), which drops all three: the third phase then applies the cached or a new
  extraction again.

Front matter wins: a field the author wrote gets no extracted value.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from kb_lsp.engine.store.db import Database

if TYPE_CHECKING:
    from kb_lsp.engine.metadata.claims import Extraction, Kept, Rejected, Span, StoredClaim


@dataclass(frozen=True)
class ExtractionKey:
    """What an extraction depends on."""

    schema_hash: str
    model: str


@dataclass(frozen=True)
class Applied:
    """The extraction behind one file's extracted values: each kept value with its span."""

    model: str
    fields: dict[str, list[Kept]]
    dropped: tuple[str, ...]


class Extractions:
    def __init__(self, db: Database) -> None:
        self._db = db

    def cached(self, content_hash: str, key: ExtractionKey) -> Extraction | None:
        rows: list[tuple[str]] = self._db.read(
            lambda db: db.execute(
                "SELECT result FROM extractions WHERE content_hash = ? AND schema_hash = ? "
                "AND model = ?",
                (content_hash, key.schema_hash, key.model),
            ).fetchall(),
            [],
        )
        if not rows:
            return None
        from kb_lsp.engine.metadata.claims import Extraction

        return Extraction.from_json(str(rows[0][0]))

    def todo(self, key: ExtractionKey) -> list[tuple[str, str]]:
        """(path, content hash) of the files whose extracted values are not from `key`
        and their current text, in path order."""
        return self._db.read(
            lambda db: [
                (str(path), str(sha))
                for path, sha in db.execute(
                    "SELECT f.path, f.sha256 FROM files f LEFT JOIN file_extraction e "
                    "ON e.path = f.path WHERE f.sha256 != '' AND (e.path IS NULL "
                    "OR e.content_hash != f.sha256 OR e.schema_hash != ? OR e.model != ?) "
                    "ORDER BY f.path",
                    (key.schema_hash, key.model),
                )
            ],
            [],
        )

    def done(self, key: ExtractionKey) -> int:
        """Files whose extracted values are current for `key`."""
        return self._db.read(
            lambda db: int(
                db.execute(
                    "SELECT count(*) FROM files f JOIN file_extraction e ON e.path = f.path "
                    "WHERE e.content_hash = f.sha256 AND e.schema_hash = ? AND e.model = ?",
                    (key.schema_hash, key.model),
                ).fetchone()[0]
            ),
            0,
        )

    def apply(
        self, path: str, content_hash: str, key: ExtractionKey, extraction: Extraction
    ) -> bool:
        """Cache `extraction` and make it `path`'s extracted values, in one transaction;
        False (nothing applied, the cache kept) when the file changed meanwhile."""
        with self._db.writer() as db:
            db.execute(
                "INSERT OR REPLACE INTO extractions(content_hash, schema_hash, model, result, "
                "created) VALUES (?, ?, ?, ?, ?)",
                (content_hash, key.schema_hash, key.model, extraction.as_json(), time.time()),
            )
            current = db.execute("SELECT sha256 FROM files WHERE path = ?", (path,)).fetchone()
            if current is None or current[0] != content_hash:
                return False
            _replace_rows(db, path, content_hash, key, extraction)
        return True

    def applied(self, paths: list[str]) -> dict[str, Applied]:
        """path -> the extraction behind its extracted values, for the given paths."""

        def read(db: sqlite3.Connection) -> dict[str, Applied]:
            out: dict[str, Applied] = {}
            for start in range(0, len(paths), 400):
                part = paths[start : start + 400]
                marks = ",".join("?" * len(part))
                for path, model, dropped in db.execute(
                    f"SELECT path, model, dropped FROM file_extraction WHERE path IN ({marks})",
                    part,
                ):
                    out[str(path)] = Applied(str(model), {}, tuple(json.loads(dropped)))
                for path, field, kind, value, number, span in db.execute(
                    "SELECT v.path, v.field, f.kind, v.value, f.number, v.span "
                    "FROM extracted_values v JOIN file_fields f ON f.path = v.path "
                    "AND f.field = v.field AND f.value = v.value AND f.source = v.model "
                    f"WHERE v.kept = 1 AND v.path IN ({marks}) ORDER BY v.rowid",
                    part,
                ):
                    if str(path) in out:
                        # Loaded for the first value: a one-shot keyword search reads
                        # this for its hits, most stores have no extracted values.
                        from kb_lsp.engine.metadata.claims import Kept, Span
                        from kb_lsp.engine.metadata.values import Value

                        kept = Kept(Value(str(kind), str(value), number), Span(**json.loads(span)))
                        out[str(path)].fields.setdefault(str(field), []).append(kept)
            return out

        return self._db.read(read, {}) if paths else {}

    def claims(self) -> list[StoredClaim]:
        """Every value a model gave for a file of this store, kept or rejected, by path
        and field."""
        rows: list[tuple[Any, ...]] = self._db.read(
            lambda db: db.execute(
                "SELECT path, model, field, value, kept, valid, reason, evidence, span "
                "FROM extracted_values ORDER BY path, rowid"
            ).fetchall(),
            [],
        )
        from kb_lsp.engine.metadata.claims import Span, StoredClaim

        return [
            StoredClaim(
                str(path),
                str(model),
                str(field),
                str(value),
                bool(kept),
                bool(valid),
                str(reason),
                str(evidence),
                Span(**json.loads(span)) if span else None,
            )
            for path, model, field, value, kept, valid, reason, evidence, span in rows
        ]

    def forget_unused(self) -> None:
        """Drop cached extractions of text no file has any more."""
        with self._db.writer() as db:
            db.execute(
                "DELETE FROM extractions WHERE content_hash NOT IN (SELECT sha256 FROM files)"
            )


def _replace_rows(
    db: sqlite3.Connection, path: str, content_hash: str, key: ExtractionKey, found: Extraction
) -> None:
    db.execute("DELETE FROM file_fields WHERE path = ? AND source != ''", (path,))
    db.execute("DELETE FROM extracted_values WHERE path = ?", (path,))
    written = {
        str(row[0])
        for row in db.execute("SELECT DISTINCT field FROM file_fields WHERE path = ?", (path,))
    }
    kept = [
        (name, item)
        for name, items in found.kept.items()
        if name not in written  # front matter wins
        for item in items
    ]
    db.executemany(
        "INSERT INTO file_fields(path, field, kind, value, key, number, source) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (
                path,
                name,
                k.value.kind,
                k.value.text,
                k.value.text.lower(),
                k.value.number,
                key.model,
            )
            for name, k in kept
        ],
    )
    db.executemany(
        "INSERT INTO extracted_values(path, field, value, model, kept, valid, reason, evidence, "
        "span) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (path, name, k.value.text, key.model, 1, 1, "", k.span.evidence, _span(k.span))
            for name, k in kept
        ]
        + [_rejected_row(path, key.model, r) for r in found.rejected],
    )
    db.execute(
        "INSERT OR REPLACE INTO file_extraction(path, content_hash, schema_hash, model, dropped) "
        "VALUES (?, ?, ?, ?, ?)",
        (path, content_hash, key.schema_hash, key.model, json.dumps(list(found.dropped))),
    )


def _span(span: Span) -> str:
    return json.dumps(asdict(span), ensure_ascii=False)


def _rejected_row(path: str, model: str, rejected: Rejected) -> tuple[object, ...]:
    return (
        path,
        rejected.field,
        rejected.value,
        model,
        0,
        int(rejected.valid),
        rejected.reason,
        rejected.evidence,
        None,
    )
