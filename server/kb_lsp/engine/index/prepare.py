"""One file's text → what the store keeps of it: chunks (with their stems, readable
blocks and text hashes), metadata, and the note card.

The per-file half of phase 1 of a sync (`indexer.py`), apart so it can be fed anything.
Whatever one file holds, this either returns or raises for that file alone, and the
indexer skips that file with the reason (`Indexer._prepare`); every other file is
indexed. Parts fail apart:

* the Markdown cannot be chunked (a parser bug): `prepare_file` raises, and the file is
  skipped with the reason;
* its metadata cannot be read (front matter, tags, links): the file is indexed without
  it, and the failure is one of its problems, at its front matter's first line;
* a note with front matter and no body gets a card chunk (`cards.card_chunk_text`), so
  that its title, name and fields find it; so does an empty file, by its name.

A chunk's text hash covers what is embedded: its heading path and its text, not the file
name, so a rename keeps every vector.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from pathlib import PurePosixPath

from kb_lsp.config import Settings
from kb_lsp.engine.markdown.document import ParsedDocument, parse_markdown
from kb_lsp.engine.metadata.cards import card_chunk_text, card_hash, card_text
from kb_lsp.engine.metadata.extract import FileMetadata, extract_metadata
from kb_lsp.engine.metadata.frontmatter import Problem
from kb_lsp.engine.metadata.values import Value
from kb_lsp.engine.snippets import blocks_text
from kb_lsp.engine.store import NewChunk
from kb_lsp.engine.terms import stems_text

log = logging.getLogger(__name__)


def embedding_text(heading: str, text: str) -> str:
    """What is embedded for a chunk: its heading path gives a short passage its topic."""
    return f"{heading}\n{text}" if heading else text


def text_hash(heading: str, text: str) -> str:
    return hashlib.sha256(embedding_text(heading, text).encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True)
class PreparedFile:
    title: str
    chunks: list[NewChunk]
    metadata: FileMetadata
    card: tuple[str, str] | None  # (hash, text) of the note card, when it has one


def failure(err: BaseException) -> str:
    """An exception as a reason a person can pass on: its type and its first line."""
    text = str(err).strip().splitlines()
    detail = text[0][:200] if text else ""
    return f"{type(err).__name__}: {detail}" if detail else type(err).__name__


def prepare_file(text: str, path: str, settings: Settings) -> PreparedFile:
    """Chunk and read the file at workspace path `path` whose content is `text` (see the
    module doc for what fails apart); raises only when it cannot be chunked at all."""
    doc = parse_markdown(
        text,
        file_name=PurePosixPath(path).name,
        chunk_size=settings.chunk_size,
        chunk_overlap=settings.chunk_overlap,
    )
    metadata = _metadata(doc, path)
    title = metadata.title or doc.title
    chunks = [
        _chunk(
            chunk.index,
            " > ".join(chunk.heading_path),
            chunk.text,
            chunk.start_line,
            chunk.end_line,
        )
        for chunk in doc.chunks
    ]
    if not chunks:
        text = card_chunk_text(
            title, metadata.description, metadata.aliases, metadata.fields, settings.chunk_size
        )
        chunks = [_chunk(0, "", text, 0, max(0, doc.body_start - 1))]
    card = card_text(title, metadata.description, metadata.aliases)
    return PreparedFile(title, chunks, metadata, (card_hash(card), card) if card else None)


def _chunk(index: int, heading: str, text: str, start_line: int, end_line: int) -> NewChunk:
    return NewChunk(
        index=index,
        text=text,
        text_hash=text_hash(heading, text),
        heading=heading,
        start_line=start_line,
        end_line=end_line,
        stems=stems_text(heading, text),
        blocks=blocks_text(text),
    )


def _metadata(doc: ParsedDocument, path: str) -> FileMetadata:
    try:
        return extract_metadata(doc, path)
    except Exception as err:  # a bug in one reader must not keep the file's text out
        log.warning("indexer: the metadata of %s could not be read", path, exc_info=True)
        folder = str(PurePosixPath(path).parent)
        problem = Problem(
            doc.front_matter_line if doc.front_matter is not None else 0,
            f"its metadata could not be read ({failure(err)}); the file is indexed "
            "without its fields, tags and links",
        )
        return FileMetadata(
            fields={"folder": [Value("string", "" if folder == "." else folder)]},
            tags=(),
            links=(),
            problems=(problem,),
            title=None,
        )
