"""The TypeScript protocol module of the extension mirrors `kb_lsp.protocol` exactly.

`vscode-extension/src/protocol.ts` keeps a simple format (one `export interface Name {`
per model, one `name: type;` / `name?: type;` per line) so this parser can stay small.
Checked: method, notification and command names; each interface's field names equal the
model's wire names (aliases); a field is optional (`?`) exactly when the model gives it a
default; and the extension's contributed `kb.*` setting defaults equal `config.Settings`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from kb_lsp import config, protocol

ROOT = Path(__file__).resolve().parents[2]
PROTOCOL_TS = ROOT / "vscode-extension" / "src" / "protocol.ts"
MANIFEST = ROOT / "vscode-extension" / "package.json"

MODELS: dict[str, type[BaseModel]] = {
    name: getattr(protocol, name)
    for name in (
        "SearchParams",
        "SearchHit",
        "SearchResponse",
        "OpenResultParams",
        "OpenResultResponse",
        "AskParams",
        "Source",
        "Step",
        "Usage",
        "AskResponse",
        "AskEvent",
        "SummarizeParams",
        "SummarizeResponse",
        "IndexStatus",
        "LlmStatus",
        "SkippedFile",
        "ReindexParams",
        "Range",
        "Position",
    )
}

INTERFACE = re.compile(r"^export interface (\w+) \{\n(.*?)^\}", re.M | re.S)
FIELD = re.compile(r"^\s+(['\w/]+)(\??):\s*(.+?);\s*$")
CONST = re.compile(r"^export const (\w+) = \{\n(.*?)^\} as const;", re.M | re.S)
ENTRY = re.compile(r"^\s+(\w+):\s*'([^']*)',\s*$")


def _ts() -> str:
    return PROTOCOL_TS.read_text(encoding="utf-8")


def _interfaces() -> dict[str, dict[str, bool]]:
    """interface name -> {field name: optional}"""
    out: dict[str, dict[str, bool]] = {}
    for match in INTERFACE.finditer(_ts()):
        fields: dict[str, bool] = {}
        for line in match.group(2).splitlines():
            field = FIELD.match(line)
            if field:
                fields[field.group(1).strip("'")] = field.group(2) == "?"
        out[match.group(1)] = fields
    return out


def _consts() -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for match in CONST.finditer(_ts()):
        entries = [ENTRY.match(line) for line in match.group(2).splitlines()]
        out[match.group(1)] = {e.group(1): e.group(2) for e in entries if e}
    return out


def _wire_fields(model: type[BaseModel]) -> dict[str, bool]:
    """wire name -> optional (has a default)"""
    return {
        (info.alias or name): not info.is_required() for name, info in model.model_fields.items()
    }


def test_method_names_match() -> None:
    assert sorted(_consts()["Methods"].values()) == sorted(protocol.REQUESTS)


def test_notification_names_match() -> None:
    assert sorted(_consts()["Notifications"].values()) == sorted(protocol.NOTIFICATIONS)


def test_command_names_match() -> None:
    assert sorted(_consts()["ServerCommands"].values()) == sorted(protocol.COMMANDS)


def test_every_model_has_an_interface() -> None:
    missing = sorted(set(MODELS) - set(_interfaces()))
    assert not missing, f"protocol.ts lacks interfaces for {missing}"


@pytest.mark.parametrize("name", sorted(MODELS))
def test_interface_fields_match_model(name: str) -> None:
    ts_fields = _interfaces()[name]
    py_fields = _wire_fields(MODELS[name])
    assert sorted(ts_fields) == sorted(py_fields), f"{name}: field names differ"
    for field, optional in py_fields.items():
        assert ts_fields[field] == optional, (
            f"{name}.{field}: the model {'has' if optional else 'has no'} default, so the "
            f"interface field should {'' if optional else 'not '}be optional"
        )


def _contributed_defaults() -> dict[str, Any]:
    manifest = json.loads(MANIFEST.read_text(encoding="utf-8"))
    props = manifest["contributes"]["configuration"]["properties"]
    return {key.removeprefix("kb."): spec.get("default") for key, spec in props.items()}


def _setting_default(dotted: str) -> Any:
    node: Any = config.Settings()
    for part in dotted.split("."):
        model = type(node)
        field = next(
            name for name, info in model.model_fields.items() if (info.alias or name) == part
        )
        node = getattr(node, field)
    return node


def test_contributed_setting_defaults_match_the_server() -> None:
    defaults = _contributed_defaults()
    # Client-only settings: how the server is started, not how it behaves.
    client_only = {"server.python"}
    for key, value in defaults.items():
        if key in client_only:
            continue
        expected = _setting_default(key)
        if key == "storage" and expected is None:
            assert value in (None, ""), "kb.storage: the default is the extension's storage"
            continue
        assert value == expected, f"kb.{key}: contributed {value!r}, server default {expected!r}"
