"""Hover on a workspace link in Markdown: what `link_preview.py` finds, as an LSP hover.

Nothing here touches the disk on the event loop: a document the editor has not opened is
read on the query pool through `KnowledgeBase.read_text` (one confined descriptor, never
blocking on a named pipe), and the whole hover gives up after `HOVER_TIMEOUT` seconds
with no hover rather than hold anything up.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from urllib.parse import unquote

from lsprotocol import types
from pygls.workspace import TextDocument

from kb_lsp.engine.link_preview import MARKDOWN_SUFFIXES, compute_hover, read_unopened
from kb_lsp.lsp.server import KbLanguageServer, uri_to_path

log = logging.getLogger(__name__)

HOVER_TIMEOUT = 10.0  # seconds: a hover that takes longer is not worth showing


async def hover(ls: KbLanguageServer, params: types.HoverParams) -> types.Hover | None:
    uri = params.text_document.uri
    path = uri_to_path(uri)
    if path is None or path.suffix.lower() not in MARKDOWN_SUFFIXES:
        return None
    if not ls.runtime.opened.done():
        return None
    try:
        return await asyncio.wait_for(_hover(ls, params, uri, path), HOVER_TIMEOUT)
    except TimeoutError:
        log.warning("hover in %s gave up after %g s", path.name, HOVER_TIMEOUT)
        return None


async def _hover(
    ls: KbLanguageServer, params: types.HoverParams, uri: str, path: Path
) -> types.Hover | None:
    document = ls.workspace.text_documents.get(unquote(uri))
    if document is None:  # not open in the editor: read it, off the event loop
        text = await ls.read(ls.runtime.read, lambda kb: read_unopened(kb, path))
        if text is None:
            return None
        document = TextDocument(uri, text, position_codec=ls.workspace.position_codec)
    lines = document.lines
    if params.position.line >= len(lines):
        return None
    position = document.position_codec.position_from_client_units(lines, params.position)
    line = lines[position.line].rstrip("\r\n")
    found = await ls.read(
        ls.runtime.read, lambda kb: compute_hover(kb, path, line, position.character)
    )
    if found is None:
        return None
    text, link = found
    start = types.Position(line=params.position.line, character=link.start)
    end = types.Position(line=params.position.line, character=link.end)
    return types.Hover(
        contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text),
        range=document.position_codec.range_to_client_units(
            lines, types.Range(start=start, end=end)
        ),
    )


def register(server: KbLanguageServer) -> None:
    server.feature(types.TEXT_DOCUMENT_HOVER)(hover)
