"""The tool loop (mode `agent`): the model searches and reads the notes with tools until
it answers.

The model gets the system prompt, earlier turns of the conversation (answers only,
without usage blocks), the question annotated with the resolved paths, and the tools.

Agent mode has to prove itself: a model whose server says it calls tools (a Hermes
template) may still answer the first turn from its weights, with no tool call, no
passages and nothing to check — tiny models do, every time. That answer is not used: the
question is answered in grounded mode (passages, quotes, the check), and the response's
`mode_reason` says why. So is a turn the server fails with an HTTP 5xx (llama.cpp answers
a tool call it cannot parse with a 500), said as an `error` step first. `kb.llm.mode:
agent` keeps the tool loop whatever the model does. At
most `kb.agent.maxSteps` tool calls are run; when the model asks for more, the request
stops (`stop: "step_limit"`) with what was found so far. A tool error goes back to the
model and into the steps; the same failing call is never run twice (the request stops
with the error instead), and errors the answer does not mention are appended to it. The
answer's sources are the files it cites by path, else what the tools found; an answer
that cites none of them is `grounded: false`.
"""

from __future__ import annotations

import json
from datetime import date
from typing import Any

from kb_lsp.engine.agent import citations, grounded_mode, prompts
from kb_lsp.engine.agent.budget import CHARS_PER_TOKEN, fit, tools_tokens
from kb_lsp.engine.agent.found import MAX_SOURCES, sources_line
from kb_lsp.engine.agent.request import AskOutcome, Request, Stop, cut_off_note
from kb_lsp.engine.knowledge import FileInfo
from kb_lsp.engine.llm import ChatResult, LlmError, ToolCall
from kb_lsp.protocol import StopReason


class ToolLoop:
    """One request's turns with the model, in mode `agent`."""

    def __init__(self, request: Request, focus: list[FileInfo], question: str) -> None:
        self.request = request
        llm, toolbox = request.llm, request.toolbox
        self.max_steps = request.agent.settings.agent.max_steps
        self.schemas = toolbox.schemas(request.tool_names)
        self.budget = max(1024, llm.num_ctx - llm.num_predict - tools_tokens(self.schemas))
        # One tool result may take a third of the prompt budget; older ones are elided
        # by `fit` when the total grows past it.
        toolbox.result_chars = max(2000, int(self.budget * CHARS_PER_TOKEN / 3))
        self.focus, self.question = focus, question
        self.messages = self.opening(focus, question)
        self.used = 0  # tool calls run
        self.failed: dict[str, str] = {}  # call -> its error, so it is never run again

    def opening(self, focus: list[FileInfo], question: str) -> list[dict[str, Any]]:
        """The system prompt, the conversation's earlier turns, and the question."""
        request = self.request
        messages: list[dict[str, Any]] = [
            {
                "role": "system",
                "content": prompts.SYSTEM.format(max_steps=self.max_steps)
                + prompts.metadata_hint(request.kb.schema(), date.today()),
            }
        ]
        for turn in request.history:
            messages.append({"role": "user", "content": turn.question})
            if turn.answer:
                messages.append({"role": "assistant", "content": turn.answer})
        user = question
        if request.params.file or request.params.n:
            user += "\n\n" + prompts.FOCUS_ONE.format(path=focus[0].path, title=focus[0].title)
        messages.append({"role": "user", "content": user})
        return messages

    def run(self) -> AskOutcome:
        forced = self.request.llm.config.mode == "agent"
        while True:
            try:
                # In auto mode a first reply that calls no tool is set aside for a
                # grounded answer: streamed, a terminal would keep its opening words.
                result = self.request.model_call(
                    fit(self.messages, self.budget), self.schemas, show=forced or self.used > 0
                )
            except LlmError as err:
                if forced or not server_failed(err):
                    raise
                self.request.emit("error", f"The model's turn failed on the server: {err.message}")
                return self.grounded_instead("the server failed on the model's tool call")
            if not result.tool_calls:
                if self.used == 0 and not forced:
                    return self.grounded_instead("it answered without calling a tool")
                return self.finish(result.content, truncated=result.truncated)
            if result.content:
                self.request.emit("thinking", result.content)
            self.messages.append(
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
                self.call_tool(call, result)

    def grounded_instead(self, why: str) -> AskOutcome:
        """The question answered in grounded mode after all, saying why."""
        request = self.request
        model = request.llm.model or "the model"
        reason = f"{model} claims to call tools, but {why}"
        request.stream.restart()  # what it wrote is not the answer
        request.emit(
            "status",
            f"Mode: grounded — {reason}: the best passages are given to it to answer from, "
            "with citations.",
        )
        request.mode = "grounded"
        request.mode_reason = reason
        request.stopped = None  # a loop in the answer not used is no part of this one
        return grounded_mode.answer(request, self.focus, self.question)

    def call_tool(self, call: ToolCall, result: ChatResult) -> None:
        """Run one tool call of `result` and give the model its output; raises `Stop`
        for a call that failed before, or one past the step limit."""
        request = self.request
        request.check_cancel()
        key = call.name + json.dumps(call.arguments, sort_keys=True, default=str)
        if key in self.failed:
            raise self.repeated(self.failed[key])
        if self.used >= self.max_steps:
            raise self.step_limit(result.content)
        self.used += 1
        request.emit(
            "tool_call",
            f"Calling {call.name} with {json.dumps(call.arguments, ensure_ascii=False)}",
            tool=call.name,
            args=dict(call.arguments),
        )
        output = request.toolbox.run(
            call.name,
            call.arguments,
            allowed=request.tool_names,
            cancel=request.cancel,
            meter=request.meter,
        )
        request.emit("tool_result", output.summary, tool=call.name)
        request.found.add(output)
        if output.error:
            self.failed[key] = output.summary
            output.text += (
                "\nTell the user about this error if it matters for the answer; "
                "do not repeat this call."
            )
        if output.hits:
            request.numbered_out = output.hits
        self.messages.append(
            {
                "role": "tool",
                "tool_call_id": call.id,
                "tool_name": call.name,
                "content": output.text,
            }
        )

    def repeated(self, error: str) -> Stop:
        found = self.request.found
        return Stop(
            "error",
            f"{error.removeprefix('Error: ')}\n\nThe model asked for the same "
            f"failing call again, so I stopped. What I found before that:\n"
            f"{found.report()}",
            sources=found.sources,
        )

    def step_limit(self, content: str) -> Stop:
        found = self.request.found
        partial = f"\n\n{content}" if content else ""
        return Stop(
            "step_limit",
            prompts.STEP_LIMIT.format(max_steps=self.max_steps) + "\n" + found.report() + partial,
            sources=found.sources,
        )

    def finish(self, content: str, *, truncated: bool = False) -> AskOutcome:
        request, found = self.request, self.request.found
        answer = content.strip()
        for error in dict.fromkeys(found.errors):
            message = error.removeprefix("Error: ")
            if message[:60] not in answer:
                answer += f"\n\n> Tool error: {message}"
        sources = citations.by_path(answer, found.sources, request.kb.file_info)
        cites = bool(sources)
        if truncated:
            answer = f"{answer}\n\n{cut_off_note(request.llm)}".lstrip()
        for note in (request.early_note(), request.template_note):
            if note:
                answer = f"{answer}\n\n{note}".lstrip()
        if not sources and found.sources:
            sources = found.sources[:MAX_SOURCES]
            answer += "\n\n" + sources_line(sources)
        stop: StopReason = "length" if truncated else "degenerate" if request.stopped else "answer"
        return request.respond(stop, answer, sources, grounded_answer=cites)


def server_failed(err: LlmError) -> bool:
    """Whether `err` is the server failing a turn (HTTP 5xx), not the model being away,
    slow, cancelled or out of context."""
    return type(err) is LlmError and "HTTP 5" in err.message
