"""A hit's snippet: the most telling stretch of a chunk as one line, and the words in it
to highlight."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kb_lsp.engine.snippet_blocks import Block
from kb_lsp.engine.terms import WORD as _WORD
from kb_lsp.engine.terms import each_word_stems
from kb_lsp.engine.terms import word_stems as _word_stems

_SENTENCE_ENDS = (".", "!", "?", ":", ";", "…")


def _around_first_match(line: str, wanted: set[str], width: int) -> str:
    """A line longer than the snippet, started a little before its first query word (a
    long line's match may be far from its start)."""
    if len(line) <= width:
        return line
    for match in _WORD.finditer(line):
        if match.start() > 20 * width:
            break  # not worth scanning a huge line further
        if _word_stems(match.group()) & wanted:
            if match.start() <= width // 3:
                break
            start = line.rfind(" ", 0, match.start() - width // 4) + 1
            return "…" + line[start:]
    return line


def make_snippet(
    text: str,
    terms: Sequence[str],
    fts_snippet: str | Callable[[], str | None] | None,
    width: int = 220,
    *,
    distinctive: Sequence[str] = (),
    blocks: Sequence[Block] | None = None,
) -> str:
    """The most telling stretch of a chunk as one line of plain text (`snippets.py` says
    what markup is removed): it starts at the sentence with the most `distinctive` query
    words, then the most query words (or the first real sentence when none is there),
    and runs on to about `width` characters, cut at a word. A chunk without readable
    text shows `fts_snippet` (FTS5's snippet, or what gives it) as plain text. `blocks`:
    `readable_blocks(text)` as the store keeps them, when it does (else made here)."""
    if blocks is None:
        blocks = _rendered(text)
    if not blocks:
        return _plain_fts(fts_snippet, width)
    wanted = set(terms)
    telling = set(distinctive)
    sentences = [
        (b, i, s) for b, block in enumerate(blocks) for i, s in enumerate(block.sentences())
    ]

    # Each sentence's stems once, their new words tokenised in one batch: ranking reads
    # them for every sentence, and a hit's snippet is made on every search that shows it.
    stems = each_word_stems([s for _, _, s in sentences]) if wanted or telling else []

    def rank(k: int) -> tuple[int, int, int]:
        return (len(stems[k] & telling), len(stems[k] & wanted), -k)

    # Without query words (related notes) no sentence can rank above another.
    best = max(range(len(sentences)), key=rank) if wanted or telling else 0
    if not wanted or not stems[best] & wanted:
        # A semantic match without shared words: start at the first real sentence.
        best = next(
            (k for k, (b, _, s) in enumerate(sentences) if len(s) > 40 and not blocks[b].code),
            0,
        )
    # A sentence longer than the snippet (a long line without full stops) starts a little
    # before its first query word rather than far away from it.
    snippet = _around_first_match(sentences[best][2], wanted, width)
    block = sentences[best][0]
    for b, _, extra in sentences[best + 1 :]:
        if len(snippet) >= width:
            break
        # Blocks that do not end a sentence (list items, table rows) need a visible break.
        joiner = " — " if b != block and not snippet.endswith(_SENTENCE_ENDS) else " "
        snippet += joiner + extra
        block = b
    if len(snippet) > width:
        cut = snippet[:width].rsplit(" ", 1)[0]
        snippet = cut.rstrip(" ,;:·-–—") + "…"
    return snippet


def _rendered(text: str) -> list[Block]:
    # The rules, loaded here alone: a search over stored blocks never compiles them.
    from kb_lsp.engine.snippets import readable_blocks

    return readable_blocks(text)


def _plain_fts(fts_snippet: str | Callable[[], str | None] | None, width: int) -> str:
    from kb_lsp.engine.snippets import inline_text

    if callable(fts_snippet):
        fts_snippet = fts_snippet()
    return inline_text((fts_snippet or "").strip())[:width]


def snippet_marks(snippet: str, terms: Sequence[str]) -> list[str]:
    """The words of `snippet` to highlight: those whose stem is one of `terms`, as they
    are written there, each once, in order."""
    wanted = set(terms)
    words = list(dict.fromkeys(_WORD.findall(snippet)))
    return [word for word in words if _word_stems(word) & wanted]
