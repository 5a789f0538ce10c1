"""The lead's quotes come from the passages of the largest context, whatever the model's
(issue 35, point 3): a small model is given two short passages, but the sentence that
answers may lie past them; the quotes come before the model and do not depend on it."""

from __future__ import annotations

import threading
from pathlib import Path

from tests.fakes.embedder import HashingEmbedder
from tests.fakes.ollama_server import ScriptedOllama, answer

from kb_lsp.config import Settings, load_settings
from kb_lsp.engine.agent import Agent, evidence, grounded
from kb_lsp.engine.knowledge import KnowledgeBase
from kb_lsp.protocol import AskParams

QUESTION = "when does the treasury close run the supplier payments"
ANSWER = "The supplier payments of the close go out every Thursday at 10:00."


def _workspace(root: Path) -> Path:
    # One chunk (under 800 characters): the model's 600 are its top lines, whose first
    # holds every word of the question (a fragment: never quoted); the answer is its last.
    notes = root / "notes"
    notes.mkdir()
    said = [f"Step {n} of the treasury close reconciles each ledger account." for n in range(9)]
    top = "supplier payments run in the treasury close, checked with the ledger team,"
    (notes / "close.md").write_text(
        "# Treasury close\n\n" + "\n".join([top, *said, ANSWER]) + "\n", encoding="utf-8"
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


def test_a_2k_model_is_given_600_characters_and_its_answer_quotes_past_them(
    tmp_path: Path,
) -> None:
    """Through the agent: the scripted model (2,048 tokens of context) is given the top of
    the note only, and the answer's lead still quotes the note's last line."""
    kb = KnowledgeBase(
        [_workspace(tmp_path)], Settings(), embedder=HashingEmbedder(), storage=tmp_path / "s"
    )
    try:
        kb.sync()
        with ScriptedOllama(capabilities=["completion"], default=answer("Noted.")) as server:
            raw = {"ollama": {"host": server.url, "timeout": 10, "numCtx": 2048}}
            loaded = load_settings(raw)
            assert not loaded.problems
            outcome = Agent(kb, loaded.settings).ask(
                AskParams(question=QUESTION), on_event=lambda _: None, cancel=threading.Event()
            )
            assert server.errors == []
            (request,) = server.chat_requests
    finally:
        kb.close()
    prompt = request["messages"][-1]["content"]
    assert "ledger" in prompt and ANSWER not in prompt
    lead = outcome.response.answer.split("\n\n")[0]
    assert lead.startswith(evidence.LEAD) and ANSWER in lead


TAR_PAGES = """# tar

- Create a gzipped archive from a directory using relative paths:

`tar czf {{path/to/target.tar.gz}} -C {{path/to/directory}} .`

- Create a gzipped archive and write it to a file:

`tar czf {{path/to/target.tar.gz}} {{path/to/file1 path/to/file2 ...}}`
"""


class Page:
    path = "pages/common/tar.md"
    start = 0
    text = TAR_PAGES


def test_the_words_for_files_count_when_quoting() -> None:
    """ "file" is no term to the index (it is how people name a note), but "an archive of
    some files" is the command that writes files, not the one that reads a directory
    (bench quotes: tldr-22 on dev, tldr-25 held out)."""
    assert evidence.filed("Archive some Files into a page") == {"file", "page"}
    quotes = evidence.select([Page()], "create a gzipped tar archive of some files")
    assert quotes[0].text.startswith("Create a gzipped archive and write it to a file:")
