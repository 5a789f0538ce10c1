"""What `kb/ask` answers when no model can run (mode `fallback`): the best passages.

The answer opens with the passages' own best sentences (`evidence.py`: "From your
notes:", each quoted with `[path:lines]`), then says what it is — "No model: here are
the best passages" — and lists the passages that best match the question (numbered, so
"file 2" works next), each with its path and lines. Why no model answered (and the fix)
is said once, by the agent, as a `status` step; it is not repeated in the answer, which
is a success in its own right. The retrieval is the same hybrid search the agent's tools
use, so the passages are those a model would have been shown. A bare summary request
gets an extractive summary instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from kb_lsp.engine.agent import evidence
from kb_lsp.engine.agent.found import sources_line
from kb_lsp.engine.agent.request import AskOutcome, Request
from kb_lsp.engine.agent.summarize import read_lines
from kb_lsp.engine.agent.tools import PASSAGE_CHARS, PASSAGE_THRESHOLD_FACTOR, defuse, source_of
from kb_lsp.engine.knowledge import FileInfo, KnowledgeBase
from kb_lsp.engine.llm import LlmError
from kb_lsp.engine.workspace.files import UnreadableFile
from kb_lsp.protocol import SearchHit, Source

MAX_PASSAGES = 5
SNIPPET_CHARS = 400
HEADING = "**No model: here are the best passages**"


@dataclass
class Degraded:
    answer: str
    sources: list[Source]
    numbered: list[SearchHit] | None
    found: bool  # whether any passage matched


def _quote(text: str) -> str:
    text = " ".join(text.split())
    if len(text) > SNIPPET_CHARS:
        text = text[: SNIPPET_CHARS - 1].rstrip() + "…"
    return "> " + text


def degraded_answer(kb: KnowledgeBase, question: str, focus: list[FileInfo]) -> Degraded:
    sources: list[Source] = []
    numbered: list[SearchHit] | None = None
    if focus:
        hits = [h for f in focus for h in kb.search_in_file(f.path, question, limit=3)]
        threshold = kb.settings.search.threshold * PASSAGE_THRESHOLD_FACTOR
        hits = [h for h in hits if h.score >= threshold] or hits[:1]
        where = " of " + ", ".join(f"`{f.path}`" for f in focus)
    else:
        hits = kb.search(question, limit=kb.settings.search.limit)
        numbered = hits
        where = " in the knowledge base"
    if not hits:
        text = f"{HEADING}{where} — but nothing matches the question well enough."
        return Degraded(text, sources, numbered, found=False)
    lead = evidence.lead(_excerpts(kb, hits[:MAX_PASSAGES]), question, kb.embedder)
    lines = [lead, ""] if lead else []
    lines += [f"{HEADING}{where}:", ""]
    for i, hit in enumerate(hits[:MAX_PASSAGES], start=1):
        start, end = hit.range.start.line, max(hit.range.start.line, hit.range.end.line - 1)
        label = hit.n if numbered is not None else i
        heading = f" — {hit.heading}" if hit.heading else ""
        lines.append(f"{label}. `{hit.path}` lines {start + 1}–{end + 1}{heading}")
        lines.append("   " + _quote(defuse(hit.snippet or "")[:PASSAGE_CHARS]))
        sources.append(
            source_of(hit, start, end)
            if numbered is not None
            else Source(uri=hit.uri, path=hit.path, range=hit.range)
        )
    return Degraded("\n".join(lines), sources, numbered, found=True)


def _excerpts(kb: KnowledgeBase, hits: list[SearchHit]) -> list[evidence.Excerpt]:
    """Each hit's lines as the file has them now (what the evidence quotes)."""
    out: list[evidence.Excerpt] = []
    for hit in hits:
        try:
            lines = read_lines(kb, hit.path)
        except UnreadableFile:
            continue
        start = hit.range.start.line
        end = max(start, hit.range.end.line - 1)
        out.append(evidence.Excerpt(hit.path, start, "\n".join(lines[start : end + 1])))
    return out


def answer_without_model(
    request: Request, err: LlmError, focus: list[FileInfo], summary_only: bool
) -> AskOutcome:
    """No model can answer: say why once (a status step), then what can be done
    without one: an extractive summary, or the best passages."""
    request.mode = "fallback"
    request.emit("status", f"No model: {err.message}")
    if summary_only and len(focus) == 1:
        info = focus[0]
        summary = request.agent.summarizer.extractive(info)
        request.emit("tool_result", f"Extractive summary of {info.path}", tool="summarize_document")
        source = source_of(info, 0, max(0, summary.line_count - 1))
        answer = (
            f"**Extractive summary** (no model: the first sentence of each section)\n\n"
            f"{summary.text}\n\n{sources_line([source])}"
        )
        return request.respond("answer", answer, [source])
    topic = request.topic()
    degraded = degraded_answer(request.kb, topic.searched, focus)
    return request.respond("answer", degraded.answer, degraded.sources, degraded.numbered)
