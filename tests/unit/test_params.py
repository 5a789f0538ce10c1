"""Params are strict where JSON types matter: a boolean is not a number (nor a number a
boolean), numbers are bounded, and globs are checked when they arrive."""

from __future__ import annotations

from typing import Annotated, Any, get_args, get_origin

import pytest
from pydantic import BaseModel, Strict, ValidationError
from pygls.exceptions import JsonRpcInvalidParams

from kb_lsp import protocol
from kb_lsp.contract.operations import OPERATIONS
from kb_lsp.contract.params import parse_params
from kb_lsp.errors import InvalidInput
from kb_lsp.lsp.errors import rpc_error


def params_models() -> list[type[BaseModel]]:
    """Every model a request's params are read into: the contract's operations'."""
    return sorted({op.params for op in OPERATIONS}, key=lambda model: model.__name__)


def loose(annotation: Any, metadata: list[Any]) -> bool:
    """True when `annotation` admits an int or a bool that pydantic would coerce."""
    if annotation in (int, bool):
        return not any(isinstance(item, Strict) and item.strict for item in metadata)
    if get_origin(annotation) is Annotated:
        base, *extra = get_args(annotation)
        return loose(base, [*metadata, *extra])
    return any(loose(arg, []) for arg in get_args(annotation))


@pytest.mark.parametrize("model", params_models(), ids=lambda m: m.__name__)
def test_every_number_and_flag_in_params_is_strict(model: type[BaseModel]) -> None:
    for name, field in model.model_fields.items():
        assert not loose(field.annotation, list(field.metadata)), f"{model.__name__}.{name}"


@pytest.mark.parametrize(
    ("model", "raw", "where"),
    [
        (protocol.SearchParams, {"query": "x", "limit": True}, "limit"),
        (protocol.SearchParams, {"query": "x", "limit": "3"}, "limit"),
        (protocol.SearchParams, {"query": "x", "limit": 2.0}, "limit"),
        (protocol.SearchParams, {"query": "x", "paths": ["!"]}, "paths.0"),
        (protocol.SearchParams, {"query": "x", "paths": ["\\"]}, "paths.0"),
        (protocol.SearchParams, {"query": "x", "paths": ["*"] * 65}, "paths"),
        (protocol.OpenResultParams, {"n": True}, "n"),
        (protocol.OpenResultParams, {"n": 10**18}, "n"),
        (protocol.AskParams, {"question": "why", "n": 10**18}, "n"),
        (protocol.AskParams, {"question": "why", "n": True}, "n"),
        (protocol.AskParams, {"question": "why", "file": "x" * 5000}, "file"),
        (protocol.SummarizeParams, {"n": False}, "n"),
        (protocol.ReindexParams, {"full": 1}, "full"),
        (protocol.ReindexParams, {"full": "true"}, "full"),
        (protocol.RelatedParams, {"path": "a.md", "excludeLinked": 0}, "excludeLinked"),
    ],
)
def test_bad_values_are_invalid_params_naming_the_field(
    model: type[BaseModel], raw: dict[str, Any], where: str
) -> None:
    with pytest.raises(ValidationError):
        model.model_validate(raw)
    # One parser for the LSP, the socket and MCP: the contract's kind, then each front
    # end's translation of it (the LSP's shown here).
    with pytest.raises(InvalidInput) as caught:
        parse_params(model, raw, "kb/test")
    assert str(caught.value).startswith("kb/test: ") and f"{where}:" in str(caught.value)
    answered = rpc_error(caught.value)
    assert isinstance(answered, JsonRpcInvalidParams) and answered.message == str(caught.value)


def test_good_values_still_pass() -> None:
    search = protocol.SearchParams.model_validate(
        {"query": " x ", "limit": 100, "paths": ["docs/**", "!drafts/"]}
    )
    assert (search.query, search.limit, search.paths) == ("x", 100, ["docs/**", "!drafts/"])
    assert protocol.OpenResultParams.model_validate({"n": 100}).n == 100
    assert protocol.ReindexParams.model_validate({"full": True}).full is True
    assert protocol.AskParams.model_validate({"question": "q", "n": 3}).n == 3
