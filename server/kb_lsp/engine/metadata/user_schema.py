"""The user's metadata schema: which fields a model fills in from each note's text.

The file is `.kb/schema.json` in a workspace folder, or the one `kb.metadata.schemaFile`
names. It is a JSON Schema object, kept to what every structured-output runtime (Ollama,
llama.cpp, vLLM) can turn into a grammar:

```json
{"type": "object", "properties": {
  "counterparty": {"type": "string", "description": "the company on the other side"},
  "amount": {"type": "number", "description": "the payment's amount"},
  "systems": {"type": "array", "items": {"type": "string"}, "description": "..."},
  "incident_date": {"type": "string", "format": "date", "description": "..."},
  "severity": {"type": "string", "enum": ["low", "high"], "description": "...",
               "x-synonyms": {"high": ["critical", "sev1"]}}}}
```

`x-synonyms` (ours; JSON Schema lets a schema carry keys of its own) lists, per enum
option, words that say it in a note: an enum value is kept only when the note's words
it was read from hold the option or one of these (`verify.py`). `x-units` on a number
lists the units it is written with (`["EUR", "USD", "$"]`): a number is then kept only
when the note writes one of them beside it ("48,000 EUR", "$310,000"), so "47 minutes"
is not an amount.

A file outside that subset is refused with a message naming the property and what to
write instead (`SchemaError`); the server keeps serving without extraction meanwhile.
The schema's hash (of its canonical JSON) is part of every cached extraction's key, so
editing it re-extracts every note, and only then.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from kb_lsp.engine.metadata.filters import BUILTIN_FIELDS
from kb_lsp.engine.workspace.files import UnreadableFile, read_confined
from kb_lsp.errors import InvalidInput
from kb_lsp.json_bounds import JsonRefused, load_json

SCHEMA_FILE = ".kb/schema.json"
# An enum's answer for a note that fits none of its options: offered beside them, so a
# note that is none of them has an answer other than the first option.
NONE_OF_THESE = "none of these"
MAX_SCHEMA_BYTES = 256 * 1024
MAX_SCHEMA_DEPTH = 16  # a schema of this subset nests 4 deep
MAX_FIELDS = 64
MAX_ENUM = 200
MAX_SYNONYMS = 32
# What a model is asked and how its answer is checked (`extractor.py`, `verify.py`):
# part of the schema's hash, so an extraction made under other rules is made again.
EXTRACTION_FORMAT = "evidence-1"
# The longest evidence a model may give for one value: a few words or a sentence, not
# a passage (a long quote would let any value its note holds through), and what a
# model caught repeating itself writes before the grammar stops it.
MAX_EVIDENCE = 200
MAX_VALUE = 100  # a text value's length (`reply.py` refuses longer ones)
# A field's name is what the filter language reads (`counterparty:"Acme"`).
_NAME = re.compile(r"[a-z_][a-z0-9_.\-]{0,63}")
# Front-matter keys the indexer keeps for itself (`extract.py`'s SHADOWED, tag keys).
_RESERVED = frozenset([*BUILTIN_FIELDS, "tags", "keywords", "description", "aliases"])

FieldKind = Literal["string", "list", "number", "date", "enum"]


class SchemaError(InvalidInput):
    """The schema file cannot be used; the message names the file, the property and
    what to write instead."""


@dataclass(frozen=True)
class FieldSpec:
    name: str
    kind: FieldKind
    description: str = ""
    options: tuple[str, ...] = ()  # an enum's values, as written
    # (option, words that say it in a note), from the property's `x-synonyms`
    synonyms: tuple[tuple[str, tuple[str, ...]], ...] = ()
    units: tuple[str, ...] = ()  # a number's `x-units`: one must stand beside it

    def words_for(self, option: str) -> tuple[str, ...]:
        """The option and its synonyms: what a note's words must hold to say it."""
        return (option, *next((words for name, words in self.synonyms if name == option), ()))


@dataclass(frozen=True)
class UserSchema:
    fields: tuple[FieldSpec, ...]
    source: str  # where it was read from, for messages
    digest: str  # sha256 of the canonical JSON: part of each cached extraction's key

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(spec.name for spec in self.fields)

    def field(self, name: str) -> FieldSpec | None:
        return next((spec for spec in self.fields if spec.name == name), None)

    def json_schema(
        self, options: Callable[[FieldSpec], Sequence[str]] | None = None
    ) -> dict[str, Any]:
        """What the model is constrained by: every field present, `null` when the note
        does not say (a small model given optional fields tends to answer `{}`), else
        the note's words it comes from, then the value. `options`: an enum's options in
        the order to show them (default: as written)."""
        properties = {
            spec.name: _property(spec, options(spec) if options else spec.options)
            for spec in self.fields
        }
        return {
            "type": "object",
            "properties": properties,
            "required": list(properties),
            "additionalProperties": False,
        }


def _property(spec: FieldSpec, options: Sequence[str]) -> dict[str, Any]:
    value: dict[str, Any]
    # Lengths bound what a model caught in a loop can write (temperature 0 repeats).
    if spec.kind == "list":
        value = {"type": "array", "items": {"type": "string", "maxLength": MAX_VALUE}}
    elif spec.kind == "number":
        value = {"type": "number"}
    elif spec.kind == "date":
        value = {"type": "string", "format": "date"}
    elif spec.kind == "enum":
        value = {"enum": [*options, NONE_OF_THESE]}
    else:
        value = {"type": "string", "maxLength": MAX_VALUE}
    # Evidence first: the model copies the note's words, then reads the value from them.
    answer = {
        "type": "object",
        "properties": {"evidence": {"type": "string", "maxLength": MAX_EVIDENCE}, "value": value},
        "required": ["evidence", "value"],
        "additionalProperties": False,
    }
    out: dict[str, Any] = {"anyOf": [{"type": "null"}, answer]}
    if spec.description:
        out["description"] = spec.description
    return out


def parse_schema(text: str | bytes, source: str) -> UserSchema:
    """The schema in `text` (the contents of `source`); raises `SchemaError`."""
    try:
        raw = load_json(text, source, max_bytes=MAX_SCHEMA_BYTES, depth=MAX_SCHEMA_DEPTH)
    except JsonRefused as err:
        raise SchemaError(str(err)) from None
    if not isinstance(raw, dict):
        raise SchemaError(
            f'{source}: a schema is a JSON object, {{"type": "object", "properties": {{…}}}}; '
            f"this file holds a {_json_type(raw)}"
        )
    if raw.get("type", "object") != "object":
        raise SchemaError(f'{source}: "type" must be "object" (a note\'s fields)')
    properties = raw.get("properties")
    if not isinstance(properties, dict) or not properties:
        raise SchemaError(
            f'{source}: "properties" must be an object with at least one field, e.g. '
            '{"owner": {"type": "string", "description": "who owns it"}}'
        )
    if len(properties) > MAX_FIELDS:
        raise SchemaError(f"{source}: {len(properties)} fields; at most {MAX_FIELDS}")
    fields = tuple(check_field(source, str(name), spec) for name, spec in properties.items())
    canonical = json.dumps(
        [
            EXTRACTION_FORMAT,
            *(
                [f.name, f.kind, f.description, list(f.options), f.synonyms, f.units]
                for f in fields
            ),
        ],
        ensure_ascii=False,
    )
    return UserSchema(fields, source, hashlib.sha256(canonical.encode()).hexdigest()[:16])


def check_field(source: str, name: str, spec: Any) -> FieldSpec:
    where = f"{source}: property {name!r}"
    if not _NAME.fullmatch(name):
        raise SchemaError(
            f"{where}: a field name is lower-case letters, digits, `_`, `.` or `-`, "
            "starting with a letter or `_`, at most 64 characters (filters type it)"
        )
    if name in _RESERVED:
        raise SchemaError(f"{where}: {name!r} is a built-in field; choose another name")
    if not isinstance(spec, dict):
        raise SchemaError(f'{where}: must be an object such as {{"type": "string"}}')
    description = spec.get("description", "")
    if not isinstance(description, str):
        raise SchemaError(f'{where}: "description" must be a string (one line)')
    description = " ".join(description.split())[:300]
    if "enum" in spec:
        options = _options(where, spec["enum"])
        synonyms = _synonyms(where, options, spec.get("x-synonyms", {}))
        return FieldSpec(name, "enum", description, options, synonyms)
    kind = spec.get("type")
    if kind == "string":
        fmt = spec.get("format")
        if fmt not in (None, "date"):
            raise SchemaError(f'{where}: "format" {fmt!r} is not supported; only "date"')
        return FieldSpec(name, "date" if fmt == "date" else "string", description)
    if kind in ("number", "integer"):
        return FieldSpec(name, "number", description, units=_units(where, spec.get("x-units", [])))
    if kind == "array":
        items = spec.get("items")
        if not isinstance(items, dict) or items.get("type") != "string":
            raise SchemaError(f'{where}: an array holds strings: "items": {{"type": "string"}}')
        return FieldSpec(name, "list", description)
    raise SchemaError(
        f'{where}: "type" {kind!r} is not supported; use "string", "number", "integer", '
        '"array" (of strings), a string with "format": "date", or an "enum"'
    )


def _options(where: str, values: Any) -> tuple[str, ...]:
    words = _strings(values, MAX_ENUM)
    if not words:
        raise SchemaError(f'{where}: "enum" must be a list of 1 to {MAX_ENUM} non-empty strings')
    return words


def _strings(raw: Any, most: int) -> tuple[str, ...] | None:
    """A schema's list of words, each with its whitespace folded, duplicates dropped;
    None when `raw` is not a list of at most `most` non-empty strings."""
    if (
        not isinstance(raw, list)
        or len(raw) > most
        or not all(isinstance(w, str) and w.strip() for w in raw)
    ):
        return None
    return tuple(dict.fromkeys(" ".join(w.split()) for w in raw))


def _synonyms(
    where: str, options: tuple[str, ...], raw: Any
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    example = '"x-synonyms": {"postmortem": ["incident review", "outage"]}'
    if not isinstance(raw, dict):
        raise SchemaError(f'{where}: "x-synonyms" maps an option to its words, e.g. {example}')
    out = []
    for option, words in raw.items():
        if option not in options:
            raise SchemaError(
                f'{where}: "x-synonyms" names {option!r}, which is not one of the enum\'s '
                f"options ({', '.join(options)})"
            )
        folded = _strings(words, MAX_SYNONYMS)
        if folded is None:
            raise SchemaError(
                f'{where}: "x-synonyms" of {option!r} must be a list of at most '
                f"{MAX_SYNONYMS} non-empty strings, e.g. {example}"
            )
        out.append((option, folded))
    return tuple(out)


def _units(where: str, raw: Any) -> tuple[str, ...]:
    units = _strings(raw, MAX_SYNONYMS)
    if units is None:
        raise SchemaError(
            f'{where}: "x-units" must be a list of at most {MAX_SYNONYMS} non-empty strings, '
            'e.g. "x-units": ["EUR", "USD", "$"]'
        )
    return units


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "list"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "string"


def schema_path(root: Path, setting: str | None) -> Path | None:
    """The schema file of a workspace folder: `kb.metadata.schemaFile` (relative to the
    folder, or absolute), else `.kb/schema.json` when it exists."""
    if setting:
        path = Path(setting).expanduser()
        return path if path.is_absolute() else root / path
    default = root / SCHEMA_FILE
    return default if default.is_file() else None


def load_schema(root: Path, setting: str | None) -> UserSchema | None:
    """The folder's schema, None when it has none; raises `SchemaError` for a file that
    is missing (when a setting names it), unreadable, too big or malformed. The file is
    read as a note is (`files.read_confined`: one descriptor, a regular file, never a
    named pipe): one in the workspace (`.kb/schema.json`, or a relative setting) only
    inside it, so a link to a file elsewhere is not followed; one the setting names by
    an absolute path where it is."""
    path = schema_path(root, setting)
    if path is None:
        return None
    inside = not (setting and Path(setting).expanduser().is_absolute())
    within = Path(os.path.realpath(root if inside else path.parent))
    if inside and not _inside(os.path.normpath(path), os.path.normpath(root)):
        raise SchemaError(f"{path}: outside the workspace folder (kb.metadata.schemaFile)")
    if not os.path.lexists(path):
        raise SchemaError(f"{path}: no such file (named by kb.metadata.schemaFile)")
    try:
        data = read_confined(path, within, MAX_SCHEMA_BYTES)
    except UnreadableFile as err:
        raise SchemaError(f"{path}: cannot be read: {err.reason}") from None
    return parse_schema(data, str(path))


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)
