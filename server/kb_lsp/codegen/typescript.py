"""`protocol.py` → the extension's `src/protocol.ts` and the contract test's `shapes.ts`.

protocol.ts holds the names (methods, notifications, server commands), the numeric
constants, the literal types, one interface per model (wire names; a field is optional
exactly when the model gives it a default) and the request/notification type maps.
shapes.ts holds, per model, its wire field names (tied to the interface at compile time)
and which fields hold other models, so the contract test can check the server's payloads
all the way down.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Iterator
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from kb_lsp import protocol
from kb_lsp.contract.operations import NOTIFICATIONS, OPERATIONS
from kb_lsp.errors import ERROR_CODES

WIDTH = 100  # lines longer than this are wrapped, as the hand-written code is
SOURCE = "server/kb_lsp/protocol.py"


def _models() -> list[type[BaseModel]]:
    """The public models of protocol.py, in the order they are defined."""
    return [
        value
        for name, value in vars(protocol).items()
        if inspect.isclass(value)
        and issubclass(value, BaseModel)
        and value.__module__ == protocol.__name__
        and not name.startswith("_")
    ]


def _literal_aliases() -> dict[str, Any]:
    """`SearchMode = Literal[…]` and friends, in the order they are defined."""
    return {
        name: value
        for name, value in vars(protocol).items()
        if get_origin(value) is Literal and not name.startswith("_")
    }


def _int_constants() -> dict[str, int]:
    return {
        name: value
        for name, value in vars(protocol).items()
        if name.isupper() and isinstance(value, int) and not isinstance(value, bool)
    }


def _rule(title: str) -> str:
    """A section comment as the hand-written TypeScript has them."""
    return f"// --- {title} ".ljust(WIDTH - 8, "-")


def _key(method: str) -> str:
    """`kb/openResult` → `openResult`."""
    return method.split("/", 1)[-1]


def _quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _doc(text: str | None, indent: str = "") -> list[str]:
    if not text:
        return []
    lines = inspect.cleandoc(text).splitlines()
    if len(lines) == 1 and len(indent) + len(lines[0]) + 7 <= WIDTH:
        return [f"{indent}/** {lines[0]} */"]
    return [f"{indent}/**", *(f"{indent} * {line}".rstrip() for line in lines), f"{indent} */"]


class _Types:
    """Python annotations → TypeScript type expressions."""

    def __init__(self) -> None:
        self.aliases = _literal_aliases()

    def literal(self, annotation: Any) -> str:
        for name, alias in self.aliases.items():
            if alias == annotation:
                return name
        return " | ".join(_quote(str(arg)) for arg in get_args(annotation))

    def of(self, annotation: Any) -> str:
        origin = get_origin(annotation)
        if origin is Annotated:  # constraints and validators: the type is the first part
            return self.of(get_args(annotation)[0])
        if annotation is type(None) or annotation is None:
            return "null"
        if annotation is Any:
            return "unknown"
        if annotation is bool:
            return "boolean"
        if annotation in (int, float):
            return "number"
        if annotation is str:
            return "string"
        if origin is Literal:
            return self.literal(annotation)
        if origin in (Union, types.UnionType):
            return " | ".join(self.of(arg) for arg in get_args(annotation))
        if origin is list:
            (item,) = get_args(annotation)
            text = self.of(item)
            return f"({text})[]" if " | " in text else f"{text}[]"
        if origin is dict:
            _, value = get_args(annotation)
            return f"Record<string, {self.of(value)}>"
        if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
            return annotation.__name__
        raise TypeError(f"no TypeScript type for {annotation!r}: extend kb_lsp.codegen.typescript")


def _wire_fields(model: type[BaseModel]) -> Iterator[tuple[str, FieldInfo]]:
    for name, info in model.model_fields.items():
        yield info.alias or name, info


def _const_object(name: str, entries: dict[str, str | int], doc: str | None = None) -> list[str]:
    lines = _doc(doc)
    lines.append(f"export const {name} = {{")
    for key, value in entries.items():
        shown = _quote(value) if isinstance(value, str) else str(value)
        lines.append(f"  {key}: {shown},")
    lines.append("} as const;")
    return lines


def _union_type(name: str, members: list[str]) -> list[str]:
    one_line = f"export type {name} = {' | '.join(members)};"
    if len(one_line) <= WIDTH:
        return [one_line]
    return [
        f"export type {name} =",
        *(f"  | {member}" for member in members[:-1]),
        f"  | {members[-1]};",
    ]


def protocol_ts() -> str:
    ts = _Types()
    out: list[str] = [
        "/**",
        " * The wire contract of DESIGN.md on the TypeScript side: method, notification and",
        " * command names, and the payload shapes as they travel (camelCase wire names).",
        " *",
        f" * GENERATED from {SOURCE} by `python -m kb_lsp.codegen`: do not edit. Change",
        " * protocol.py and run the generator; tests/unit/test_protocol_sync.py fails when this",
        " * file is stale.",
        " *",
        " * Nothing here imports `vscode`: the contract test and the webview use it too.",
        " */",
        "",
        _rule("method, notification and command names"),
        "",
    ]
    out += _const_object("Methods", {_key(op.method): op.method for op in OPERATIONS})
    out.append("")
    out += _const_object("Notifications", {_key(n.method): n.method for n in NOTIFICATIONS})
    out.append("")
    out += _const_object(
        "ServerCommands",
        {_key(op.method): op.command for op in OPERATIONS},
        "`workspace/executeCommand` names the server accepts: `kb.search` for `kb/search`, …",
    )
    out += [
        "",
        "export type MethodName = (typeof Methods)[keyof typeof Methods];",
        "export type NotificationName = (typeof Notifications)[keyof typeof Notifications];",
        "",
    ]
    for name, value in _int_constants().items():
        out.append(f"export const {name} = {value};")
    out.append("")
    out += _const_object("ErrorCodes", dict(ERROR_CODES), "JSON-RPC error codes the server uses.")
    out.append("")
    for name, alias in ts.aliases.items():
        out += _union_type(name, [_quote(str(arg)) for arg in get_args(alias)])
    out += [
        "",
        _rule("payloads"),
    ]
    for model in _models():
        out.append("")
        out += _doc(model.__dict__.get("__doc__"))
        fields = list(_wire_fields(model))
        if not fields:
            out.append(f"export type {model.__name__} = Record<string, never>;")
            continue
        out.append(f"export interface {model.__name__} {{")
        for wire, info in fields:
            out += _doc(info.description, "  ")
            optional = "" if info.is_required() else "?"
            out.append(f"  {wire}{optional}: {ts.of(info.annotation)};")
        out.append("}")
    out += [
        "",
        _rule("requests and notifications"),
        "",
        "/** Each request's params and result, so a typed `request()` helper can check both. */",
        "export interface RequestTypes {",
    ]
    for op in OPERATIONS:
        out.append(f"  {_quote(op.method)}: [{op.params.__name__}, {op.result.__name__}];")
    out += ["}", "", "export interface NotificationTypes {"]
    for note in NOTIFICATIONS:
        out.append(f"  {_quote(note.method)}: {note.payload.__name__};")
    out.append("}")
    return "\n".join(out) + "\n"


def _nested(model: type[BaseModel]) -> dict[str, str]:
    """Fields of `model` that hold another model (or a list of them) → that model's name."""
    out: dict[str, str] = {}
    for wire, info in _wire_fields(model):
        found = _model_in(info.annotation)
        if found is not None:
            out[wire] = found.__name__
    return out


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _key_object(names: list[str]) -> str:
    return "{ " + ", ".join(f"{name}: true" for name in names) + " }"


def shapes_ts() -> str:
    out: list[str] = [
        "/**",
        " * Each payload's wire field names, tied to protocol.ts at compile time: `keys<T>()({…})`",
        " * only type-checks when the object names exactly T's fields. `Nested` says which fields",
        " * hold another payload, so `assertShape` (./assertShape.ts) checks all the way down.",
        " *",
        f" * GENERATED from {SOURCE} by `python -m kb_lsp.codegen`: do not edit.",
        " */",
        "import type * as P from '../../src/protocol';",
        "",
        "type Exact<T, K> = { [F in keyof T]-?: true } & "
        "{ [F in Exclude<keyof K, keyof T>]: never };",
        "",
        "function keys<T>() {",
        "  return <K extends Exact<T, K>>(k: K): string[] => Object.keys(k);",
        "}",
        "",
        "export const Shapes = {",
    ]
    models = [m for m in _models() if m.model_fields]
    for model in models:
        names = [wire for wire, _ in _wire_fields(model)]
        head = f"  {model.__name__}: keys<P.{model.__name__}>()("
        one_line = f"{head}{_key_object(names)}),"
        if len(one_line) <= WIDTH:
            out.append(one_line)
        else:
            out.append(head + "{")
            out += [f"    {name}: true," for name in names]
            out.append("  }),")
    out += [
        "};",
        "",
        "export type ShapeName = keyof typeof Shapes;",
        "",
        "/** Fields that hold another payload (or a list of them), by payload. */",
        "export const Nested: Partial<Record<ShapeName, Record<string, ShapeName>>> = {",
    ]
    for model in models:
        nested = _nested(model)
        if nested:
            inner = ", ".join(f"{wire}: {_quote(name)}" for wire, name in nested.items())
            out.append(f"  {model.__name__}: {{ {inner} }},")
    out.append("};")
    return "\n".join(out) + "\n"
