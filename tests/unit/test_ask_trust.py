"""Ask you can trust (issue 35): each question searched on its own unless it follows up,
no file guessed from "my X", degenerate model output cut short, agent mode proven by a
tool call, summaries streamed. The real KnowledgeBase on a copy of examples/workspace,
the real HTTP clients, and the scripted stand-ins playing the model."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.embedder import HashingEmbedder
from tests.fakes.ollama_server import (
    ScriptedOllama,
    Turn,
    answer,
    call,
    error,
    pause,
    stall,
)
from tests.fakes.openai_server import ScriptedOpenAI
from tests.helpers.prompts import given_passages, number_of

from kb_lsp.config import Settings, load_settings
from kb_lsp.engine.agent import Agent, AskOutcome, followup
from kb_lsp.engine.knowledge import KnowledgeBase
from kb_lsp.protocol import AskParams, Step

MEXICO = "payments/mexico-payments.md"
DEPLOY = "engineering/deploy-checklist.md"


@pytest.fixture
def kb(workspace: Path, storage: Path) -> Iterator[KnowledgeBase]:
    base = KnowledgeBase([workspace], Settings(), embedder=HashingEmbedder(), storage=storage)
    base.sync()
    yield base
    base.close()


def agent_for(kb: KnowledgeBase, host: str, **extra: Any) -> Agent:
    raw: dict[str, Any] = {"ollama": {"host": host, "timeout": 10}, **extra}
    loaded = load_settings(raw)
    assert not loaded.problems
    return Agent(kb, loaded.settings)


def ask(agent: Agent, question: str, **params: Any) -> tuple[AskOutcome, list[Step]]:
    """The outcome and every event streamed (steps and the answer's pieces)."""
    events: list[Step] = []
    outcome = agent.ask(
        AskParams(question=question, **params), on_event=events.append, cancel=threading.Event()
    )
    return outcome, events


def steps_of(events: list[Step]) -> list[Step]:
    return [e for e in events if not (e.args and e.args.get("piece"))]


def prompt_files(request: dict[str, Any]) -> list[str]:
    return [g.path for g in given_passages(request["messages"][-1]["content"])]


def says_it_follows_up(events: list[Step]) -> bool:
    return any(e.kind == "thinking" and e.text.startswith("A follow-up") for e in events)


# --- 1. a question is searched on its own ------------------------------------------------------


def test_an_unrelated_second_question_gets_its_own_passages(kb: KnowledgeBase) -> None:
    with ScriptedOllama(capabilities=["completion"], default=answer("Noted.")) as server:
        agent = agent_for(kb, server.url)
        first, _ = ask(agent, "What is the cut-off time for Mexico payments?")
        cid = first.response.conversation_id
        second, events = ask(
            agent, "When are deploys of the payments service frozen?", conversationId=cid
        )
        assert server.errors == []
        first_files, second_files = (prompt_files(r) for r in server.chat_requests)
    assert MEXICO in first_files
    # Searched on its own: the deploy checklist is given, Mexico's passages are not.
    assert second_files[0] == DEPLOY
    assert MEXICO not in second_files
    assert not says_it_follows_up(events)
    # Its quotes are about deploys, not about Mexico.
    lead = second.response.answer.split("\n\n")[0]
    assert lead.startswith("From your notes:") and "deploys" in lead and MEXICO not in lead


def test_a_follow_up_is_searched_with_the_question_it_follows(kb: KnowledgeBase) -> None:
    with ScriptedOllama(capabilities=["completion"], default=answer("Noted.")) as server:
        agent = agent_for(kb, server.url)
        first, _ = ask(agent, "What is the cut-off time for Mexico payments?")
        cid = first.response.conversation_id
        _, events = ask(agent, "And for Brazil?", conversationId=cid)
        _, again = ask(agent, "What about Germany?", conversationId=cid)
        assert server.errors == []
        files = [prompt_files(r) for r in server.chat_requests]
    assert says_it_follows_up(events) and says_it_follows_up(again)
    joined = next(e.text for e in again if e.text.startswith("A follow-up"))
    # A follow-up of a follow-up is joined to the topic's first question, not to a chain.
    assert "“What is the cut-off time for Mexico payments?”" in joined
    assert "payments/brazil-payments.md" in files[1]
    assert "payments/germany-payments.md" in files[2]


@pytest.mark.parametrize(
    "question",
    [
        "and for Brazil?",
        "What about Peru?",
        "Is it the same on weekends?",
        "Who approves that?",
        "why?",
        "tell me more",
    ],
)
def test_follow_ups_are_recognised(kb: KnowledgeBase, question: str) -> None:
    assert followup.decide(question, [kb]).follow_up


@pytest.mark.parametrize(
    "question",
    [
        "When are deploys of the payments service frozen?",
        "What happens to my payment if it is released after the cut-off?",
        "Is it safe to deploy the payments service on a Thursday?",
        "Which command lists the files that changed?",
        "What does this function return in the treasury close?",
        "Brazil cut-off?",
    ],
)
def test_questions_with_a_subject_of_their_own_are_not_follow_ups(
    kb: KnowledgeBase, question: str
) -> None:
    assert not followup.decide(question, [kb]).follow_up


# --- 2. "my X" is not a file reference ---------------------------------------------------------


@pytest.mark.parametrize(
    "question",
    [
        "What happens to my payment if it is released after the cut-off?",
        "How do I build my program for release?",
        "What should I check before I deploy my change to our payments service?",
        "Where is the headcount in my budget?",
    ],
)
def test_my_x_questions_are_neither_narrowed_nor_asked_back(
    kb: KnowledgeBase, question: str
) -> None:
    with ScriptedOllama(capabilities=["completion"], default=answer("Noted.")) as server:
        outcome, events = ask(agent_for(kb, server.url), question)
        assert server.errors == []
        asked = len(server.chat_requests)
    response = outcome.response
    assert response.stop == "answer" and "Which one do you mean" not in response.answer
    # Nothing said that a phrase of the question is a file: the whole workspace was searched.
    assert not [e for e in steps_of(events) if e.kind == "thinking" and "” is `" in e.text]
    assert asked == 1 or response.answer.startswith("Nothing")


def test_a_named_document_that_could_be_several_searches_everything(
    kb: KnowledgeBase,
) -> None:
    with ScriptedOllama(capabilities=["completion"], default=answer("Noted.")) as server:
        outcome, events = ask(agent_for(kb, server.url), "What does the brief note say on risk?")
        assert server.errors == []
    assert outcome.response.stop == "answer"
    said = [e.text for e in events if e.kind == "thinking" and "could be" in e.text]
    assert said and "projects/budget_brief.md" in said[0] and "projects/policy_brief.md" in said[0]


def test_a_whole_file_name_after_summarize_still_names_it(kb: KnowledgeBase) -> None:
    def summary(request: dict[str, Any]) -> Turn:
        assert "2027 treasury budget" in request["messages"][-1]["content"]
        return answer("Headcount goes from 6 to 7 and the bank fees fall by a tenth.")

    with ScriptedOllama([summary]) as server:
        outcome, events = ask(agent_for(kb, server.url), "summarize my budget brief")
        assert server.errors == []
    assert outcome.response.stop == "answer"
    assert outcome.response.sources[0].path == "projects/budget_brief.md"
    assert any(e.tool == "summarize_document" for e in events if e.kind == "tool_call")


# --- 5. degenerate output is stopped early --------------------------------------------------


def test_a_model_that_loops_is_stopped_early(kb: KnowledgeBase) -> None:
    # It loops, then would go silent for ever: only a stop on the loop ends it in time
    # (the silence would end the request as a timeout error after 10 s).
    looping = stall(after_chunks=40, content="SPEI before 14:30 [1]. " + "You can't. " * 200)
    with ScriptedOllama([looping], capabilities=["completion"]) as server:
        outcome, events = ask(agent_for(kb, server.url), "What is the cut-off for Mexico?")
        server.release()
    response = outcome.response
    assert response.stop == "degenerate"
    assert "SPEI before 14:30 [1]. You can't." in response.answer
    assert response.answer.count("You can't.") == 1
    assert "> Stopped early: the model was repeating itself" in response.answer
    # What the client saw streamed ends as the final answer's text before its sources.
    streamed = ""
    for event in events:
        if event.kind == "answer" and event.args and event.args.get("piece"):
            streamed = event.text if event.args.get("replace") else streamed + event.text
    assert streamed.count("You can't.") == 1


def test_a_model_writing_the_prompt_back_is_cut_where_it_starts(kb: KnowledgeBase) -> None:
    echo = answer('SPEI before 14:30 [1].\n<passage n="2" file="x.md" lines="1-3">\nQuestion: …')
    with ScriptedOllama([echo], capabilities=["completion"]) as server:
        outcome, _ = ask(agent_for(kb, server.url), "What is the cut-off for Mexico?")
    assert outcome.response.stop == "degenerate"
    assert "<passage" not in outcome.response.answer
    assert "writing the prompt's markup back" in outcome.response.answer


@pytest.mark.parametrize("provider", ["ollama", "openai"])
def test_a_model_without_a_chat_template_is_named_once(kb: KnowledgeBase, provider: str) -> None:
    reply = answer("SPEI before 14:30 [1].")
    server: ScriptedOllama
    if provider == "ollama":
        server = ScriptedOllama([reply], capabilities=["completion"], chat_template=False)
        extra: dict[str, Any] = {}
    else:
        server = ScriptedOpenAI([reply], tools=False, chat_template=False)
        extra = {"llm": {"provider": "openai", "baseUrl": f"{server.url}/v1"}}
    with server:
        outcome, events = ask(agent_for(kb, server.url, **extra), "What is the Mexico cut-off?")
    said = [e.text for e in events if e.kind == "status" and "no chat template" in e.text]
    assert len(said) == 1 and said[0].startswith("Mode: grounded")
    assert outcome.response.answer.count("has no chat template of its own") == 1


def test_a_model_with_a_chat_template_gets_no_such_note(kb: KnowledgeBase) -> None:
    with ScriptedOpenAI([answer("SPEI before 14:30 [1].")], tools=False) as server:
        extra = {"llm": {"provider": "openai", "baseUrl": server.base_url}}
        outcome, events = ask(agent_for(kb, server.url, **extra), "What is the Mexico cut-off?")
    assert "chat template" not in outcome.response.answer
    assert not [e for e in events if "chat template" in e.text]


# --- 6. agent mode proves itself --------------------------------------------------------------


def cites_mexico(request: dict[str, Any]) -> Turn:
    assert not request.get("tools")  # grounded: passages, no tools
    n = number_of(request["messages"][-1]["content"], MEXICO)
    return answer(f"Payments must be released before 14:30 Mexico City time [{n}].")


def test_a_model_that_claims_tools_and_calls_none_gets_a_grounded_answer(
    kb: KnowledgeBase,
) -> None:
    from_weights = answer("Usually the cut-off is at noon, I believe.")
    with ScriptedOllama([from_weights, cites_mexico]) as server:  # it says it calls tools
        outcome, events = ask(agent_for(kb, server.url), "What is the cut-off for Mexico?")
        assert server.errors == []
        first_had_tools = bool(server.chat_requests[0].get("tools"))
    response = outcome.response
    assert first_had_tools
    assert (response.mode, response.verdict, response.stop) == ("grounded", "supported", "answer")
    assert response.mode_reason == (
        "qwen2.5:7b claims to call tools, but it answered without calling a tool"
    )
    assert "noon" not in response.answer  # its answer from its weights is not used
    assert response.answer.startswith("From your notes:")
    said = [e.text for e in steps_of(events) if e.kind == "status" and "claims to call" in e.text]
    assert len(said) == 1 and said[0].startswith("Mode: grounded")
    # Nothing of the set-aside reply ever reached the client: a terminal cannot take back
    # what it printed (it once kept "Usually" above the grounded answer).
    assert not [e for e in events if e.kind == "answer" and "noon" in e.text]
    assert not [e for e in events if e.kind == "answer" and "Usually" in e.text]
    shown = ""
    for event in events:
        if event.kind == "answer" and event.args and event.args.get("piece"):
            shown = event.text if event.args.get("replace") else shown + event.text
    assert "noon" not in shown and shown.startswith("From your notes:")


def test_a_tool_call_the_server_fails_becomes_a_step_and_a_grounded_answer(
    kb: KnowledgeBase,
) -> None:
    malformed = error(500, "Failed to parse tool call arguments as JSON")
    with ScriptedOllama([malformed, cites_mexico]) as server:
        outcome, events = ask(agent_for(kb, server.url), "What is the cut-off for Mexico?")
        assert server.errors == []
    response = outcome.response
    assert (response.mode, response.stop, response.verdict) == ("grounded", "answer", "supported")
    errors = [e.text for e in steps_of(events) if e.kind == "error"]
    assert len(errors) == 1 and "HTTP 500: Failed to parse tool call arguments" in errors[0]
    assert response.mode_reason is not None and "server failed" in response.mode_reason


def test_a_model_that_calls_a_tool_stays_in_agent_mode(kb: KnowledgeBase) -> None:
    script = [call("search_knowledge_base", query="mexico cut-off"), answer(f"14:30 [{MEXICO}].")]
    with ScriptedOllama(script) as server:
        outcome, _ = ask(agent_for(kb, server.url), "What is the cut-off for Mexico?")
        assert server.errors == []
    assert (outcome.response.mode, outcome.response.verdict) == ("agent", "supported")
    assert outcome.response.mode_reason == "qwen2.5:7b calls tools"


# --- 7. summaries stream ---------------------------------------------------------------------


def test_a_summary_arrives_as_several_answer_events(kb: KnowledgeBase) -> None:
    summary = (
        "Mexico payments go by SPEI before the 14:30 Mexico City cut-off. "
        "- The subsidiary is funded once a month.\n- Large payments need two approvers.\n"
    )
    events: list[Step] = []
    first_piece = threading.Event()

    def listen(step: Step) -> None:
        events.append(step)
        if step.kind == "answer" and step.args and step.args.get("piece"):
            first_piece.set()

    numbered = kb.search("mexico payments")
    assert numbered[0].path == MEXICO
    with ScriptedOllama([pause(after_chunks=4, content=summary)]) as server:
        agent = agent_for(kb, server.url)
        done: list[AskOutcome] = []
        worker = threading.Thread(
            target=lambda: done.append(
                agent.ask(
                    AskParams(question="summarize file 1"), numbered=numbered, on_event=listen
                )
            )
        )
        worker.start()
        # The first words arrive while the model is still writing (stalled here).
        assert first_piece.wait(timeout=120)
        server.release()
        worker.join(timeout=120)
        assert server.errors == []
    response = done[0].response
    pieces = [e for e in events if e.kind == "answer" and e.args and e.args.get("piece")]
    # The first piece is what had come before the stall: a word or more of the summary,
    # however the flusher's timing cut it on a loaded machine.
    assert len(pieces) >= 2 and pieces[0].text.strip()
    assert summary.startswith(pieces[0].text) and pieces[0].text != summary
    assert "".join(p.text for p in pieces).strip() == summary.strip()
    assert response.answer.startswith(summary.strip())
    # The cache keeps the whole summary.
    assert kb.cached_summary(MEXICO, agent.summarizer.cache_key()) == summary.strip()


# --- 4. one verdict ----------------------------------------------------------------------------


def test_an_answer_has_one_verdict_with_the_mode_as_small_print(kb: KnowledgeBase) -> None:
    with ScriptedOllama(
        [answer("It is at noon."), cites_mexico], capabilities=["completion"]
    ) as server:
        agent = agent_for(kb, server.url)
        unsupported, _ = ask(agent, "What is the cut-off for Mexico?")
        supported, _ = ask(agent, "What is the cut-off for Mexico?")
    for outcome, verdict in ((unsupported, "unsupported"), (supported, "supported")):
        response = outcome.response
        assert (response.verdict, response.mode) == (verdict, "grounded")
        assert response.mode_reason == "qwen2.5:7b does not call tools"
        assert "(its answer cites none of them)" not in response.answer
        assert "Passages the model was given: [1]" in response.answer
    # The unsupported text comes after the quotes and is what clients fold.
    assert unsupported.response.folded == "It is at noon."
    assert supported.response.folded is None


# --- 8. the list "file N" means --------------------------------------------------------------


def test_asking_keeps_the_list_the_user_saw_and_says_which_list_file_n_used(
    kb: KnowledgeBase,
) -> None:
    numbered = kb.search("mexico payments")
    assert numbered[0].path == MEXICO
    with ScriptedOllama(capabilities=["completion"], default=cites_mexico) as server:
        agent = agent_for(kb, server.url)
        grounded_ask = agent.ask(
            AskParams(question="What is the cut-off for Mexico?"), numbered=numbered
        )
        about_file = agent.ask(
            AskParams(question="what is the cut-off in file 1?"),
            numbered=numbered,
            numbered_query="mexico payments",
        )
        assert server.errors == []
    # A grounded answer numbers its passages as passages; the list stays the user's.
    assert grounded_ask.numbered is None
    assert about_file.numbered is None
    assert about_file.response.answer.endswith(
        f"_“file 1” is `{MEXICO}`: from the list for “mexico payments”._"
    )
