"""The lead's quotes come from the passages of the largest context, whatever the model's
(issue 35, point 3): a small model is given two short passages, but the sentence that
answers may lie past them; the quotes come before the model and do not depend on it."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.embedder import HashingEmbedder

from kb_lsp.config import Settings
from kb_lsp.engine.agent import evidence, grounded
from kb_lsp.engine.knowledge import KnowledgeBase

QUESTION = "when does the treasury close run the supplier payments"
ANSWER = "The supplier payments of the close go out every Thursday at 10:00."


def _workspace(root: Path) -> Path:
    # One chunk (under 800 characters): the model's 600 are its top lines, which hold
    # more of the question's words; the answer is its last line.
    notes = root / "notes"
    notes.mkdir()
    said = [
        f"The treasury close step {n} checks the supplier payments run of the ledger."
        for n in range(9)
    ]
    (notes / "close.md").write_text(
        "# Treasury close\n\n" + "\n".join(said) + f"\n{ANSWER}\n", encoding="utf-8"
    )
    return notes


def test_a_small_model_s_quotes_come_from_the_largest_context_s_passages(tmp_path: Path) -> None:
    kb = KnowledgeBase(
        [_workspace(tmp_path)], Settings(), embedder=HashingEmbedder(), storage=tmp_path / "s"
    )
    try:
        kb.sync()
        searched = grounded.search(kb, QUESTION, [])
        count, each = grounded.fitted(2048)
        given, _ = grounded.gather(
            kb, QUESTION, [], budget_chars=count * each, max_passages=count,
            passage_chars=each, searched=searched,
        )  # fmt: skip
        pool = grounded.quoted(kb, QUESTION, [], searched, (given, (count, each)))
        full, _ = grounded.gather(kb, QUESTION, [], budget_chars=7500)
    finally:
        kb.close()
    assert given and not any(ANSWER in p.text for p in given)  # cut at 600 characters
    assert [(p.path, p.start, p.end) for p in pool] == [(p.path, p.start, p.end) for p in full]
    assert any(ANSWER in p.text for p in pool)
    quotes = evidence.select(pool, QUESTION)
    assert quotes and any(q.text == ANSWER for q in quotes)


def test_the_largest_context_s_own_passages_are_quoted_as_given(tmp_path: Path) -> None:
    """No second gathering when the model already has the largest context's passages:
    the very list it was given is quoted."""
    kb = KnowledgeBase(
        [_workspace(tmp_path)], Settings(), embedder=HashingEmbedder(), storage=tmp_path / "s"
    )
    try:
        kb.sync()
        searched = grounded.search(kb, QUESTION, [])
        given, _ = grounded.gather(kb, QUESTION, [], budget_chars=7500, searched=searched)
        fit = grounded.fitted(8192)
        assert grounded.quoted(kb, QUESTION, [], searched, (given, fit)) is given
    finally:
        kb.close()
