"""One `kb/ask` from its question to its answer: references, the mode, then one way to
answer. Each stage may end it:

1. **References, before any model call** (`focus.py`): `file`/`n` params and "file 2" /
   "the second one" / "#2" in the question, and files named in it ("my brief"); one that
   names nothing ends the request (`stop: "error"`), one that names several asks back
   which one is meant (`stop: "clarify"`).
2. **The mode**, from what the server says about the model (`kb.llm.mode` can force
   it), announced as a `status` step: `agent` (the model calls tools: stage 4),
   `grounded` (it does not: stage 5), or `fallback` (no model can answer: stage 6).
3. **A bare summary request** of one resolved file ("summarize file 1") runs the
   summarizer directly: one tool step, no model turn spent on choosing the tool.
4. **The tool loop** (mode `agent`, `loop.py`): the model calls tools, within
   `kb.agent.maxSteps`, until it answers.
5. **Grounded** (mode `grounded`, `grounded_mode.py`): the question is searched, the
   passages graded, and the best ones given to the model as numbered sources it must cite.
6. **Without a model** (nothing at the address, model missing, another API, a refused
   key; `fallback.py`) the answer is the best passages from the same retrieval with their
   sources, under "No model: here are the best passages"; a bare summary request gets an
   extractive summary. Why there is no model, with the fix, is one `status` step, said
   once.

Honest endings: a reply cut at the token limit is `stop: "length"` (the partial answer
and a note); a reply with no text is asked once more, then `stop: "empty"`. An answer
that cites none of what it was given is `grounded: false`. `cancel` stops the model
stream and the loop at once (`"cancelled"`). What a client sees on the way is in
`request.py`.
"""

from __future__ import annotations

import json
import threading

from kb_lsp.engine.agent import grounded_mode, grounding, references, sampling
from kb_lsp.engine.agent.fallback import answer_without_model
from kb_lsp.engine.agent.focus import resolve
from kb_lsp.engine.agent.found import sources_line
from kb_lsp.engine.agent.loop import ToolLoop
from kb_lsp.engine.agent.request import AskOutcome, Request, Stop, cut_off_note
from kb_lsp.engine.agent.tools import source_of
from kb_lsp.engine.knowledge import FileInfo
from kb_lsp.engine.llm import EmptyAnswer, LlmCancelled, LlmError, ModelUnavailable
from kb_lsp.engine.llm.base import WAIT_NOTICE_SECONDS
from kb_lsp.engine.workspace.files import UnreadableFile
from kb_lsp.protocol import AskMode

# Seconds to ask the server about the model before any answer (at most the configured
# timeout): a server that does not answer that is taken as hung, and passages answer.
CAPABILITIES_TIMEOUT = 10.0


def run(request: Request) -> AskOutcome:
    """Answer the request. Never raises for what can go wrong in a request (bad
    references, tool errors, no model, cancellation): those end in `stop`."""
    focus: list[FileInfo] = []
    summary_only = False
    try:
        request.check_cancel()
        resolved = resolve(request)
        focus = resolved.files
        summary_only = len(focus) == 1 and (
            references.is_summarize_only(resolved.plain, resolved.spans)
            or (
                bool(request.params.file or request.params.n)
                and references.is_summarize_only(resolved.plain, [])
            )
        )
        request.mode = choose_mode(request)
        if summary_only:
            return summarize_one(request, focus[0])
        if request.params.lines and request.mode == "agent":
            # The selected lines are the passage: with tools the model would read the whole file.
            request.mode = "grounded"
            request.emit("status", "The selected lines are given to the model to answer from.")
        if request.mode == "grounded":
            return grounded_mode.answer(request, focus, resolved.question)
        return ToolLoop(request, focus, resolved.question).run()
    except Stop as stop:
        return request.respond(
            stop.stop, stop.answer, stop.sources, stop.numbered, grounded_answer=stop.grounded
        )
    except LlmCancelled:
        return request.respond("cancelled", "Cancelled.", request.found.sources)
    except ModelUnavailable as err:
        return answer_without_model(request, err, focus, summary_only)
    except UnreadableFile as err:
        answer = f"A file the question needs cannot be read now: {err.reason}."
        return request.respond("error", answer, request.found.sources)
    except LlmError as err:
        request.emit("error", err.message)
        answer = f"{err.message}\n\nWhat I found before that:\n{request.found.report()}"
        return request.respond("error", answer, request.found.sources)


def choose_mode(request: Request) -> AskMode:
    """`agent` or `grounded`, from the server's word on the model (`kb.llm.mode`
    forces one); raises `ModelUnavailable` when no model can answer."""
    llm = request.llm
    # The server is asked first; a silent one gets the same "waiting" step as a
    # silent model (a timer: the probe is one blocking request).
    timer = threading.Timer(WAIT_NOTICE_SECONDS, request.waiting)
    timer.daemon = True
    timer.start()
    try:
        caps = llm.capabilities(timeout=CAPABILITIES_TIMEOUT)
    finally:
        timer.cancel()
    forced = llm.config.mode
    model = llm.model
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
    request.mode_reason = why
    said = f"Mode: {mode} — {text} ({why})."
    if caps.chat_template is False:
        # A base model (no chat template: the server's fallback or the raw prompt) goes on
        # writing the prompt rather than answering it; said once, here and in the answer.
        request.template_note = (
            f"> Note: {model or 'the model'} has no chat template of its own, so the server "
            "gives it the bare prompt; such a model tends to continue the prompt rather "
            "than answer. Use an instruction-tuned (chat) model."
        )
        said += f" {model or 'The model'} has no chat template of its own: expect it to "
        said += "continue the prompt rather than answer."
    request.emit("status", said)
    return mode


def summarize_one(request: Request, info: FileInfo) -> AskOutcome:
    """A bare summary request: the summarizer, as one tool step of the request."""
    args = {"path": info.path}
    request.emit(
        "tool_call",
        f"Calling summarize_document with {json.dumps(args)}",
        tool="summarize_document",
        args=args,
    )
    try:
        summary = request.agent.summarizer.summarize(
            info,
            cancel=request.cancel,
            meter=request.meter,
            on_wait=request.waiting,
            on_text=request.stream.feed,  # the summary streams as the model writes it
        )
    except (LlmCancelled, ModelUnavailable):
        raise
    except EmptyAnswer as err:
        request.emit("tool_result", f"Error: {err.message}", tool="summarize_document")
        raise Stop("empty", err.message) from err
    except LlmError as err:
        request.emit("tool_result", f"Error: {err.message}", tool="summarize_document")
        raise Stop("error", err.message) from err
    cached = " (cached)" if summary.cached else ""
    request.emit("tool_result", f"Summarized {info.path}{cached}", tool="summarize_document")
    source = source_of(info, 0, max(0, summary.line_count - 1))
    # A summary is a claim about the file too: checked against its text.
    supported = grounding.summary_supported(
        summary.text, info.path, request.kb.read_text(info.path)
    )
    if summary.truncated:
        note = cut_off_note(request.llm, sampling.summary_max_tokens(request.llm))
        answer = f"{summary.text}\n\n{note}\n\n{sources_line([source])}"
        return request.respond("length", answer, [source], grounded_answer=supported)
    answer = f"{summary.text}\n\n{sources_line([source])}"
    return request.respond("answer", answer, [source], grounded_answer=supported)
