"""The `kb/schema` answer: every metadata field seen, its types, how many files have it,
its most frequent values (what completions and the agent's prompt offer), and for a
field a model extracts, how many of its values each model had kept and rejected."""

from __future__ import annotations

from collections.abc import Sequence

from kb_lsp.engine.metadata.claims import StoredClaim
from kb_lsp.engine.metadata.hits import span_range
from kb_lsp.engine.metadata.tables import FieldSummary
from kb_lsp.protocol import (
    ExtractedClaim,
    FieldExtraction,
    NoteExtraction,
    SchemaField,
    SchemaResponse,
    SchemaValue,
)

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
    models: dict[str, dict[str, tuple[int, int]]] = {}
    for summaries in per_root:
        for summary in summaries:
            extracted[summary.name] = extracted.get(summary.name, 0) + summary.extracted
            counts = models.setdefault(summary.name, {})
            for model, (kept, rejected) in summary.models.items():
                before = counts.get(model, (0, 0))
                counts[model] = (before[0] + kept, before[1] + rejected)
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
            models=[
                FieldExtraction(model=model, kept=kept, rejected=rejected)
                for model, (kept, rejected) in sorted(models.get(name, {}).items())
            ],
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


def note_extractions(prefix: str, claims: Sequence[StoredClaim]) -> list[NoteExtraction]:
    """Every note's extracted values, kept and rejected (`kb schema --extracted`), in the
    store's order (by path); `prefix`: the root's, before each path."""
    out: list[NoteExtraction] = []
    for claim in claims:
        path = prefix + claim.path
        if not out or out[-1].path != path or out[-1].model != claim.model:
            out.append(NoteExtraction(path=path, model=claim.model, values=[]))
        out[-1].values.append(
            ExtractedClaim(
                field=claim.field,
                value=claim.value,
                kept=claim.kept,
                valid=claim.valid,
                reason=claim.reason or None,
                evidence=claim.evidence,
                range=span_range(claim.span) if claim.span else None,
            )
        )
    return out
