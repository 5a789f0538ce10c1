"""A params model's fields as a command line offers them (`cli/fields.py` builds the
options): read from the model's JSON schema, as MCP's tool arguments are, into plain data
the generator can store (`quick_defaults.PARAMS`), so a command that answers without
pydantic still parses its options from the model."""

from __future__ import annotations

from typing import Any

# One field: its kind ("bool", "int", "float", "str", "list" of words, "choice"), its
# default, whether it is required, its help, and its choices or bounds.
Spec = dict[str, Any]


def specs(model: Any) -> dict[str, Spec]:
    """Each field of the params model `model` a terminal can type, by its Python name."""
    schema = model.model_json_schema(by_alias=False)
    required = set(schema.get("required", ()))
    out: dict[str, Spec] = {}
    for name, prop in schema.get("properties", {}).items():
        spec = _spec(_without_null(prop))
        if spec is None:
            continue
        spec["default"] = prop.get("default")
        spec["required"] = name in required
        spec["help"] = prop.get("description")
        out[name] = spec
    return out


def _without_null(prop: dict[str, Any]) -> dict[str, Any]:
    """`X | None`'s X: leaving an option out is already its None."""
    kinds = [kind for kind in prop.get("anyOf", ()) if kind.get("type") != "null"]
    return kinds[0] if len(kinds) == 1 else prop


def _spec(prop: dict[str, Any]) -> Spec | None:
    if "enum" in prop:
        return {"kind": "choice", "choices": [str(choice) for choice in prop["enum"]]}
    kind = prop.get("type")
    if kind in ("integer", "number"):
        bounds = {"min": prop.get("minimum"), "max": prop.get("maximum")}
        return {"kind": "int" if kind == "integer" else "float", **bounds}
    if kind == "boolean":
        return {"kind": "bool"}
    if kind == "string":
        return {"kind": "str"}
    if kind == "array" and prop.get("items", {}).get("type") == "string":
        return {"kind": "list"}
    return None  # an object, a list of objects: not typed on a command line


__all__ = ["Spec", "specs"]
