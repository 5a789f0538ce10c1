"""The key metadata shown beside a hit (`SearchHit.meta`): tags, status, modified."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from kb_lsp.protocol import HitMeta

if TYPE_CHECKING:
    from kb_lsp.store import Store

MAX_TAGS_SHOWN = 12


def local_date(mtime_ns: int) -> str:
    """The day of a modification time, in local time: what `modified:` filters compare."""
    return datetime.fromtimestamp(mtime_ns / 1e9).date().isoformat()


def hit_meta(store: Store, paths: Sequence[str]) -> dict[str, HitMeta]:
    """path -> its `HitMeta`, for the given paths of one store."""
    values = store.field_values(paths, ["tag", "status"])
    out: dict[str, HitMeta] = {}
    for path in paths:
        try:
            record = store.file(path)
        except RuntimeError:  # the store closed under us: its folder was just removed
            return out
        fields = values.get(path, {})
        status = fields.get("status")
        out[path] = HitMeta(
            tags=fields.get("tag", [])[:MAX_TAGS_SHOWN],
            status=status[0] if status else None,
            modified=local_date(record.mtime_ns) if record is not None else None,
        )
    return out
