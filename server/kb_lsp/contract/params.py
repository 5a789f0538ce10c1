"""The one params parser of every front end that reads a kb/* request from outside: the
LSP handlers, the local socket and the MCP tools. What a caller sent either becomes the
row's params model or an `InvalidInput` naming each field that is wrong, worded the same
on every surface; each front end then translates the kind, as for any other error."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from kb_lsp.errors import InvalidInput

M = TypeVar("M", bound=BaseModel)


def describe(err: ValidationError) -> str:
    """`query: String should have at most 2000 characters (got 5000); limit: …`: a
    params model's errors, each naming its field."""
    parts = []
    for error in err.errors():
        where = ".".join(str(part) for part in error["loc"]) or "params"
        message = error["msg"]
        given = error.get("input")
        if isinstance(given, str) and len(given) > 40:
            message += f" (got {len(given)} characters)"
        elif isinstance(given, (int, float)) and not isinstance(given, bool):
            message += f" (got {given})"
        parts.append(f"{where}: {message}")
    return "; ".join(parts)


def parse_params(model: type[M], raw: Any, method: str) -> M:
    """`raw` (a JSON object, or nothing: the defaults) as `model`; `InvalidInput`
    prefixed with `method` for anything else."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise InvalidInput(f"{method}: params must be an object, got {type(raw).__name__}")
    try:
        return model.model_validate(raw)
    except ValidationError as err:
        raise InvalidInput(f"{method}: {describe(err)}") from err


__all__ = ["describe", "parse_params"]
