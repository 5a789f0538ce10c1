"""The `kb/schema` answer: every metadata field seen, its types, how many files have it,
and its most frequent values (what completions and the agent's prompt offer)."""

from __future__ import annotations

from collections.abc import Sequence

from kb_lsp.engine.metadata.tables import FieldSummary
from kb_lsp.protocol import SchemaField, SchemaResponse, SchemaValue

TOP_VALUES = 10
# Built-in fields every file has, from the manifest rather than `file_fields`.
MANIFEST_FIELDS = (("modified", "date"), ("size", "number"), ("title", "string"))
# Values that are not worth listing: every file has a different one.
NO_TOP = frozenset(["words"])
KIND_ORDER = ("string", "list", "number", "date", "bool")


def build_schema(
    files: int, per_root: Sequence[list[FieldSummary]], top: int = TOP_VALUES
) -> SchemaResponse:
    """Merge the fields of every root; fields with the most files first, then by name."""
    merged: dict[str, tuple[dict[str, int], int, dict[str, int]]] = {}
    extracted: dict[str, int] = {}
    for summaries in per_root:
        for summary in summaries:
            extracted[summary.name] = extracted.get(summary.name, 0) + summary.extracted
            kinds, count, values = merged.setdefault(summary.name, ({}, 0, {}))
            for kind, n in summary.kinds.items():
                kinds[kind] = kinds.get(kind, 0) + n
            for value, n in summary.top:
                values[value] = values.get(value, 0) + n
            merged[summary.name] = (kinds, count + summary.files, values)
    fields = [
        SchemaField(
            name=name,
            types=sorted(kinds, key=lambda k: (KIND_ORDER.index(k) if k in KIND_ORDER else 9, k)),
            files=count,
            top=[]
            if name in NO_TOP
            else [
                SchemaValue(value=value, count=n)
                for value, n in sorted(values.items(), key=lambda item: (-item[1], item[0]))[:top]
            ],
            extracted=extracted.get(name, 0),
        )
        for name, (kinds, count, values) in merged.items()
    ]
    if files:
        fields += [
            SchemaField(name=name, types=[kind], files=files)
            for name, kind in MANIFEST_FIELDS
            if name not in merged
        ]
    fields.sort(key=lambda f: (-f.files, f.name))
    return SchemaResponse(files=files, fields=fields)
