"""Mode `grounded`, for a model that does not call tools: the question is searched, the
best passages fitted to the model's context (`grounded.py`), their best sentences sent
first (`evidence.py`), and the model's answer composed after them with its citations and
the grounding check (`grounded_answer.py`)."""

from __future__ import annotations

from kb_lsp.engine.agent import evidence, grounded, grounded_answer, prompts, sampling
from kb_lsp.engine.agent.budget import CHARS_PER_TOKEN, estimate_tokens, fit
from kb_lsp.engine.agent.grounded import Passage
from kb_lsp.engine.agent.request import AskOutcome, Request, Stop, cut_off_note
from kb_lsp.engine.knowledge import FileInfo
from kb_lsp.engine.llm import ChatResult
from kb_lsp.protocol import StopReason


def answer(request: Request, focus: list[FileInfo], question: str) -> AskOutcome:
    llm, history = request.llm, request.history
    overhead = estimate_tokens(prompts.GROUNDED_SYSTEM + prompts.GROUNDED_USER + question)
    history_tokens = sum(estimate_tokens(t.question + t.answer) for t in history)
    limit = sampling.grounded_max_tokens(llm)
    budget = max(1024, llm.num_ctx - limit - overhead - 64)
    passage_chars = int(max(600, budget - history_tokens) * CHARS_PER_TOKEN)
    count, each = grounded.fitted(llm.num_ctx)
    # A question is searched on its own; a follow-up ("and for Peru?") together with the
    # topic it follows up, and its quotes are chosen for both.
    topic = request.topic()
    wanted = topic.searched if topic.joined else question
    selection = request.selection()
    searched = grounded.search(request.kb, wanted, focus, selection)
    passages, _files = grounded.gather(
        request.kb,
        wanted,
        focus,
        budget_chars=min(passage_chars, count * each),
        max_passages=count,
        passage_chars=each,
        searched=searched,
        selection=selection,
    )
    request.found.passages = passages
    request.found.sources = [p.source() for p in passages]
    if not passages:
        where = " in " + ", ".join(f"`{f.path}`" for f in focus) if focus else ""
        raise Stop(
            "answer",
            f"Nothing{where} matches the question well enough to answer it from the "
            "notes (results below the relevance threshold are not shown).",
        )
    listing = "; ".join(f"[{p.n}] {p.path} lines {p.start + 1}–{p.end + 1}" for p in passages)
    # The sources go with the listing, before the answer streams: a client links the
    # answer's `[n]` to them as they arrive, not only once the answer is whole.
    sources = [s.model_dump(mode="json", by_alias=True) for s in request.found.sources]
    request.emit(
        "tool_result",
        f"{len(passages)} passages for the model: {listing}",
        args={"sources": sources},
    )
    # The client's numbered list stays the one it last saw ("file N" keeps meaning what
    # it meant): the passages are numbered in the answer, as passages, not as a new list.
    # What the notes say comes first, before the model is even asked: it streams now.
    # Quoted from the passages of the largest context, whatever the model's: the quotes
    # do not depend on the model (their files are linked from the quotes themselves).
    pool = grounded.quoted(
        request.kb, wanted, focus, searched, (passages, (count, each)), selection
    )
    lead = evidence.lead(pool, wanted, request.kb.embedder)
    if lead:
        request.stream.paragraph(lead)
    turns = [(t.question, t.answer) for t in history]
    messages = grounded.messages(question, passages, turns, focus)
    result = request.model_call(
        fit(messages, budget), max_tokens=limit, temperature=sampling.TEMPERATURE
    )
    return _composed(request, result, passages, question, lead)


def _composed(
    request: Request, result: ChatResult, passages: list[Passage], question: str, lead: str
) -> AskOutcome:
    """The answer from the model's reply: after the lead, checked, with its notes."""
    composed = grounded_answer.compose(result.content, passages, question, lead)
    request.dropped = composed.dropped
    limit = sampling.grounded_max_tokens(request.llm)
    extra = [cut_off_note(request.llm, limit)] if result.truncated else []
    extra += [note for note in (request.early_note(), request.template_note) if note]
    # The rest of the pending answer (a cut-off note, the verdict's note) as appended
    # text; a replacement only when the model's text was cleaned (dropped citations).
    request.stream.become(composed.pending(*extra))
    # Every passage is a source of the answer, numbered as the model saw it: it is
    # what the answer was made from, whatever the model cites.
    shown = [p.source() for p in passages]
    stop: StopReason = (
        "length" if result.truncated else "degenerate" if request.stopped else "answer"
    )
    return request.respond(
        stop,
        composed.text(*extra),
        shown,
        grounded_answer=composed.grounded,
        folded=composed.folded,
    )
