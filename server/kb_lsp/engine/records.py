"""Plain records shared by the engine's modules and its front ends: a chunk as stored, and
the refusal of a write to a store another process holds. What a sync reports is
`index/reports.py`'s, a listed file `file_reads.py`'s, a vector hit `store/vectors.py`'s:
a reader of the store (a one-shot keyword search) builds none of them."""

from __future__ import annotations

from dataclasses import dataclass

from kb_lsp.errors import Unavailable


@dataclass(frozen=True)
class StoredChunk:
    """One chunk as stored: what the agent's tools read."""

    path: str  # workspace-relative, `/`-separated
    root: str  # absolute root path
    index: int
    text: str
    heading: str  # heading path joined with " > "
    start_line: int  # 0-based, inclusive
    end_line: int  # 0-based, inclusive
    text_hash: str = ""  # of what was embedded (heading path + text): finds its vector
    stems: str | None = None  # `terms.stems_text` of heading and text, when stored
    blocks: str | None = None  # `snippets.blocks_text` of its text, when stored


class ReadOnlyStore(Unavailable):
    """A write was attempted on a store another process holds the writer lock of."""
