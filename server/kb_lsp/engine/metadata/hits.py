"""The key metadata shown beside a hit (`SearchHit.meta`): tags, status, modified, and
the values a model extracted, each with the span of the note it was read from."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Protocol

from kb_lsp.engine.metadata.claims import Kept, Span
from kb_lsp.protocol import ExtractedValue, HitMeta, Position, Range


class _Modified(Protocol):
    @property
    def mtime_ns(self) -> int: ...


class _Fields(Protocol):
    def field_values(
        self, paths: Sequence[str], fields: Sequence[str]
    ) -> dict[str, dict[str, list[str]]]: ...


class _Records(Protocol):
    def records(self, paths: Iterable[str]) -> Mapping[str, _Modified]: ...


class _Applied(Protocol):
    @property
    def model(self) -> str: ...
    @property
    def fields(self) -> dict[str, list[Kept]]: ...


class _Extractions(Protocol):
    def applied(self, paths: list[str]) -> Mapping[str, _Applied]: ...


class MetaSource(Protocol):
    """What `hit_meta` reads of a store (four queries for any number of paths)."""

    @property
    def notes(self) -> _Fields: ...

    @property
    def extractions(self) -> _Extractions: ...

    @property
    def catalog(self) -> _Records: ...


MAX_TAGS_SHOWN = 12


def local_date(mtime_ns: int) -> str:
    """The day of a modification time, in local time: what `modified:` filters compare."""
    return datetime.fromtimestamp(mtime_ns / 1e9).date().isoformat()


def hit_meta(store: MetaSource, paths: Sequence[str]) -> dict[str, HitMeta]:
    """path -> its `HitMeta`, for the given paths of one store."""
    values = store.notes.field_values(paths, ["tag", "status"])
    try:
        records = store.catalog.records(paths)
        extracted = store.extractions.applied(list(paths))
    except RuntimeError:  # the store closed under us: its folder was just removed
        return {}
    out: dict[str, HitMeta] = {}
    for path in paths:
        record = records.get(path)
        fields = values.get(path, {})
        status = fields.get("status")
        out[path] = HitMeta(
            tags=fields.get("tag", [])[:MAX_TAGS_SHOWN],
            status=status[0] if status else None,
            modified=local_date(record.mtime_ns) if record is not None else None,
        )
        applied = extracted.get(path)
        if applied is not None and applied.fields:
            out[path].extracted = {
                name: [extracted_value(k) for k in kept] for name, kept in applied.fields.items()
            }
            out[path].extracted_by = applied.model
    return out


def span_range(span: Span) -> Range:
    return Range(
        start=Position(line=span.line, character=span.character),
        end=Position(line=span.end_line, character=span.end_character),
    )


def extracted_value(kept: Kept) -> ExtractedValue:
    span = kept.span
    return ExtractedValue(
        value=kept.value.text,
        evidence=span.evidence,
        range=span_range(span),
        start=span.start,
        end=span.end,
    )
