"""The key metadata shown beside a hit (`SearchHit.meta`): tags, status, modified, and
the values a model extracted, each with the span of the note it was read from."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from kb_lsp.engine.metadata.claims import Kept, Span
    from kb_lsp.protocol import ExtractedValue, HitMeta, Range


class _Modified(Protocol):
    @property
    def mtime_ns(self) -> int: ...


class _Applied(Protocol):
    @property
    def model(self) -> str: ...
    @property
    def fields(self) -> dict[str, list[Kept]]: ...


class MetaSource(Protocol):
    """What `hit_meta` reads of a store's reader (four queries for any number of paths)."""

    def field_values(
        self, paths: Sequence[str], fields: Sequence[str]
    ) -> dict[str, dict[str, list[str]]]: ...

    def records(self, paths: Iterable[str]) -> Mapping[str, _Modified]: ...

    def extractions_applied(self, paths: list[str]) -> Mapping[str, _Applied]: ...


MAX_TAGS_SHOWN = 12


def local_date(mtime_ns: int) -> str:
    """The day of a modification time, in local time: what `modified:` filters compare."""
    return datetime.fromtimestamp(mtime_ns / 1e9).date().isoformat()


def wire_models(models: Any = None) -> Any:
    """The classes a hit is built of: `protocol`'s own, or what a caller gives in their
    place — duck-typed, with the same names and fields (a one-shot keyword search builds
    its hits without pydantic: `runtime/quick_models.py`)."""
    if models is None:
        from kb_lsp import protocol

        return protocol
    return models


def hit_meta(reader: MetaSource, paths: Sequence[str], models: Any = None) -> dict[str, HitMeta]:
    """path -> its `HitMeta`, for the given paths of one store (`models`: `wire_models`)."""
    models = wire_models(models)
    values = reader.field_values(paths, ["tag", "status"])
    try:
        records = reader.records(paths)
        extracted = reader.extractions_applied(list(paths))
    except RuntimeError:  # the store closed under us: its folder was just removed
        return {}
    out: dict[str, HitMeta] = {}
    for path in paths:
        record = records.get(path)
        fields = values.get(path, {})
        status = fields.get("status")
        out[path] = models.HitMeta(
            tags=fields.get("tag", [])[:MAX_TAGS_SHOWN],
            status=status[0] if status else None,
            modified=local_date(record.mtime_ns) if record is not None else None,
        )
        applied = extracted.get(path)
        if applied is not None and applied.fields:
            out[path].extracted = {
                name: [extracted_value(k, models) for k in kept]
                for name, kept in applied.fields.items()
            }
            out[path].extracted_by = applied.model
    return out


def span_range(span: Span, models: Any = None) -> Range:
    models = wire_models(models)
    return models.Range(  # type: ignore[no-any-return]
        start=models.Position(line=span.line, character=span.character),
        end=models.Position(line=span.end_line, character=span.end_character),
    )


def extracted_value(kept: Kept, models: Any = None) -> ExtractedValue:
    models = wire_models(models)
    span = kept.span
    return models.ExtractedValue(  # type: ignore[no-any-return]
        value=kept.value.text,
        evidence=span.evidence,
        range=span_range(span, models),
        start=span.start,
        end=span.end,
    )
