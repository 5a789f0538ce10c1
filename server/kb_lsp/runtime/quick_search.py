"""A one-shot keyword search (`kb search --mode keyword`) answered from the store's
SQLite alone, when the index is current: no runtime, no sync, no pydantic, numpy, model
or Chroma — the interpreter, SQLite, the query parser and the formatter.

It is the same search as the full path's, not a second one: the engine's query parser,
`Searcher` and hit builder (`search/query.py`, `searcher.py`, `hits.py`) over the store's
text side (`store/reader.py`), the hits built of `quick_models.py` in place of the wire
models, the status from `quick.quick_status`, the list kept where `numbered.py` keeps it.

It answers only when the full path would do nothing more before searching: the settings
it reads come from `quick.quick_settings` with no value it has no rule for, the store is
this user's and free to write, nothing waits for an upgrade, and a scan of the workspace
finds every file indexed as it is (`index/fresh.py`). Otherwise — and for anything the
full path would refuse (a malformed filter, a limit out of range) — `quick_search`
returns None and the command takes the full path, which says what is wrong.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from kb_lsp.runtime import quick_defaults as generated
from kb_lsp.runtime import quick_models

if TYPE_CHECKING:
    from kb_lsp.config import Settings


class _KeywordOnly:
    """The embedder of a search that never embeds (keyword mode): asked, it says so."""

    def embed_query(self, text: str) -> Any:
        raise RuntimeError("a keyword search embeds nothing")


def _lean(wanted: Mapping[str, Any]) -> bool:
    """Whether the params are ones the lean path answers: keyword mode, no path globs,
    within the bounds the params model sets (else the full path refuses them)."""
    query, text = wanted["query"], wanted.get("filter") or ""
    return (
        wanted["mode"] == "keyword"
        and not wanted.get("paths")
        and 1 <= wanted["limit"] <= generated.MAX_LIMIT
        and 0 < len(query) <= generated.MAX_QUERY_CHARS
        and len(text) <= generated.MAX_QUERY_CHARS
    )


def quick_search(
    folder: Path, settings: Settings, wanted: Mapping[str, Any], client: str
) -> dict[str, Any] | None:
    """`kb/search` for `wanted` (the params, by wire name) as the wire has it, the list
    kept as `client`'s; None: take the full path (see the module's docstring)."""
    if not _lean(wanted):
        return None
    from kb_lsp.engine.storage import DATABASE, default_storage, store_dir_for

    store = store_dir_for(default_storage(settings), folder)
    if not (store / DATABASE).is_file():
        return None
    from kb_lsp.engine.private import refusal

    if refusal(store) is not None:
        return None  # not this user's: opening the store says so
    found = _search(store, folder.resolve(), settings, wanted)
    if found is None:
        return None
    hits, suggestion = found
    # After the store is closed: the status reads whether another process holds it.
    from kb_lsp.runtime.quick import quick_status, wire

    index = quick_status(folder, settings)
    if index is None:
        return None
    results = [hit.wire() for hit in hits]
    from kb_lsp.runtime.list_file import list_file, save_list

    save_list(list_file(store, client), wanted["query"], results)
    values = {"query": wanted["query"], "results": results, "index": index}
    return wire("SearchResponse", values | {"didYouMean": suggestion})


def _search(
    store: Path, root: Path, settings: Settings, wanted: Mapping[str, Any]
) -> tuple[list[quick_models.SearchHit], str | None] | None:
    from kb_lsp.engine.index.fresh import current
    from kb_lsp.engine.search.candidates import SearchSource
    from kb_lsp.engine.search.query import parse_query, ranked
    from kb_lsp.engine.search.searcher import Searcher
    from kb_lsp.engine.search.spelling import did_you_mean
    from kb_lsp.engine.store.reader import TextReader
    from kb_lsp.engine.workspace.files import WorkspaceRoot
    from kb_lsp.errors import InvalidInput

    reader = TextReader(store, root=root)
    try:
        if not reader.current() or not current(WorkspaceRoot(root, settings), reader.catalog):
            return None
        # The text side stands for the store: a keyword search reads nothing else of it.
        source = SearchSource(cast("Any", reader), str(root), "")
        searcher = Searcher(cast("Any", _KeywordOnly()), models=quick_models)
        query, filter = wanted["query"], wanted.get("filter")
        try:
            parsed = parse_query(query, filter, reader.notes.field_names)
            hits = ranked(
                searcher,
                [source],
                parsed,
                limit=wanted["limit"],
                threshold=settings.search.threshold,
                paths=None,
                mode="keyword",
            )
        except InvalidInput:
            return None  # the full path says what is wrong, in its words
        suggestion = did_you_mean(query, parsed.text, [reader.fts])
        return cast("list[quick_models.SearchHit]", hits), suggestion
    finally:
        reader.close()
