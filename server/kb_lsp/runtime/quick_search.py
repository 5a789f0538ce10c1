"""A one-shot keyword search (`kb search --mode keyword`) and `kb schema` answered from
the store's SQLite alone, when the index is current: no runtime, no sync, no pydantic,
numpy, model or Chroma — the interpreter, SQLite, the query parser and the formatter.

It is the same search as the full path's, not a second one: the engine's query parser,
`Searcher` and hit builder (`search/query.py`, `searcher.py`, `hits.py`) over the store's
text side (`store/reader.py`), the hits built of `quick_models.py` in place of the wire
models, the status from `quick.quick_status`, the list kept where `numbered.py` keeps it;
the schema is `metadata/schema.py`'s, built of the same stand-ins.

It answers only when the full path would do nothing more before searching: the settings
it reads come from `quick.quick_settings` with no value it has no rule for, the store is
this user's and free to write, nothing waits for an upgrade, and a scan of the workspace
finds every file indexed as it is (`index/fresh.py`). Otherwise — and for anything the
full path would refuse (a malformed filter, a limit out of range) — `quick_search`
returns None and the command takes the full path, which says what is wrong.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from kb_lsp.runtime import quick_defaults as generated
from kb_lsp.runtime import quick_models

if TYPE_CHECKING:
    from kb_lsp.config import Settings
    from kb_lsp.engine.store.reader import TextReader


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
    store = _store(folder, settings)
    if store is None:
        return None
    with _current(store, folder, settings) as reader:
        found = None if reader is None else _search(reader, settings, wanted)
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


def quick_schema(folder: Path, settings: Settings) -> dict[str, Any] | None:
    """`kb/schema` (without the extracted values) as the wire has it; None: the full path."""
    store = _store(folder, settings)
    if store is None:
        return None
    from kb_lsp.engine.metadata.schema import TOP_VALUES, build_schema

    with _current(store, folder, settings) as reader:
        if reader is None:
            return None
        files = reader.figures().files
        # As `KnowledgeBase.schema` reads one root.
        summaries = [reader.field_summaries(TOP_VALUES * 4)]
        schema = build_schema(files, summaries, TOP_VALUES, wire=quick_models)
    return cast("quick_models.SchemaResponse", schema).wire()


def _store(folder: Path, settings: Settings) -> Path | None:
    """`folder`'s store when it has one and it is this user's (else opening it says so)."""
    from kb_lsp.engine.storage import DATABASE, default_storage, store_dir_for

    store = store_dir_for(default_storage(settings), folder)
    if not (store / DATABASE).is_file():
        return None
    from kb_lsp.engine.private import refusal

    return store if refusal(store) is None else None


@contextmanager
def _current(store: Path, folder: Path, settings: Settings) -> Iterator[TextReader | None]:
    """The store's text side while the index is current (a sync would do nothing), else
    None; closed after."""
    from kb_lsp.engine.index.fresh import current
    from kb_lsp.engine.store.reader import open_text_reader, saved_glob_memo
    from kb_lsp.engine.workspace.files import WorkspaceRoot
    from kb_lsp.engine.workspace.glob_memo import load

    root = folder.resolve()
    reader = open_text_reader(store, root=root)
    try:
        fresh = reader.current()
        if fresh:
            # Before the rules are read: a scan whose globs the last sync translated
            # never imports pathspec.
            load(saved_glob_memo(reader))
            fresh = current(WorkspaceRoot(root, settings), reader)
        yield reader if fresh else None
    finally:
        reader.close()


def _search(
    reader: TextReader, settings: Settings, wanted: Mapping[str, Any]
) -> tuple[list[quick_models.SearchHit], str | None] | None:
    from kb_lsp.engine.search.candidates import SearchSource
    from kb_lsp.engine.search.query import parse_query, ranked
    from kb_lsp.engine.search.searcher import Searcher
    from kb_lsp.engine.search.spelling import did_you_mean
    from kb_lsp.errors import InvalidInput

    # The text side stands for the store: a keyword search reads nothing else of it.
    source = SearchSource(cast("Any", reader), str(reader.root), "")
    searcher = Searcher(cast("Any", _KeywordOnly()), models=quick_models)
    query, filter = wanted["query"], wanted.get("filter")

    def search(text: str, limit: int) -> tuple[Any, list[Any]]:
        parsed = parse_query(text, filter, reader.field_names)
        threshold = settings.search.threshold
        found = ranked(
            searcher, [source], parsed, limit=limit, threshold=threshold, paths=None, mode="keyword"
        )
        return parsed, found

    try:
        parsed, hits = search(query, wanted["limit"])
    except InvalidInput:
        return None  # the full path says what is wrong, in its words

    def finds(fixed: str) -> bool:
        return bool(search(fixed, 1)[1])

    # As the full path: a correction is offered only when the corrected query finds files.
    suggestion = did_you_mean(query, parsed.text, [reader], finds)
    return cast("list[quick_models.SearchHit]", hits), suggestion
