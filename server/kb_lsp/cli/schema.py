"""`kb schema`: the metadata fields a filter can use."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kb_lsp.runtime.quick_defaults import METHODS

# What a command needs loads when it runs: `kb status` answers from SQLite without
# pydantic, the engine, Chroma or the model's HTTP client (`runtime/quick.py`).
if TYPE_CHECKING:
    pass
from kb_lsp.cli.common import (
    READ_ONLY,
    _from_server,
    _runtime,
    _say,
    _settings,
    _sync,
    _workspace,
)
from kb_lsp.cli.output import print_result
from kb_lsp.listing import quote_words
from kb_lsp.terminal.text import out, visible


def format_schema(schema: Mapping[str, Any]) -> str:
    """One line a field: name, types, how many files have it, its frequent values (a
    wire `SchemaResponse`)."""
    fields = schema["fields"]
    if not fields:
        return f"No metadata fields in the {schema['files']} indexed files."
    width = max(len(field["name"]) for field in fields)
    lines = [f"{schema['files']} files; metadata fields (filter with e.g. tag:x, has:owner):"]
    for field in fields:
        values = ", ".join(
            f"{_filter_value(item['value'])} ({item['count']})" for item in field["top"]
        )
        count = field["files"]
        files = f"{count} file{'s' * (count != 1)}"
        if field.get("extracted"):
            files += f" ({field['extracted']} extracted by the model)"
        types = "|".join(field["types"]) or "-"
        line = f"  {visible(field['name']):<{width}}  {types}, {files}"
        lines.append(f"{line}: {values}" if values else line)
        for model in field.get("models", []):
            lines.append(
                f"  {'':<{width}}  {visible(model['model'])}: {model['kept']} kept, "
                f"{model['rejected']} rejected (kb schema --extracted says why)"
            )
    return "\n".join(lines)


def format_extracted(notes: list[Mapping[str, Any]]) -> str:
    """Every note's extracted values: kept, with the line and the note's words it was
    read from, or rejected, with the reason (a wire `SchemaResponse.notes`)."""
    if not notes:
        return "No note has extracted values (a schema in .kb/schema.json, then kb index)."
    lines = []
    for note in notes:
        lines.append(f"{visible(note['path'])} ({visible(note['model'])})")
        for claim in note["values"]:
            said = visible(f"{claim['field']}: {claim['value']}")
            if claim["kept"]:
                line = claim["range"]["start"]["line"] + 1
                words = visible(quote_words(claim["evidence"]))
                lines.append(f"  kept      {said} — from line {line}: {words}")
            else:
                lines.append(f"  rejected  {said} — {visible(claim['reason'])}")
    return "\n".join(lines)


def _filter_value(value: str) -> str:
    """A value as a filter takes it: quoted when it is empty or holds a space."""
    return json.dumps(value, ensure_ascii=False) if not value or " " in value else visible(value)


def cmd_schema(args: argparse.Namespace) -> int:
    folder = _workspace(args.workspace)
    if args.discover:
        return _discover(args, folder)
    params = {"extracted": True} if args.extracted else {}
    schema = _from_server(args, folder, METHODS["schema"], params)
    if schema is None:
        from kb_lsp.protocol import dump

        with _runtime(args, folder) as runtime:
            if _sync(runtime, quiet=True) is None:
                _say(READ_ONLY)
            schema = dump(runtime.schema(extracted=args.extracted))
    if args.json:
        print_result("schema", schema)
    elif args.extracted:
        out(format_extracted(schema.get("notes") or []))
    else:
        out(format_schema(schema))
    return 0


def _discover(args: argparse.Namespace, folder: Path) -> int:
    """A proposed `.kb/schema.json` on stdout: the front matter's fields, then the
    model's suggestions from a sample of notes (marked `x-suggested`)."""
    from kb_lsp.engine.llm import LlmError, create_llm
    from kb_lsp.engine.metadata.discover import proposal, suggested_fields, written_fields
    from kb_lsp.engine.metadata.user_schema import SCHEMA_FILE

    with _runtime(args, folder) as runtime:
        if _sync(runtime, quiet=True) is None:
            _say(READ_ONLY)
        written = written_fields(runtime.schema())
        files = runtime.files()
        step = max(1, len(files) // max(1, args.sample))
        samples = [(info.title, runtime.file_text(info.path)[1]) for info in files[::step]]
        suggested: dict[str, dict[str, Any]] = {}
        if args.sample and samples:
            model = create_llm(_settings(args))
            try:
                suggested = suggested_fields(model, samples[: args.sample])
            except LlmError as err:
                _say(f"no suggestions from the model: {err}")
    out(proposal(written, suggested))
    _say(
        f"{len(written)} fields from front matter, {len(suggested)} suggested by the model; "
        f"edit and save as {folder / SCHEMA_FILE}, then run kb index"
    )
    return 0
