"""The numbered hits of the files kept: label, snippet (with FTS's own for a chunk without
readable text, read in one query per root), marks and key metadata."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from kb_lsp.engine.metadata.hits import hit_meta, wire_models
from kb_lsp.engine.search.candidates import Candidate, FileScore
from kb_lsp.engine.search.names import alias_share, file_uri, path_share
from kb_lsp.engine.search.snippet import make_snippet, snippet_marks
from kb_lsp.engine.search.weights import FILENAME_MATCH
from kb_lsp.engine.snippet_blocks import parse_blocks

if TYPE_CHECKING:
    from kb_lsp.engine.store.store_reader import StoreReader
    from kb_lsp.protocol import Label, SearchHit


def numbered_hits(
    files: Sequence[FileScore],
    terms: Sequence[str],
    label: Label | None,
    marked: Sequence[str],
    match: str,
    models: Any = None,
) -> list[SearchHit]:
    """The numbered hits of `files` (built of `models`: `wire_models`), each built once,
    with its file's key metadata. A chunk without readable text shows FTS's own snippet:
    those are asked for together, per root, after a first pass finds them."""
    models = wire_models(models)
    wanted: dict[int, int] = {}  # hit index -> its FTS row

    def later(i: int, rowid: int) -> Callable[[], str | None]:
        def note() -> str | None:
            wanted[i] = rowid
            return None  # asked for below, with the others

        return note

    snippets = [
        snippet_of(f, f.shown or f.best, terms, marked, fts_source(f, later, i))
        for i, f in enumerate(files)
    ]
    if wanted and match:
        by_root: dict[str, list[int]] = {}
        for i in wanted:
            by_root.setdefault(files[i].source.root, []).append(i)
        for indexes in by_root.values():
            reader = files[indexes[0]].source.reader
            found = reader.snippets(match, (wanted[i] for i in indexes))
            for i in indexes:
                f = files[i]
                snippets[i] = snippet_of(f, f.shown or f.best, terms, marked, found.get(wanted[i]))
    metas = _metas(files, models)
    return [
        hit(n, f, terms, label, snippet, marked, metas.get((id(f.source.reader), f.path)), models)
        for n, (f, snippet) in enumerate(zip(files, snippets, strict=True), start=1)
    ]


def fts_source(
    file: FileScore, later: Callable[[int, int], Callable[[], str | None]], i: int
) -> Callable[[], str | None] | None:
    rowid = (file.shown or file.best).keyword_rowid
    return None if rowid is None else later(i, rowid)


def hit(
    n: int,
    file: FileScore,
    terms: Sequence[str],
    label: Label | None,
    snippet: str,
    marked: Sequence[str],
    meta: Any,
    models: Any,
) -> SearchHit:
    shown = file.shown or file.best
    chunk = shown.chunk
    if label is None:
        # The label is about the path (and aliases) only: a title or heading that
        # holds the query ranks the file high (`name_share`) but is a context match.
        # A front-matter alias is a name of the file too.
        named = path_share(terms, chunk.path) >= FILENAME_MATCH or (
            file.card is not None and alias_share(terms, file.card.aliases) >= FILENAME_MATCH
        )
        label = "filename match" if named else "context match"
    return models.SearchHit(  # type: ignore[no-any-return]
        n=n,
        uri=file_uri(file.source.root, chunk.path),
        path=file.source.display(chunk.path),
        root=file.source.root,
        title=file.title,
        label=label,
        score=round(file.score, 4),
        snippet=snippet,
        heading=chunk.heading,
        range=models.Range.of_lines(chunk.start_line, chunk.end_line),
        marks=snippet_marks(snippet, marked),
        meta=meta,
    )


def snippet_of(
    file: FileScore,
    shown: Candidate,
    terms: Sequence[str],
    marked: Sequence[str],
    fts: str | Callable[[], str | None] | None,
) -> str:
    # A note that won on its card is best described by its own description (one line
    # of front matter, rendered here: markdown-it loads only when it has markup).
    if file.card is not None and file.card.description and file.card_score > file.best.score:
        return make_snippet(file.card.description, terms, None, distinctive=marked)
    # The chunk's readable blocks as the store keeps them, made at index time (a row
    # written before has none: made from its text). `fts` only for a chunk without
    # readable text (rare): FTS's own snippet of it.
    chunk = shown.chunk
    blocks = None if chunk.blocks is None else parse_blocks(chunk.blocks)
    return make_snippet(chunk.text, terms, fts, distinctive=marked, blocks=blocks)


def _metas(files: Sequence[FileScore], models: Any) -> dict[tuple[int, str], Any]:
    """Each file's key metadata (`SearchHit.meta`, built of `models`), read in one query
    per root, by (its reader's id, its path)."""
    by_reader: dict[int, tuple[StoreReader, list[str]]] = {}
    for file in files:
        reader = file.source.reader
        by_reader.setdefault(id(reader), (reader, []))[1].append(file.path)
    metas = {}
    for reader, paths in by_reader.values():
        for path, meta in hit_meta(reader, paths, models).items():
            metas[(id(reader), path)] = meta
    return metas
