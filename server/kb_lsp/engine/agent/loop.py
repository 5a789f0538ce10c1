"""The question-answering agent: references, clarification, the tool loop, degradation.

One `ask` goes through these stages, each of which may end it:

1. **References, before any model call.** `file`/`n` params and "file 2" / "the second
   one" / "#2" in the question are resolved against the client's last numbered list; an
   N that does not exist ends the request with a clear answer (`stop: "error"`). A file
   named in the question ("my brief") that matches several files ends it with a question
   back (`stop: "clarify"`), its candidates numbered: they become the client's list, so
   the reply "the first one" or "file 2" continues the original question.
2. **The mode**, from what the server says about the model (`kb.llm.mode` can force
   it), announced as a `status` step: `agent` (the model calls tools: stage 4),
   `grounded` (it does not: stage 5), or `fallback` (no model can answer: stage 6).
3. **A bare summary request** of one resolved file ("summarize file 1") runs the
   summarizer directly: one tool step, no model turn spent on choosing the tool.
4. **The tool loop** (mode `agent`). The model gets the system prompt, earlier turns of
   the conversation (answers only, without usage blocks), the question annotated with the
   resolved paths, and the tools. At most `kb.agent.maxSteps` tool calls are run; when the
   model asks for more, the request stops (`stop: "step_limit"`) with what was found so
   far. A tool error goes back to the model and into the steps; the same failing call is
   never run twice (the request stops with the error instead), and errors the answer does
   not mention are appended to it.
5. **Grounded** (mode `grounded`, `grounded.py`): the question is searched, the passages
   graded, and the best ones given to the model as numbered sources it must cite.
6. **Without a model** (nothing at the address, model missing, another API, a refused
   key) the answer is the best passages from the same retrieval with their sources, under
   "No model: here are the best passages"; a bare summary request gets an extractive
   summary. Why there is no model, with the fix, is one `status` step, said once.

Honest endings: a reply cut at the token limit is `stop: "length"` (the partial answer
and a note); a reply with no text is asked once more, then `stop: "empty"`. An answer
that cites none of what it was given is `grounded: false`.

Everything a client sees streams through `on_event` as `Step`s (status, thinking,
tool_call with its arguments, tool_result summary, and the final answer / clarify /
error), and every step is also in the response. After about a second of silence from the
model a "Waiting for the model…" `status` step is sent. Usage (model calls, tokens,
seconds) is only in `response.usage`. `cancel` stops the model stream and the loop at
once (`"cancelled"`).
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from kb_lsp.config import Settings
from kb_lsp.engine.agent import (
    citations,
    grounded,
    grounded_answer,
    prompts,
    references,
    sampling,
)
from kb_lsp.engine.agent.answer_stream import AnswerStream
from kb_lsp.engine.agent.budget import CHARS_PER_TOKEN, estimate_tokens, fit, tools_tokens
from kb_lsp.engine.agent.conversations import Conversations, Turn
from kb_lsp.engine.agent.errors import InvalidInput
from kb_lsp.engine.agent.fallback import degraded_answer
from kb_lsp.engine.agent.summarize import Summarizer
from kb_lsp.engine.agent.tools import (
    ALL_TOOLS,
    FILE_TOOLS,
    Toolbox,
    ToolError,
    ToolOutput,
    source_of,
)
from kb_lsp.engine.agent.usage import Meter
from kb_lsp.engine.knowledge import FileInfo, KnowledgeBase
from kb_lsp.engine.llm import (
    ChatModel,
    ChatResult,
    Delta,
    EmptyAnswer,
    LlmCancelled,
    LlmError,
    ModelUnavailable,
    create_llm,
)
from kb_lsp.engine.llm.base import WAIT_NOTICE_SECONDS
from kb_lsp.engine.workspace.files import UnreadableFile
from kb_lsp.protocol import (
    AskEventKind,
    AskMode,
    AskParams,
    AskResponse,
    Range,
    SearchHit,
    Source,
    Step,
    StopReason,
    SummarizeResponse,
)

log = logging.getLogger(__name__)

MAX_SOURCES = 8
# Seconds to ask the server about the model before any answer (at most the configured
# timeout): a server that does not answer that is taken as hung, and passages answer.
CAPABILITIES_TIMEOUT = 10.0
# A search's tool_result summary ("10 results: a.md, b.md …", "No results for …").
_SEARCH_NOTE = re.compile(r"\d+ results: |No results for ")
STEP_TEXT_CHARS = 4000  # a thinking step longer than this is cut (the panel is not a log)
_CITATION = re.compile(
    r"(?P<path>[\w./-]+\.(?:md|markdown))`?"
    r"(?:\s*[:#]\s*L?(?P<a>\d+)(?:\s*[-–]\s*L?(?P<b>\d+))?"
    r"|,?\s+lines?\s+(?P<c>\d+)(?:\s*[-–]\s*(?P<d>\d+))?)?",
    re.I,
)


@dataclass
class AskOutcome:
    response: AskResponse
    # The numbered list the client should remember from now on ("file N" refers to it):
    # the candidates of a clarification, or the last search the agent showed. None when
    # this request showed no new list (keep the previous one).
    numbered: list[SearchHit] | None = None


class _Stop(Exception):
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


def _no_list(ref_text: str, numbered: list[SearchHit] | None) -> str:
    if not numbered:
        return (
            f"There is no {ref_text}: there is no numbered list to pick from yet. "
            "Search first, then ask about “file N”."
        )
    count = len(numbered)
    return (
        f"There is no {ref_text}: the last list has {count} "
        f"{'entry' if count == 1 else 'entries'} (1–{count}). Pick one of those, or search again."
    )


def clarify_list(infos: list[FileInfo]) -> list[SearchHit]:
    """Candidates as a numbered list, so that "file 2" refers to them next."""
    return [
        SearchHit(
            n=n,
            uri=info.uri,
            path=info.path,
            root=info.root,
            title=info.title,
            label="filename match",
            score=1.0,
            snippet="",
            heading="",
            range=Range.of_lines(0, 0),
        )
        for n, info in enumerate(infos, start=1)
    ]


def _lines(source: Source) -> str:
    start, end = (
        source.range.start.line + 1,
        max(source.range.start.line + 1, source.range.end.line),
    )
    return f"line {start}" if start == end else f"lines {start}–{end}"


def sources_line(sources: list[Source]) -> str:
    return "Sources: " + "; ".join(f"`{s.path}` {_lines(s)}" for s in sources)


class Agent:
    """Answers questions over one `KnowledgeBase` with the configured model
    (`kb.llm.*`, else `kb.ollama.*`: `create_llm`).

    Thread-safe: requests share only the conversation memory (locked) and the knowledge
    base (whose readers may run concurrently).
    """

    def __init__(
        self,
        kb: KnowledgeBase,
        settings: Settings,
        llm: ChatModel | None = None,
        *,
        conversations: Conversations | None = None,
    ) -> None:
        self.kb = kb
        self.settings = settings
        # Made on first use: the HTTP clients take longer to import than a one-shot
        # command's search, which never talks to the model.
        self._llm = llm
        self._summarizer: Summarizer | None = None
        self._made = threading.RLock()
        self.conversations = conversations or Conversations()

    @property
    def llm(self) -> ChatModel:
        with self._made:
            if self._llm is None:
                self._llm = create_llm(self.settings)
            return self._llm

    @property
    def has_llm(self) -> bool:
        """Whether the model's client is made yet."""
        return self._llm is not None

    @property
    def summarizer(self) -> Summarizer:
        with self._made:
            if self._summarizer is None:
                self._summarizer = Summarizer(self.kb, self.llm)
            return self._summarizer

    # --- kb/ask --------------------------------------------------------------------------

    def ask(
        self,
        params: AskParams,
        *,
        numbered: list[SearchHit] | None = None,
        on_event: Callable[[Step], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> AskOutcome:
        """Answer `params.question`. Never raises for what can go wrong in a request
        (bad references, tool errors, no model, cancellation): those end in `stop`."""
        request = _Ask(self, params, numbered, on_event, cancel or threading.Event())
        try:
            return request.run()
        finally:
            request.stream.abandon()  # its thread ends with the request, whatever happened

    # --- kb/summarize ----------------------------------------------------------------------

    def target(self, file: str | None, n: int | None, numbered: list[SearchHit] | None) -> FileInfo:
        """The file `kb/summarize {file?, n?}` means; `InvalidInput` when there is none."""
        if file:
            try:
                return Toolbox(self.kb, self.summarizer).file(file)
            except ToolError as err:
                raise InvalidInput(str(err)) from err
        if n is not None:
            if not numbered or n > len(numbered) or n < 1:
                raise InvalidInput(_no_list(f"result {n}", numbered))
            info = self.kb.file_info(numbered[n - 1].path)
            if info is None:
                raise InvalidInput(f"{numbered[n - 1].path} is no longer in the knowledge base.")
            return info
        raise InvalidInput("Say which file to summarize: give `file` (a path) or `n`.")

    def summarize(
        self,
        file: str | None = None,
        n: int | None = None,
        *,
        numbered: list[SearchHit] | None = None,
        cancel: threading.Event | None = None,
    ) -> SummarizeResponse:
        """`kb/summarize`: the cached or a new model summary; an extractive one, marked
        `extractive`, when no model can answer. Raises `InvalidInput` for a bad target,
        `LlmCancelled` when cancelled, other `LlmError`s (timeout, HTTP 500, `EmptyAnswer`)
        as they are. A summary cut at the token limit says so at its end."""
        info = self.target(file, n, numbered)
        try:
            summary = self.summarizer.summarize(info, cancel=cancel or threading.Event())
        except ModelUnavailable as err:
            log.info("summary of %s is extractive: %s", info.path, err)
            summary = self.summarizer.extractive(info)
        except UnreadableFile as err:
            raise InvalidInput(f"{info.path} cannot be read now: {err.reason}.") from err
        text = summary.text
        if summary.truncated:
            text += "\n\n" + cut_off_note(self.llm, sampling.summary_max_tokens(self.llm))
        return SummarizeResponse(
            path=info.path,
            summary=text,
            cached=summary.cached,
            extractive=summary.extractive,
        )


@dataclass
class _Found:
    sources: list[Source] = field(default_factory=list)
    passages: list[grounded.Passage] = field(default_factory=list)  # grounded mode
    notes: list[str] = field(default_factory=list)  # tool_result summaries, in order
    errors: list[str] = field(default_factory=list)

    def add(self, output: ToolOutput) -> None:
        self.notes.append(output.summary)
        if output.error:
            self.errors.append(output.summary)
        for source in output.sources:
            if not any(s.path == source.path and s.range == source.range for s in self.sources):
                self.sources.append(source)

    def report(self) -> str:
        """What was found, once: how many searches (not each one's list of files, which
        repeat), the other steps, then each file found with its lines."""
        searches = [n for n in self.notes if _SEARCH_NOTE.match(n)]
        others = dict.fromkeys(
            n for n in self.notes if not n.startswith("Error") and not _SEARCH_NOTE.match(n)
        )
        lines = [f"- {len(searches)} search{'es' if len(searches) > 1 else ''}"] if searches else []
        lines += [f"- {note}" for note in others]
        if self.sources:
            merged = citations.merge_sources(
                [s.model_copy(update={"n": None}) for s in self.sources]
            )
            by_file: dict[str, list[str]] = {}
            for source in merged:
                by_file.setdefault(source.path, []).append(_lines(source))
            shown = list(by_file.items())[:MAX_SOURCES]
            lines.append(
                "- Found in: " + "; ".join(f"`{path}` {', '.join(spans)}" for path, spans in shown)
            )
        return "\n".join(lines) if lines else "- nothing yet"


def cut_off_note(llm: ChatModel, limit: int | None = None) -> str:
    setting = "kb.llm.maxTokens"
    return (
        f"> Cut off: the model reached its limit of {limit or llm.num_predict} tokens for "
        "one reply "
        f"({setting}). Ask a narrower question, or raise the limit."
    )


class _Ask:
    """One `kb/ask` request."""

    def __init__(
        self,
        agent: Agent,
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
        self.numbered_out: list[SearchHit] | None = None
        self.on_event = on_event
        self.cancel = cancel
        self.meter = Meter()
        self.steps: list[Step] = []
        self.found = _Found()
        self.mode: AskMode = "agent"
        self.conversation_id = params.conversation_id or Conversations.new_id()
        self.history = agent.conversations.turns(self.conversation_id)
        self.toolbox = Toolbox(self.kb, agent.summarizer)
        self.tool_names = FILE_TOOLS if (params.file or params.n) else ALL_TOOLS
        self.stream = AnswerStream(self.send_piece)
        self.dropped: list[str] = []  # citations taken out of the answer

    # --- plumbing --------------------------------------------------------------------------

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
    ) -> AskOutcome:
        kind: AskEventKind = (
            "answer"
            if stop in ("answer", "step_limit", "length")
            else "clarify"
            if stop == "clarify"
            else "error"
        )
        if stop == "cancelled":
            self.stream.abandon()
        else:
            self.stream.close()
            self.emit(kind, answer)
        if stop in ("answer", "clarify", "step_limit", "length"):
            # History keeps questions and grounded answers only: an answer nothing
            # supports would go back to the model as if it were true.
            kept = answer if grounded_answer and self.mode != "fallback" else ""
            self.agent.conversations.add(self.conversation_id, self.params.question, kept, stop)
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
        )
        return AskOutcome(response, numbered if numbered is not None else self.numbered_out)

    def model_call(
        self,
        messages: list[dict[str, Any]],
        tools: list[Any] | None = None,
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> ChatResult:
        """One model turn. A reply with no text (and no tool call) is asked once more;
        a second empty one ends the request with `stop: "empty"`."""
        for attempt in (1, 2):
            self.check_cancel()
            try:
                result = self.llm.chat(
                    messages,
                    tools,
                    cancel=self.cancel,
                    on_wait=self.waiting,
                    on_delta=self.on_delta,
                    max_tokens=max_tokens,
                    temperature=temperature,
                )
            except LlmCancelled:
                self.stream.abandon()  # nothing more goes out once Stop was pressed
                raise
            if result.tool_calls:
                self.stream.restart()  # what it wrote before its tool calls is not the answer
            self.meter.add(result)
            if result.thinking:
                self.emit("thinking", result.thinking)
            if result.tool_calls or result.content.strip() or result.truncated:
                return result
            if attempt == 1:
                self.emit("status", "The model's reply was empty: asking it once more.")
        found = (
            "What was found:\n" + self.found.report()
            if self.found.sources or self.found.notes
            else "Nothing was found before that."
        )
        raise _Stop(
            "empty",
            f"The model ({self.llm.model}) returned an empty reply twice, so there is no "
            f"answer. Try again, rephrase the question, or use another model.\n\n{found}",
            sources=self.found.sources,
        )

    # --- the request -----------------------------------------------------------------------

    def run(self) -> AskOutcome:
        focus: list[FileInfo] = []
        summary_only = False
        try:
            self.check_cancel()
            focus, question, plain, spans = self.resolve()
            summary_only = len(focus) == 1 and (
                references.is_summarize_only(plain, spans)
                or (
                    bool(self.params.file or self.params.n)
                    and references.is_summarize_only(plain, [])
                )
            )
            self.mode = self.choose_mode()
            if summary_only:
                return self.summarize_one(focus[0])
            if self.mode == "grounded":
                return self.grounded(focus, question)
            return self.loop(focus, question, spans)
        except _Stop as stop:
            return self.respond(
                stop.stop, stop.answer, stop.sources, stop.numbered, grounded_answer=stop.grounded
            )
        except LlmCancelled:
            return self.respond("cancelled", "Cancelled.", self.found.sources)
        except ModelUnavailable as err:
            return self.fallback(err, focus, summary_only)
        except UnreadableFile as err:
            answer = f"A file the question needs cannot be read now: {err.reason}."
            return self.respond("error", answer, self.found.sources)
        except LlmError as err:
            self.emit("error", err.message)
            answer = f"{err.message}\n\nWhat I found before that:\n{self.found.report()}"
            return self.respond("error", answer, self.found.sources)

    def choose_mode(self) -> AskMode:
        """`agent` or `grounded`, from the server's word on the model (`kb.llm.mode`
        forces one); raises `ModelUnavailable` when no model can answer."""
        # The server is asked first; a silent one gets the same "waiting" step as a
        # silent model (a timer: the probe is one blocking request).
        timer = threading.Timer(WAIT_NOTICE_SECONDS, self.waiting)
        timer.daemon = True
        timer.start()
        try:
            caps = self.llm.capabilities(timeout=CAPABILITIES_TIMEOUT)
        finally:
            timer.cancel()
        forced = self.llm.config.mode
        model = self.llm.model
        if forced == "agent":
            mode: AskMode = "agent"
            why = "kb.llm.mode is agent"
        elif forced == "grounded":
            mode, why = "grounded", "kb.llm.mode is grounded"
        elif caps.tools is False:
            mode, why = "grounded", f"{model} does not call tools"
        elif caps.tools is True:
            mode, why = "agent", f"{model} calls tools"
        else:
            mode, why = "agent", f"the server does not say whether {model} calls tools"
        text = (
            "the model searches the notes with tools"
            if mode == "agent"
            else "the best passages are given to the model to answer from, with citations"
        )
        self.emit("status", f"Mode: {mode} — {text} ({why}).")
        return mode

    def fallback(self, err: LlmError, focus: list[FileInfo], summary_only: bool) -> AskOutcome:
        """No model can answer: say why once (a status step), then what can be done
        without one: an extractive summary, or the best passages."""
        self.mode = "fallback"
        self.emit("status", f"No model: {err.message}")
        if summary_only and len(focus) == 1:
            info = focus[0]
            summary = self.agent.summarizer.extractive(info)
            self.emit(
                "tool_result", f"Extractive summary of {info.path}", tool="summarize_document"
            )
            source = source_of(info, 0, max(0, summary.line_count - 1))
            answer = (
                f"**Extractive summary** (no model: the first sentence of each section)\n\n"
                f"{summary.text}\n\n{sources_line([source])}"
            )
            return self.respond("answer", answer, [source])
        degraded = degraded_answer(self.kb, self.params.question, focus)
        return self.respond("answer", degraded.answer, degraded.sources, degraded.numbered)

    # --- references --------------------------------------------------------------------------

    def resolve(self) -> tuple[list[FileInfo], str, str, list[tuple[int, int]]]:
        """Focus files, the question for the model (references annotated with their
        paths), the question as written, and the spans of its references in it."""
        question = self.params.question
        focus: list[FileInfo] = []
        if self.params.file:
            try:
                focus.append(self.toolbox.file(self.params.file))
            except ToolError as err:
                raise _Stop("error", str(err)) from err
        elif self.params.n is not None:
            focus.append(self.numbered_file(self.params.n, f"result {self.params.n}"))

        after_clarify = bool(self.history) and self.history[-1].stop == "clarify"
        refs = references.find_numbered(question, after_clarify=after_clarify)
        spans = [(r.start, r.end) for r in refs]
        annotations: list[tuple[int, str]] = []
        for ref in refs:
            n = ref.n if ref.n is not None else len(self.numbered_in or [])
            info = self.numbered_file(n, ref.text)
            self.emit("thinking", f"“{ref.text}” is `{info.path}` (number {n} of the last list).")
            annotations.append((ref.end, f" (`{info.path}`)"))
            if info not in focus:
                focus.append(info)

        if after_clarify and refs and references.is_reference_only(question, spans):
            # The reply to "which one?": go on with the question that asked it.
            previous: Turn = self.history[-1]
            self.emit("thinking", f"Continuing “{previous.question}” with `{focus[-1].path}`.")
            question = previous.question
            by_name = references.find_by_name(question, self.kb.files())
            spans = [(r.start, r.end) for r in by_name]
            return focus, question, question, spans

        if not refs and not focus:
            for name_ref in references.find_by_name(question, self.kb.files()):
                if len(name_ref.candidates) == 1:
                    info = name_ref.candidates[0]
                    self.emit("thinking", f"“{name_ref.text}” is `{info.path}`.")
                    annotations.append((name_ref.end, f" (`{info.path}`)"))
                    spans.append((name_ref.start, name_ref.end))
                    if info not in focus:
                        focus.append(info)
                elif len(name_ref.candidates) > 1:
                    raise self.clarify(name_ref)
                else:
                    # Before any search: answering from other files would be worse.
                    raise _Stop("error", references.not_found(name_ref.text, self.kb.files()))
        return focus, self.annotate(question, annotations), question, spans

    def numbered_file(self, n: int, text: str) -> FileInfo:
        numbered = self.numbered_in or []
        if n < 1 or n > len(numbered):
            raise _Stop("error", _no_list(text, self.numbered_in))
        hit = numbered[n - 1]
        info = self.kb.file_info(hit.path)
        if info is None:
            raise _Stop(
                "error", f"{text} was `{hit.path}`, which is no longer in the knowledge base."
            )
        return info

    def clarify(self, ref: references.NameRef) -> _Stop:
        candidates = sorted(ref.candidates, key=lambda f: f.path)
        hits = clarify_list(candidates)
        lines = [f"“{ref.text}” could mean {len(hits)} files. Which one do you mean?"]
        lines += [f"{h.n}. `{h.path}` — {h.title}" for h in hits]
        lines.append("Answer with the number (“file 2”, “the first one”) or the file name.")
        sources = [Source(n=h.n, uri=h.uri, path=h.path, range=h.range) for h in hits]
        return _Stop("clarify", "\n".join(lines), sources=sources, numbered=hits)

    @staticmethod
    def annotate(question: str, annotations: list[tuple[int, str]]) -> str:
        for at, text in sorted(annotations, reverse=True):
            question = question[:at] + text + question[at:]
        return question

    # --- a bare summary ----------------------------------------------------------------------

    def summarize_one(self, info: FileInfo) -> AskOutcome:
        args = {"path": info.path}
        self.emit(
            "tool_call",
            f"Calling summarize_document with {json.dumps(args)}",
            tool="summarize_document",
            args=args,
        )
        try:
            summary = self.agent.summarizer.summarize(
                info, cancel=self.cancel, meter=self.meter, on_wait=self.waiting
            )
        except (LlmCancelled, ModelUnavailable):
            raise
        except EmptyAnswer as err:
            self.emit("tool_result", f"Error: {err.message}", tool="summarize_document")
            raise _Stop("empty", err.message) from err
        except LlmError as err:
            self.emit("tool_result", f"Error: {err.message}", tool="summarize_document")
            raise _Stop("error", err.message) from err
        cached = " (cached)" if summary.cached else ""
        self.emit("tool_result", f"Summarized {info.path}{cached}", tool="summarize_document")
        source = source_of(info, 0, max(0, summary.line_count - 1))
        if summary.truncated:
            note = cut_off_note(self.llm, sampling.summary_max_tokens(self.llm))
            answer = f"{summary.text}\n\n{note}\n\n{sources_line([source])}"
            return self.respond("length", answer, [source])
        answer = f"{summary.text}\n\n{sources_line([source])}"
        return self.respond("answer", answer, [source])

    # --- grounded: retrieve, grade, answer with citations --------------------------------------

    def grounded(self, focus: list[FileInfo], question: str) -> AskOutcome:
        overhead = estimate_tokens(prompts.GROUNDED_SYSTEM + prompts.GROUNDED_USER + question)
        history_tokens = sum(estimate_tokens(t.question + t.answer) for t in self.history)
        limit = sampling.grounded_max_tokens(self.llm)
        budget = max(1024, self.llm.num_ctx - limit - overhead - 64)
        passage_chars = int(max(600, budget - history_tokens) * CHARS_PER_TOKEN)
        count, each = grounded.fitted(self.llm.num_ctx)
        # A follow-up ("and for Peru?") is searched together with the question before it.
        wanted = f"{self.history[-1].question}\n{question}" if self.history else question
        passages, _files = grounded.gather(
            self.kb,
            wanted,
            focus,
            budget_chars=min(passage_chars, count * each),
            max_passages=count,
            passage_chars=each,
        )
        self.found.passages = passages
        self.found.sources = [p.source() for p in passages]
        if not passages:
            where = " in " + ", ".join(f"`{f.path}`" for f in focus) if focus else ""
            raise _Stop(
                "answer",
                f"Nothing{where} matches the question well enough to answer it from the "
                "notes (results below the relevance threshold are not shown).",
            )
        listing = "; ".join(f"[{p.n}] {p.path} lines {p.start + 1}–{p.end + 1}" for p in passages)
        self.emit("tool_result", f"{len(passages)} passages for the model: {listing}")
        if not focus:
            # "file 2" now means passage 2, as the answer numbers them.
            self.numbered_out = [p.hit() for p in passages]
        history = [(t.question, t.answer) for t in self.history]
        messages = grounded.messages(question, passages, history, focus)
        result = self.model_call(
            fit(messages, budget), max_tokens=limit, temperature=sampling.TEMPERATURE
        )
        composed = grounded_answer.compose(result.content, passages, question)
        self.dropped = composed.dropped
        # The pending answer without dropped citations, and after the passages' own
        # sentences when the check failed.
        self.stream.replace(composed.lead)
        # Every passage is a source of the answer, numbered as the model saw it: it is
        # what the answer was made from, whatever the model cites.
        shown = [p.source() for p in passages]
        if result.truncated:
            text = composed.text(cut_off_note(self.llm, limit))
            return self.respond("length", text, shown, grounded_answer=composed.grounded)
        return self.respond("answer", composed.text(), shown, grounded_answer=composed.grounded)

    # --- the tool loop -----------------------------------------------------------------------

    def loop(
        self, focus: list[FileInfo], question: str, spans: list[tuple[int, int]]
    ) -> AskOutcome:
        max_steps = self.agent.settings.agent.max_steps
        schemas = self.toolbox.schemas(self.tool_names)
        budget = max(1024, self.llm.num_ctx - self.llm.num_predict - tools_tokens(schemas))
        # One tool result may take a third of the prompt budget; older ones are elided
        # by `fit` when the total grows past it.
        self.toolbox.result_chars = max(2000, int(budget * CHARS_PER_TOKEN / 3))

        messages: list[dict[str, Any]] = [
            {
                "role": "system",
                "content": prompts.SYSTEM.format(max_steps=max_steps)
                + prompts.metadata_hint(self.kb.schema(), date.today()),
            }
        ]
        for turn in self.history:
            messages.append({"role": "user", "content": turn.question})
            if turn.answer:
                messages.append({"role": "assistant", "content": turn.answer})
        user = question
        if self.params.file or self.params.n:
            user += "\n\n" + prompts.FOCUS_ONE.format(path=focus[0].path, title=focus[0].title)
        messages.append({"role": "user", "content": user})

        used = 0
        failed: dict[str, str] = {}
        while True:
            result = self.model_call(fit(messages, budget), schemas)
            if not result.tool_calls:
                return self.finish(result.content, truncated=result.truncated)
            if result.content:
                self.emit("thinking", result.content)
            messages.append(
                {
                    "role": "assistant",
                    "content": result.content,
                    "tool_calls": [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": c.arguments},
                        }
                        for c in result.tool_calls
                    ],
                }
            )
            for call in result.tool_calls:
                self.check_cancel()
                key = call.name + json.dumps(call.arguments, sort_keys=True, default=str)
                if key in failed:
                    raise _Stop(
                        "error",
                        f"{failed[key].removeprefix('Error: ')}\n\nThe model asked for the same "
                        f"failing call again, so I stopped. What I found before that:\n"
                        f"{self.found.report()}",
                        sources=self.found.sources,
                    )
                if used >= max_steps:
                    partial = f"\n\n{result.content}" if result.content else ""
                    raise _Stop(
                        "step_limit",
                        prompts.STEP_LIMIT.format(max_steps=max_steps)
                        + "\n"
                        + self.found.report()
                        + partial,
                        sources=self.found.sources,
                    )
                used += 1
                self.emit(
                    "tool_call",
                    f"Calling {call.name} with {json.dumps(call.arguments, ensure_ascii=False)}",
                    tool=call.name,
                    args=dict(call.arguments),
                )
                output = self.toolbox.run(
                    call.name,
                    call.arguments,
                    allowed=self.tool_names,
                    cancel=self.cancel,
                    meter=self.meter,
                )
                self.emit("tool_result", output.summary, tool=call.name)
                self.found.add(output)
                if output.error:
                    failed[key] = output.summary
                    output.text += (
                        "\nTell the user about this error if it matters for the answer; "
                        "do not repeat this call."
                    )
                if output.hits:
                    self.numbered_out = output.hits
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": call.id,
                        "tool_name": call.name,
                        "content": output.text,
                    }
                )

    def finish(self, content: str, *, truncated: bool = False) -> AskOutcome:
        answer = content.strip()
        for error in dict.fromkeys(self.found.errors):
            message = error.removeprefix("Error: ")
            if message[:60] not in answer:
                answer += f"\n\n> Tool error: {message}"
        sources = self.cited(answer)
        cites = bool(sources)
        if truncated:
            answer = f"{answer}\n\n{cut_off_note(self.llm)}".lstrip()
        if not sources and self.found.sources:
            sources = self.found.sources[:MAX_SOURCES]
            answer += "\n\n" + sources_line(sources)
        return self.respond(
            "length" if truncated else "answer", answer, sources, grounded_answer=cites
        )

    def cited(self, answer: str) -> list[Source]:
        """The sources the answer cites by path (with lines when it gives them)."""
        out: list[Source] = []
        for match in _CITATION.finditer(answer):
            path = match.group("path").strip("`[]()").lstrip("./")
            known = [s for s in self.found.sources if s.path == path]
            info = None if known else self.kb.file_info(path)
            if not known and info is None:
                continue
            first = match.group("a") or match.group("c")
            last = match.group("b") or match.group("d") or first
            if first is not None and last is not None:
                start, end = int(first) - 1, max(int(first), int(last)) - 1
                base = next(
                    (
                        s
                        for s in known
                        if s.range.start.line <= end and s.range.end.line - 1 >= start
                    ),
                    known[0] if known else None,
                )
                uri = base.uri if base else info.uri if info else ""
                n = base.n if base else None
                source = Source(
                    n=n, uri=uri, path=path, range=Range.of_lines(max(0, start), max(0, end))
                )
            elif known:
                source = known[0]
            else:
                assert info is not None
                source = source_of(info, 0, 0)
            if not any(s.path == source.path and s.range == source.range for s in out):
                out.append(source)
        return out
