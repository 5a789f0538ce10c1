"""One `kb/ask` request: what it knows and has found, the steps it sends, its model
calls, and how it ends.

Everything a client sees streams through `on_event` as `Step`s (status, thinking,
tool_call with its arguments, tool_result summary, and the final answer / clarify /
error), and every step is also in the response; the answer's text also goes out in
pieces as the model writes it (`answer_stream.py`), which are not steps. After about a
second of silence from the model a "Waiting for the model…" `status` step is sent. Usage
(model calls, tokens, seconds) is only in `response.usage`. A reply with no text is asked
once more, then the request ends with `stop: "empty"`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from kb_lsp.config import Settings
from kb_lsp.engine.agent import citations, degenerate, followup
from kb_lsp.engine.agent.answer_stream import AnswerStream
from kb_lsp.engine.agent.conversations import Conversations
from kb_lsp.engine.agent.found import MAX_SOURCES, Found
from kb_lsp.engine.agent.summarize import Summarizer
from kb_lsp.engine.agent.tools import ALL_TOOLS, FILE_TOOLS, Toolbox
from kb_lsp.engine.agent.usage import Meter
from kb_lsp.engine.knowledge import KnowledgeBase
from kb_lsp.engine.llm import ChatModel, ChatResult, Delta, LlmCancelled, LlmError
from kb_lsp.protocol import (
    AskEventKind,
    AskMode,
    AskParams,
    AskResponse,
    AskVerdict,
    SearchHit,
    Source,
    Step,
    StopReason,
)

log = logging.getLogger(__name__)

STEP_TEXT_CHARS = 4000  # a thinking step longer than this is cut (the panel is not a log)


class AgentParts(Protocol):
    """What a request takes from its `Agent` (`facade.py`, which imports this module)."""

    kb: KnowledgeBase
    settings: Settings
    conversations: Conversations

    @property
    def llm(self) -> ChatModel: ...

    @property
    def summarizer(self) -> Summarizer: ...


@dataclass
class AskOutcome:
    response: AskResponse
    # The numbered list the client should remember from now on ("file N" refers to it):
    # the candidates of a clarification, or the last search the agent showed. None when
    # this request showed no new list (keep the previous one).
    numbered: list[SearchHit] | None = None


class Stop(Exception):
    """Ends a request early with an answer for the user."""

    def __init__(
        self,
        stop: StopReason,
        answer: str,
        *,
        sources: list[Source] | None = None,
        numbered: list[SearchHit] | None = None,
        grounded: bool = True,
    ) -> None:
        super().__init__(answer)
        self.stop = stop
        self.answer = answer
        self.sources = sources or []
        self.numbered = numbered
        self.grounded = grounded


def verdict_of(stop: StopReason, mode: AskMode, grounded: bool) -> AskVerdict | None:
    """The one verdict an answer shows (`AskResponse.verdict`)."""
    if stop not in ("answer", "length", "degenerate"):
        return None  # a question back, a stop, an error: nothing was claimed
    if mode == "fallback":
        return "no_model"
    return "supported" if grounded else "unsupported"


def cut_off_note(llm: ChatModel, limit: int | None = None) -> str:
    setting = "kb.llm.maxTokens"
    return (
        f"> Cut off: the model reached its limit of {limit or llm.num_predict} tokens for "
        "one reply "
        f"({setting}). Ask a narrower question, or raise the limit."
    )


class Request:
    """One `kb/ask` request."""

    def __init__(
        self,
        agent: AgentParts,
        params: AskParams,
        numbered: list[SearchHit] | None,
        on_event: Callable[[Step], None] | None,
        cancel: threading.Event,
    ) -> None:
        self.agent = agent
        self.kb = agent.kb
        self.llm = agent.llm
        self.params = params
        self.numbered_in = numbered
        self.numbered_query: str | None = None  # what the list `numbered_in` was made for
        self.numbered_out: list[SearchHit] | None = None
        # Which list "file N" was read from, said at the end of the answer.
        self.list_note = ""
        self.on_event = on_event
        self.cancel = cancel
        self.meter = Meter()
        self.steps: list[Step] = []
        self.found = Found()
        self.mode: AskMode = "agent"
        self.mode_reason = ""  # why this mode: "smollm2 does not call tools", …
        self.conversation_id = params.conversation_id or Conversations.new_id()
        self.history = agent.conversations.turns(self.conversation_id)
        self.toolbox = Toolbox(self.kb, agent.summarizer)
        self.tool_names = FILE_TOOLS if (params.file or params.n) else ALL_TOOLS
        self.stream = AnswerStream(self.send_piece)
        self.dropped: list[str] = []  # citations taken out of the answer
        self._topic: followup.Topic | None = None
        # The model's text degenerated and was stopped there (`degenerate.py`).
        self.stopped: degenerate.Degenerate | None = None
        # Said once in the answer when the model has no chat template of its own.
        self.template_note = ""

    def selection(self) -> tuple[int, int] | None:
        """The asked lines of the focus file (`AskParams.lines`), 0-based inclusive."""
        lines = self.params.lines
        return None if lines is None else (lines.start - 1, lines.end - 1)

    def topic(self) -> followup.Topic:
        """What this question is searched for: the question on its own, or — when it
        follows up the turn before (`followup.py`) — joined to that turn's topic. Decided
        once, and said as a step when it is a follow-up."""
        if self._topic is not None:
            return self._topic
        question = self.params.question
        self._topic = followup.Topic.own(question)
        previous = self.history[-1] if self.history else None
        if previous is None or previous.stop == "clarify":
            return self._topic  # a reply to "which one?" goes on with its own question
        decision = followup.decide(question, [self.kb])
        if decision.follow_up:
            root = previous.topic or previous.question
            self._topic = followup.Topic.own(root).followed(question)
            self.emit(
                "thinking",
                f"A follow-up ({decision.why}): searched together with “{root}”.",
            )
        return self._topic

    def emit(
        self,
        kind: AskEventKind,
        text: str,
        *,
        tool: str | None = None,
        args: dict[str, Any] | None = None,
    ) -> None:
        if kind == "thinking" and len(text) > STEP_TEXT_CHARS:
            text = text[: STEP_TEXT_CHARS - 1] + "…"
        step = Step(kind=kind, text=text, tool=tool, args=args)
        self.steps.append(step)
        if self.on_event is not None:
            try:
                self.on_event(step)
            except Exception:  # a broken listener must not break the answer
                log.exception("ask event listener failed")

    def send_piece(self, text: str, replace: bool) -> None:
        """A piece of the answer as it comes (on the stream's thread). Not a step: the
        response's steps keep the whole answer only."""
        args: dict[str, Any] = {"piece": True}
        if replace:
            args["replace"] = True
        if self.on_event is not None:
            try:
                self.on_event(Step(kind="answer", text=text, args=args))
            except Exception:  # a broken listener must not break the answer
                log.exception("ask event listener failed")

    def on_delta(self, delta: Delta) -> None:
        if delta.kind == "content":
            self.stream.feed(delta.text)

    def waiting(self) -> None:
        """The model has been silent for a second: say so (the timer is in the client)."""
        self.emit(
            "status",
            f"Waiting for the model ({self.llm.model or 'the server’s model'} at {self.llm.host})…",
        )

    def check_cancel(self) -> None:
        if self.cancel.is_set():
            raise LlmCancelled("Cancelled.")

    def respond(
        self,
        stop: StopReason,
        answer: str,
        sources: list[Source],
        numbered: list[SearchHit] | None = None,
        *,
        grounded_answer: bool = True,
        folded: str | None = None,
    ) -> AskOutcome:
        kind: AskEventKind = (
            "answer"
            if stop in ("answer", "step_limit", "length", "degenerate")
            else "clarify"
            if stop == "clarify"
            else "error"
        )
        if self.list_note and kind == "answer":
            answer = f"{answer}\n\n{self.list_note}"
        if stop == "cancelled":
            self.stream.abandon()
        else:
            self.stream.close()
            self.emit(kind, answer)
        if stop in ("answer", "clarify", "step_limit", "length", "degenerate"):
            # History keeps questions and grounded answers only: an answer nothing
            # supports would go back to the model as if it were true.
            kept = answer if grounded_answer and self.mode != "fallback" else ""
            root = self._topic.root if self._topic is not None else self.params.question
            self.agent.conversations.add(
                self.conversation_id, self.params.question, kept, stop, topic=root
            )
        response = AskResponse(
            answer=answer,
            sources=citations.merge_sources(sources)[:MAX_SOURCES],
            stop=stop,
            steps=list(self.steps),
            usage=self.meter.usage(),
            mode=self.mode,
            grounded=grounded_answer,
            conversation_id=self.conversation_id,
            dropped=self.dropped,
            verdict=verdict_of(stop, self.mode, grounded_answer),
            mode_reason=self.mode_reason or None,
            folded=folded,
        )
        return AskOutcome(response, numbered if numbered is not None else self.numbered_out)

    def model_call(
        self,
        messages: list[dict[str, Any]],
        tools: list[Any] | None = None,
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        show: bool = True,
    ) -> ChatResult:
        """One model turn. A reply with no text (and no tool call) is asked once more;
        a second empty one ends the request with `stop: "empty"`. `show`: its text is
        streamed as the answer (not when it can only be set aside, see `loop.py`)."""
        for attempt in (1, 2):
            self.check_cancel()
            try:
                result = self._watched_chat(messages, tools, max_tokens, temperature, show)
            except LlmCancelled:
                self.stream.abandon()  # nothing more goes out once Stop was pressed
                raise
            if result.tool_calls:
                self.stream.restart()  # what it wrote before its tool calls is not the answer
            self.meter.add(result)
            if result.thinking:
                self.emit("thinking", result.thinking)
            if result.tool_calls or result.content.strip() or result.truncated or self.stopped:
                return result
            if attempt == 1:
                self.emit("status", "The model's reply was empty: asking it once more.")
        found = (
            "What was found:\n" + self.found.report()
            if self.found.sources or self.found.notes
            else "Nothing was found before that."
        )
        raise Stop(
            "empty",
            f"The model ({self.llm.model}) returned an empty reply twice, so there is no "
            f"answer. Try again, rephrase the question, or use another model.\n\n{found}",
            sources=self.found.sources,
        )

    def _watched_chat(
        self,
        messages: list[dict[str, Any]],
        tools: list[Any] | None,
        max_tokens: int | None,
        temperature: float | None,
        show: bool = True,
    ) -> ChatResult:
        """One model call whose text is watched as it streams (`degenerate.Watch`): a reply
        that degenerates is stopped there, its stream closed, and its result is the text
        before the degeneration (`done_reason` "degenerate"; `self.stopped` says why)."""
        started = time.monotonic()
        watch = degenerate.Watch()
        pieces = 0
        stream = self.llm.chat_stream(
            messages,
            tools,
            cancel=self.cancel,
            on_wait=self.waiting,
            max_tokens=max_tokens,
            temperature=temperature,
        )
        try:
            for item in stream:
                if isinstance(item, ChatResult):
                    return item
                if show:
                    self.on_delta(item)
                if item.kind != "content":
                    continue
                pieces += 1
                found = watch.feed(item.text)
                if found is not None:
                    self.stopped = found
                    # The server's counts never came: a streamed piece is about a token.
                    return ChatResult(
                        content=watch.text[: found.keep].rstrip(),
                        completion_tokens=pieces,
                        seconds=time.monotonic() - started,
                        done_reason="degenerate",
                    )
        finally:
            # A generator: closing it closes the HTTP stream when it was stopped early.
            close = getattr(stream, "close", None)
            if close is not None:
                close()
        raise LlmError(f"{self.llm.label} ended the stream without a result", host=self.llm.host)

    def early_note(self) -> str:
        """What the answer says when its model text was stopped early, else ""."""
        if self.stopped is None:
            return ""
        return f"> Stopped early: {self.stopped.note}, so its answer was cut there."
