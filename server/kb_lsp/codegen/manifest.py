"""`config.py` → the extension manifest's `contributes.configuration` and
`capabilities.untrustedWorkspaces` (the rest of package.json is left as it is).

Each setting becomes one property of the category of its group, with its type (enums,
items), default, `markdownDescription`, bounds, scope and order. A setting that may be
unset (`str | None`) is a plain text box in the editor: the empty string means unset, and
the server reads it as `None`.
"""

from __future__ import annotations

import inspect
import json
import types
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types

from kb_lsp.config import GROUPS, SettingField, setting_fields

UNTRUSTED = (
    "In an untrusted workspace kb-lsp ignores the workspace's values of the settings that "
    "choose a program to run, a host to send your documents to or a folder to write to "
    "({names}); your user settings are used instead."
)


def _json_type(annotation: Any, key: str) -> dict[str, Any]:
    origin = get_origin(annotation)
    if origin is Annotated:
        return _json_type(get_args(annotation)[0], key)
    if origin in (Union, types.UnionType):
        args = [arg for arg in get_args(annotation) if arg is not type(None)]
        if args == [str]:  # may be unset: an empty text box
            return {"type": "string"}
        raise TypeError(f"kb.{key}: no editor type for {annotation!r}")
    if annotation is bool:
        return {"type": "boolean"}
    if annotation is int:
        return {"type": "integer"}
    if annotation is float:
        return {"type": "number"}
    if annotation is str:
        return {"type": "string"}
    if origin is Literal:
        return {"type": "string", "enum": [str(arg) for arg in get_args(annotation)]}
    if origin is list:
        (item,) = get_args(annotation)
        return {"type": "array", "items": _json_type(item, key)}
    if inspect.isclass(annotation):
        raise TypeError(f"kb.{key}: no editor type for {annotation.__name__}")
    raise TypeError(f"kb.{key}: no editor type for {annotation!r}")


def _bounds(setting: SettingField) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in setting.info.metadata:
        if isinstance(item, annotated_types.Ge):
            out["minimum"] = item.ge
        elif isinstance(item, annotated_types.Gt):
            out["exclusiveMinimum"] = item.gt
        elif isinstance(item, annotated_types.Le):
            out["maximum"] = item.le
        elif isinstance(item, annotated_types.Lt):
            out["exclusiveMaximum"] = item.lt
    return out


def _default(setting: SettingField) -> Any:
    value = setting.default
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return int(value)  # JSON has one number type; 120 reads better than 120.0
    return value


def setting_property(setting: SettingField) -> dict[str, Any]:
    meta = setting.meta
    if not setting.info.description:
        raise ValueError(f"kb.{setting.key} has no Field(description=…) in config.py")
    spec: dict[str, Any] = _json_type(setting.info.annotation, setting.key)
    spec["default"] = _default(setting)
    spec["markdownDescription"] = setting.info.description
    if meta.get("enumDescriptions"):
        spec["markdownEnumDescriptions"] = meta["enumDescriptions"]
    spec.update(_bounds(setting))
    spec["scope"] = meta["scope"]
    spec["order"] = meta["order"]
    return spec


def editor_settings() -> list[SettingField]:
    """The settings the editor shows, in their order; each must say where it goes."""
    settings = list(setting_fields())
    for setting in settings:
        meta = setting.meta
        if not isinstance(meta.get("order"), int) or meta.get("group") not in GROUPS:
            raise ValueError(
                f"kb.{setting.key} has no place in the editor: give it "
                "json_schema_extra=ui(order, group, …) in config.py"
            )
    orders = [s.meta["order"] for s in settings]
    duplicates = sorted({o for o in orders if orders.count(o) > 1})
    if duplicates:
        raise ValueError(f"two settings share the order {duplicates} in config.py")
    return sorted(settings, key=lambda s: int(s.meta["order"]))


def restricted_settings() -> list[str]:
    return ["kb." + s.key for s in editor_settings() if s.meta.get("restricted")]


def configuration() -> list[dict[str, Any]]:
    settings = editor_settings()
    categories: list[dict[str, Any]] = []
    for order, (group, title) in enumerate(GROUPS.items(), start=1):
        properties = {
            "kb." + s.key: setting_property(s) for s in settings if s.meta["group"] == group
        }
        if properties:
            categories.append({"title": title, "order": order, "properties": properties})
    return categories


def untrusted_workspaces() -> dict[str, Any]:
    restricted = restricted_settings()
    return {
        "supported": "limited",
        "description": UNTRUSTED.format(names=", ".join(restricted)),
        "restrictedConfigurations": restricted,
    }


def package_json(current: str) -> str:
    """The manifest `current` with its generated parts replaced."""
    manifest = json.loads(current)
    manifest.setdefault("contributes", {})["configuration"] = configuration()
    if "capabilities" not in manifest:  # placed before `contributes`, where readers look
        placed: dict[str, Any] = {}
        for key, value in manifest.items():
            if key == "contributes":
                placed["capabilities"] = {}
            placed[key] = value
        manifest = placed
    manifest["capabilities"]["untrustedWorkspaces"] = untrusted_workspaces()
    return json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
