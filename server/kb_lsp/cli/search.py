"""`kb search`: the numbered list, from the running server when one holds the index,
else from the index itself.
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kb_lsp.runtime.quick_defaults import METHODS

# What a command needs loads when it runs: `kb status` answers from SQLite without
# pydantic, the engine, Chroma or the model's HTTP client (`runtime/quick.py`).
if TYPE_CHECKING:
    pass
from kb_lsp.cli.common import (
    CLIENT,
    EXIT_NOT_READY,
    HOLDERS,
    READ_ONLY,
    CliError,
    _cli_settings,
    _from_server,
    _invalid,
    _runtime,
    _say,
    _sync,
    _workspace,
)
from kb_lsp.cli.output import print_result
from kb_lsp.terminal.text import out, visible


def cmd_search(args: argparse.Namespace) -> int:
    folder = _workspace(args.workspace)
    query = " ".join(args.query).strip()
    if not query and args.filter:
        # Only a filter: the files it keeps, most recently modified first (the query is
        # the filter itself, as typed inline; --filter keeps its meaning when it names a
        # field no file has yet).
        query = args.filter
    if not query:
        raise CliError('give a query, e.g. kb search "mexico payment files"')
    wanted = {
        "query": query,
        "limit": args.limit,
        "mode": args.mode,
        "paths": args.paths or None,
        "filter": args.filter,
    }
    fields: set[str] | None = None  # the indexed files' fields, when known here
    response = _from_server(args, folder, METHODS["search"], wanted)
    served = response is not None
    if response is None:
        response = _quick_search(args, folder, wanted)
    if response is None:
        response, fields = _search_here(args, folder, wanted)
    # While another process builds the index (read-only here, or the server that answered
    # is still at it): what it has so far, and say so — once.
    index = response["index"]
    building = (index["readOnly"] or served) and index["state"] == "indexing"
    if building:
        where = (
            "the running server is still indexing this workspace"
            if served
            else f"{HOLDERS} is building this folder's index"
        )
        _say(f"{where}{_so_far(index)}; results are partial until it is done")
    elif index["readOnly"]:
        _say(READ_ONLY)
    _hints(response)
    if args.filter and not response["results"]:
        _unknown_fields(args, folder, args.filter, fields)
    if args.json:
        print_result("search", response)
    else:
        from kb_lsp.listing import format_wire_hits

        out(format_wire_hits(response["results"], visible))
    return EXIT_NOT_READY if building and not response["results"] else 0


def _hints(response: Mapping[str, Any]) -> None:
    """What looks mistyped, one line each (a server from before these fields sends none)."""
    for warning in response.get("warnings") or []:
        _say(f"{warning['where']}, character {warning['position'] + 1}: {warning['message']}")
    suggestion = response.get("didYouMean")
    if suggestion:
        _say(f"did you mean {suggestion!r}? (kb search {shlex.quote(suggestion)})")


def _so_far(index: Mapping[str, Any]) -> str:
    """` (55/155 files · embedding)`: how far the sync is, from a wire `IndexStatus`."""
    progress = index.get("progress")
    if not progress:
        return ""
    from kb_lsp.terminal.progress import wire_progress_text

    return f" ({wire_progress_text(progress)})"


def _unknown_fields(
    args: argparse.Namespace, folder: Path, text: str, fields: set[str] | None
) -> None:
    """Nothing matched a filter that names a field no indexed file has: say which, as the
    filter's own error does for a likely typo (there it is an error; here a filter may name
    a field before any file has it, so it only explains the empty list)."""
    from kb_lsp.engine.metadata.filters import BUILTIN_FIELDS, FilterError, fields_of, parse_filter

    try:
        named = fields_of(parse_filter(text))
    except FilterError:
        return
    unknown = sorted(named - set(BUILTIN_FIELDS))
    if not unknown:
        return
    if fields is None:
        schema = _from_server(args, folder, METHODS["schema"], {})
        if schema is None:
            return
        fields = {field["name"] for field in schema["fields"]}
    known = {name.lower() for name in fields}
    for name in unknown:
        if name.lower() not in known:
            _say(f"no indexed file has the field {name!r} (kb schema lists the fields)")


def _quick_search(
    args: argparse.Namespace, folder: Path, wanted: dict[str, Any]
) -> dict[str, Any] | None:
    """A keyword search from the store alone when the index is current, without loading
    pydantic, numpy or the model (`runtime/quick_search.py`); None: the full path."""
    from kb_lsp.runtime.quick import quick_settings
    from kb_lsp.runtime.quick_search import quick_search

    settings = quick_settings(_cli_settings(args), strict=True)
    response = None if settings is None else quick_search(folder, settings, wanted, CLIENT)
    if response is not None and args.filter and not response["results"]:
        return None  # the full path says which field no file has (`_unknown_fields`)
    return response


def _search_here(
    args: argparse.Namespace, folder: Path, wanted: dict[str, Any]
) -> tuple[dict[str, Any], set[str]]:
    """`kb/search` in this process: the index brought up to date, then searched; with
    the fields the indexed files have."""
    from pydantic import ValidationError

    from kb_lsp.contract.operations import SCHEMA, SEARCH, Call
    from kb_lsp.protocol import SchemaParams, SearchParams, dump
    from kb_lsp.runtime.dispatch import answer

    try:
        params = SearchParams.model_validate(wanted)
    except ValidationError as err:
        raise CliError(_invalid(err)) from None
    with _runtime(args, folder) as runtime:
        _sync(runtime, quiet=True)
        response = dump(answer(runtime, SEARCH, params, Call(CLIENT)))
        fields: set[str] = set()
        if params.filter and not response["results"]:  # to say why, if a field is unknown
            fields = {f.name for f in answer(runtime, SCHEMA, SchemaParams()).fields}
        return response, fields
