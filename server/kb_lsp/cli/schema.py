"""`kb schema`: the metadata fields a filter can use."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kb_lsp.runtime.quick_defaults import METHODS

# What a command needs loads when it runs: `kb status` answers from SQLite without
# pydantic, the engine, Chroma or the model's HTTP client (`runtime/quick.py`).
if TYPE_CHECKING:
    pass
from kb_lsp.cli.common import READ_ONLY, _from_server, _runtime, _say, _sync, _workspace
from kb_lsp.cli.output import print_result


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
        line = f"  {field['name']:<{width}}  {'|'.join(field['types'])}, {files}"
        lines.append(f"{line}: {values}" if values else line)
    return "\n".join(lines)


def _filter_value(value: str) -> str:
    """A value as a filter takes it: quoted when it is empty or holds a space."""
    return json.dumps(value, ensure_ascii=False) if not value or " " in value else value


def cmd_schema(args: argparse.Namespace) -> int:
    folder = _workspace(args.workspace)
    schema = _from_server(args, folder, METHODS["schema"], {})
    if schema is None:
        from kb_lsp.protocol import dump

        with _runtime(args, folder) as runtime:
            if _sync(runtime, quiet=True) is None:
                _say(READ_ONLY)
            schema = dump(runtime.schema())
    if args.json:
        print_result("schema", schema)
    else:
        print(format_schema(schema))
    return 0
