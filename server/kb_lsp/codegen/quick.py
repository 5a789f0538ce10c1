"""`config.py` and `protocol.py` → `runtime/quick_defaults.py`: what `kb status` needs to
know of them without loading pydantic (`runtime/quick.py`).

* `SETTINGS`: every setting's default, by Python name, nested by section;
* `NAMES`: each setting's wire key (`ollama.numCtx`) → its Python path;
* `ENV`: each variable → the wire key it sets: other programs' ones (`FOREIGN_ENV`)
  first, as they weigh less, then each `KB_*` one;
* `CHOICES`: the allowed values of a setting that is one of a few words;
* `WIRE`: for the status and search payloads, each field's wire name in order, with its
  default (`REQUIRED` when it has none); `PYTHON`: the same fields' Python names;
* `MAX_LIMIT`, `MAX_QUERY_CHARS`: the most results a search lists, the longest query;
* `METHODS`: the request names a command sends a running server (`local_socket.py`);
* `COMMANDS`: each `kb` command whose `--json` prints an operation's result → its method;
* `ERROR_CODES`: the JSON-RPC error codes the server answers with;
* `PARAMS`: each such command's options from its params model (`contract/cli_fields.py`).
"""

from __future__ import annotations

import json
import typing
from typing import Any

from pydantic import BaseModel

from kb_lsp import protocol
from kb_lsp.config import FOREIGN_ENV, Settings, _Section, _section_model, _wire_name
from kb_lsp.contract import cli_fields
from kb_lsp.contract.operations import OPERATIONS
from kb_lsp.errors import ERROR_CODES

PATH = "server/kb_lsp/runtime/quick_defaults.py"
MODELS: list[type[BaseModel]] = [
    protocol.IndexStatus,
    protocol.LlmStatus,
    protocol.SkippedFile,
    protocol.FileProblem,
    protocol.MetadataStatus,
    # A one-shot keyword search (`quick_models.py`).
    protocol.SearchResponse,
    protocol.SearchHit,
    protocol.HitMeta,
    protocol.ExtractedValue,
    protocol.Range,
    protocol.Position,
    # A one-shot `kb schema`.
    protocol.SchemaResponse,
    protocol.SchemaField,
    protocol.SchemaValue,
    protocol.FieldExtraction,
]
REQUIRED = "<required>"

HEADER = '''# ruff: noqa: E501 -- a field's description is one JSON string, as long as it is
"""Generated from config.py and protocol.py by `python -m kb_lsp.codegen`: do not edit.

What `kb status` needs of the settings and the status payloads without loading pydantic
(`quick.py`; the generator, `codegen/quick.py`, says what each table holds).
"""

import json
from typing import Any

_DATA: dict[str, Any] = json.loads(
    r"""
'''

FOOTER = '''"""
)
SETTINGS: dict[str, Any] = _DATA["settings"]
NAMES: dict[str, list[str]] = _DATA["names"]
ENV: dict[str, str] = _DATA["env"]
CHOICES: dict[str, list[str]] = _DATA["choices"]
WIRE: dict[str, list[list[Any]]] = _DATA["wire"]
PYTHON: dict[str, list[str]] = _DATA["python"]
REQUIRED: str = _DATA["required"]
MAX_LIMIT: int = _DATA["maxLimit"]
MAX_QUERY_CHARS: int = _DATA["maxQueryChars"]
METHODS: dict[str, str] = _DATA["methods"]
COMMANDS: dict[str, str] = _DATA["commands"]
ERROR_CODES: dict[str, int] = _DATA["errorCodes"]
PARAMS: dict[str, dict[str, dict[str, Any]]] = _DATA["params"]
'''


def _walk(
    model: type[_Section], wire: tuple[str, ...], python: tuple[str, ...], out: dict[str, Any]
) -> None:
    for name, info in model.model_fields.items():
        section = _section_model(info)
        wire_path, python_path = (*wire, _wire_name(name, info)), (*python, name)
        if section is not None:
            _walk(section, wire_path, python_path, out)
            continue
        key = ".".join(wire_path)
        out["names"][key] = list(python_path)
        extra = info.json_schema_extra
        if isinstance(extra, dict) and isinstance(extra.get("env"), str):
            out["env"][extra["env"]] = key
        if typing.get_origin(info.annotation) is typing.Literal:
            out["choices"][key] = list(typing.get_args(info.annotation))


def _wire(model: type[BaseModel]) -> list[list[Any]]:
    fields = []
    for name, info in model.model_fields.items():
        if info.is_required():
            default: Any = REQUIRED
        else:
            value = info.get_default(call_default_factory=True)
            default = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
        fields.append([info.alias or name, default])
    return fields


def data() -> dict[str, Any]:
    out: dict[str, Any] = {
        "settings": Settings().model_dump(mode="json"),
        "names": {},
        "env": dict(FOREIGN_ENV),
        "choices": {},
    }
    _walk(Settings, (), (), out)
    out["wire"] = {model.__name__: _wire(model) for model in MODELS}
    out["python"] = {model.__name__: list(model.model_fields) for model in MODELS}
    out["required"] = REQUIRED
    out["maxLimit"] = protocol.MAX_LIMIT
    out["maxQueryChars"] = protocol.MAX_QUERY_CHARS
    # The operations the command line may ask a running server (`local`), by short name.
    out["methods"] = {op.method.removeprefix("kb/"): op.method for op in OPERATIONS if op.local}
    out["commands"] = {op.cli: op.method for op in OPERATIONS if op.cli is not None}
    out["errorCodes"] = ERROR_CODES
    out["params"] = {op.cli: cli_fields.specs(op.params) for op in OPERATIONS if op.cli is not None}
    return out


def quick_defaults_py() -> str:
    return HEADER + json.dumps(data(), indent=1, ensure_ascii=False) + "\n" + FOOTER
