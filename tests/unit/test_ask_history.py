"""A conversation as the client keeps it (issue 39): the turns sent with a question
replace what the server remembers of that conversation — a conversation reopened from
the editor's history after a restart goes on where it was, Regenerate asks the last
question again without the answer it replaces, an edited question comes after the turns
before it only. The real runtime, the scripted Ollama stand-in (real HTTP)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.fakes.ollama_server import ScriptedOllama, answer
from tests.helpers.cli import HASHING
from tests.helpers.runtime import editor_runtime

from kb_lsp.config import load_settings
from kb_lsp.contract.operations import ASK
from kb_lsp.protocol import AskParams, ChatTurn
from kb_lsp.runtime import Runtime
from kb_lsp.runtime.dispatch import answer as served_answer

MEXICO = "payments/mexico-payments.md"


@pytest.fixture
def ollama() -> Iterator[ScriptedOllama]:
    with ScriptedOllama() as server:
        yield server
    assert server.errors == []


def opened(workspace: Path, storage: Path, host: str) -> Runtime:
    runtime = editor_runtime(watch=False, probe_llm=False, log_file=False, listen=False)
    # Agent mode: the scripted replies call no tool, which auto mode would set aside for a
    # grounded answer (issue 35) — the turns under test are the agent's own messages.
    settings = load_settings(
        {"storage": str(storage), "ollama": {"host": host}, "llm": {"mode": "agent"}}
    ).settings
    runtime.open([workspace], settings, index=False).result()
    runtime.reindex().result()
    return runtime


def turns(ollama: ScriptedOllama) -> list[tuple[str, str]]:
    """The last chat request's conversation: (role, content) after the system prompt."""
    messages = ollama.chat_requests[-1]["messages"]
    return [(m["role"], m["content"]) for m in messages if m["role"] != "system"]


def test_the_turns_a_client_sends_replace_what_the_server_remembers(
    workspace: Path, storage: Path, ollama: ScriptedOllama, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KB_EMBEDDER_FACTORY", HASHING)
    runtime = opened(workspace, storage, ollama.url)
    try:
        # A conversation reopened after a restart: this server never saw it.
        kept = [
            ChatTurn(
                question="When is the Mexico cut-off?",
                answer=(
                    f"From your notes:\n- “Cut-off is 14:30.” [{MEXICO}:9-9]\n\n"
                    f"It is 14:30 [1].\n\nSources: [1] {MEXICO}"
                ),
            )
        ]
        ollama.add(answer("The next business day."))
        first = served_answer(
            runtime,
            ASK,
            AskParams(question="And if I miss it?", conversation_id="old-chat", history=kept),
        )
        assert turns(ollama) == [
            ("user", "When is the Mexico cut-off?"),
            ("assistant", "It is 14:30."),  # as the server keeps answers: no quote, no sources
            ("user", "And if I miss it?"),
        ]
        assert first.conversation_id == "old-chat"
        # Regenerate: the same question after the turns before it, not after its answer.
        ollama.add(answer("It goes out the next business day."))
        served_answer(
            runtime,
            ASK,
            AskParams(question="And if I miss it?", conversation_id="old-chat", history=kept),
        )
        assert [role for role, _ in turns(ollama)] == ["user", "assistant", "user"]
        # An edited first question: nothing before it.
        ollama.add(answer(f"At 14:30 Mexico City time [{MEXICO}:9-10]."))
        edited = served_answer(
            runtime,
            ASK,
            AskParams(question="When is the SPEI cut-off?", conversation_id="old-chat", history=[]),
        )
        assert turns(ollama) == [("user", "When is the SPEI cut-off?")]
        # Without history the server's own memory goes on as before (a cited answer is
        # kept).
        ollama.add(answer("Yes."))
        served_answer(
            runtime, ASK, AskParams(question="Every day?", conversation_id=edited.conversation_id)
        )
        assert [role for role, _ in turns(ollama)] == ["user", "assistant", "user"]
    finally:
        runtime.close()


def test_history_is_bounded_on_the_wire() -> None:
    with pytest.raises(ValueError, match="at most 32"):
        AskParams(question="q", history=[ChatTurn(question="a", answer="b")] * 33)
