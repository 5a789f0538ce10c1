"""Summaries of one file: map-reduce with the model, cached; extractive without one.

* A file that fits the model's context is summarized in one call. A longer one is cut
  into consecutive line ranges that fit (map: one summary per part), and the part
  summaries are combined (reduce, repeated while they do not fit). A very long file is
  sampled: at most `MAX_PARTS` evenly spread parts are summarized, and the summary says so.
* The result is stored with `KnowledgeBase.store_summary`, keyed by the file's content
  hash, the provider and the model (plus a prompt version), so a second summary of an
  unchanged file is instant, and any edit makes a new one.
* Only real summaries are stored: a model reply with no text is asked once more and then
  raises `EmptyAnswer`; a reply cut at the token limit is returned (`truncated`) but not
  stored. An empty text found in the cache is treated as missing.
* The summary streams as the model writes it (`on_text`: the one call of a short file,
  the last combining call of a long one — part summaries are not the answer); the cache
  stores the whole summary, as before.
* `extractive` needs no model: the title and the first sentence of each section. It is
  never cached, so a real summary replaces it as soon as a model is reachable.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kb_lsp.engine.agent import prompts, sampling
from kb_lsp.engine.agent.budget import CHARS_PER_TOKEN
from kb_lsp.engine.agent.usage import Meter
from kb_lsp.engine.knowledge import FileInfo, KnowledgeBase, StoredChunk
from kb_lsp.engine.llm import ChatModel, Delta, EmptyAnswer
from kb_lsp.engine.metadata.links import plain_links

# Bumped when the prompts or the key change, so that old cached summaries are not served
# (v2: keys carry the provider; v1 caches could hold empty summaries; v3: keys carry the
# server's address, and summaries are sampled low and bounded).
PROMPT_VERSION = "summary-v3"
# A summary shorter than this (in content characters) is not a summary: a stand-in's or a
# broken model's "OK." must not be served later to a real one (issue 29).
MIN_SUMMARY_CHARS = 40
MAX_PARTS = 24
_PROMPT_OVERHEAD_TOKENS = 400
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_SENTENCE = re.compile(r"(.+?[.!?])(?:\s|$)")
_MARKUP = re.compile(r"[*_`>]+|^\s*(?:[-+]|\d+[.)])\s+")


@dataclass
class _Run:
    """One summary's model calls: what they share, and whether one was cut off."""

    cancel: threading.Event
    meter: Meter | None
    on_wait: Callable[[], None] | None
    on_text: Callable[[str], None] | None = None  # the summary's text as it is written
    truncated: bool = False


@dataclass(frozen=True)
class Summary:
    path: str
    text: str
    cached: bool
    extractive: bool
    line_count: int
    truncated: bool = False  # the model's reply was cut at its token limit (not cached)


def worth_keeping(summary: str) -> bool:
    """Whether a model's summary is one to cache: more than a few words."""
    return len(re.sub(r"\W+", "", summary)) >= MIN_SUMMARY_CHARS


def read_lines(kb: KnowledgeBase, path: str) -> list[str]:
    """The file's lines from disk, read confined (`KnowledgeBase.read_text`); raises
    `UnreadableFile` for a file that is no longer a readable regular file in the workspace."""
    return kb.read_text(path).splitlines()


class Summarizer:
    def __init__(self, kb: KnowledgeBase, llm: ChatModel | None) -> None:
        self.kb = kb
        self.llm = llm

    def cache_key(self) -> str:
        assert self.llm is not None
        return f"{self.llm.cache_identity}#{PROMPT_VERSION}"

    def cached(self, info: FileInfo) -> Summary | None:
        if self.llm is None:
            return None
        text = self.kb.cached_summary(info.path, self.cache_key())
        if text is None or not worth_keeping(text):
            return None
        return Summary(info.path, text, cached=True, extractive=False, line_count=-1)

    def summarize(
        self,
        info: FileInfo,
        *,
        cancel: threading.Event,
        meter: Meter | None = None,
        on_wait: Callable[[], None] | None = None,
        on_text: Callable[[str], None] | None = None,
    ) -> Summary:
        """A model summary of `info`'s file, from the cache when it is there; `on_text`
        gets the summary's text as the model writes it.

        Raises `LlmError` (the caller decides whether to fall back to `extractive`),
        `EmptyAnswer` when the model twice said nothing."""
        if self.llm is None:
            raise RuntimeError("no model configured")
        # Which model answers is part of the cache key (an OpenAI-compatible server
        # names its model only when asked); no model at all raises `ModelUnavailable`.
        self.llm.capabilities()
        run = _Run(cancel, meter, on_wait, on_text)
        hit = self.cached(info)
        lines = read_lines(self.kb, info.path)
        if hit is not None:
            return Summary(info.path, hit.text, True, False, len(lines))
        if not any(line.strip() for line in lines):
            return Summary(info.path, "The file is empty.", False, False, len(lines))
        budget_chars = self._part_chars()
        parts = _split(lines, budget_chars)
        sampled = len(parts) > MAX_PARTS
        if sampled:
            step = len(parts) / MAX_PARTS
            parts = [parts[int(i * step)] for i in range(MAX_PARTS)]
        if len(parts) == 1:
            text = parts[0][2]
            summary = self._ask(
                prompts.SUMMARY_ONE.format(path=info.path, title=info.title, text=text),
                run,
                final=True,
            )
        else:
            partials = [
                f"Part (lines {start}-{end}):\n"
                + self._ask(
                    prompts.SUMMARY_MAP.format(
                        path=info.path, title=info.title, start=start, end=end, text=text
                    ),
                    run,
                )
                for start, end, text in parts
            ]
            summary = self._reduce(info, partials, budget_chars, sampled, run)
        truncated = run.truncated
        if not truncated and worth_keeping(summary):
            self.kb.store_summary(info.path, self.cache_key(), summary)
        return Summary(info.path, summary, False, False, len(lines), truncated=truncated)

    def _reduce(
        self,
        info: FileInfo,
        partials: list[str],
        budget_chars: int,
        sampled: bool,
        run: _Run,
    ) -> str:
        while True:
            groups: list[list[str]] = [[]]
            size = 0
            for part in partials:
                if groups[-1] and size + len(part) > budget_chars:
                    groups.append([])
                    size = 0
                groups[-1].append(part)
                size += len(part)
            combined = [
                self._ask(
                    prompts.SUMMARY_REDUCE.format(
                        path=info.path,
                        title=info.title,
                        parts="\n\n".join(group),
                        sampled=prompts.SUMMARY_SAMPLED if sampled else "",
                    ),
                    run,
                    final=len(groups) == 1,
                )
                for group in groups
            ]
            if len(combined) == 1:
                return combined[0]
            partials = combined

    def _ask(self, prompt: str, run: _Run, *, final: bool = False) -> str:
        """One model call (its text streamed to `run.on_text` when it is the `final`
        summary); an empty reply is asked once more, then `EmptyAnswer`."""
        assert self.llm is not None
        on_text = run.on_text if final else None

        def on_delta(delta: Delta) -> None:
            if on_text is not None and delta.kind == "content":
                on_text(delta.text)

        for _ in range(2):
            result = self.llm.chat(
                [{"role": "user", "content": prompt}],
                cancel=run.cancel,
                on_wait=run.on_wait,
                on_delta=on_delta,
                max_tokens=sampling.summary_max_tokens(self.llm),
                temperature=sampling.TEMPERATURE,
            )
            if run.meter is not None:
                run.meter.add(result)
            text = result.content.strip()
            if result.truncated:
                run.truncated = True
            if text:
                return text
        raise EmptyAnswer(
            f"The model {self.llm.model} returned an empty summary twice; nothing was "
            "cached. Try again, or another model.",
            host=self.llm.host,
            model=self.llm.model,
        )

    def _part_chars(self) -> int:
        assert self.llm is not None
        tokens = self.llm.num_ctx - self.llm.num_predict - _PROMPT_OVERHEAD_TOKENS
        return max(2000, int(tokens * CHARS_PER_TOKEN))

    def extractive(self, info: FileInfo) -> Summary:
        chunks = self.kb.chunks_of(info.path)
        line_count = chunks[-1].end_line + 1 if chunks else 0
        return Summary(info.path, extractive_summary(info.title, chunks), False, True, line_count)


def _split(lines: list[str], max_chars: int) -> list[tuple[int, int, str]]:
    """Consecutive line ranges of at most `max_chars` (1-based, inclusive), with their text."""
    parts: list[tuple[int, int, str]] = []
    start = 0
    size = 0
    for i, line in enumerate(lines):
        if size and size + len(line) + 1 > max_chars:
            parts.append((start + 1, i, "\n".join(lines[start:i])))
            start, size = i, 0
        size += len(line) + 1
    if start < len(lines):
        parts.append((start + 1, len(lines), "\n".join(lines[start:])))
    # A single line longer than the budget is cut rather than sent whole.
    return [(s, e, text[:max_chars]) for s, e, text in parts]


def _first_paragraph(text: str) -> str:
    """The first paragraph of prose in a chunk: no heading, table row or code."""
    paragraph: list[str] = []
    in_fence = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
        elif in_fence:
            continue
        elif stripped and set(stripped) <= set("=-"):
            paragraph = []  # a setext underline: the line above was a heading
            continue
        elif stripped and not _HEADING.match(line) and not stripped.startswith("|"):
            paragraph.append(stripped)
            continue
        if paragraph:
            break
    return " ".join(paragraph)


def _first_sentence(paragraph: str, max_chars: int = 220) -> str:
    text = _MARKUP.sub("", plain_links(paragraph)).strip()
    text = re.sub(r"\s+", " ", text)
    match = _SENTENCE.match(text)
    sentence = match.group(1) if match else text
    if len(sentence) > max_chars:
        sentence = sentence[: max_chars - 1].rstrip() + "…"
    return sentence


def extractive_summary(title: str, chunks: Sequence[StoredChunk], *, max_sections: int = 8) -> str:
    """The title and, per section, its heading with the first sentence under it.

    Built on the stored chunks, so the Markdown is read the way the index reads it
    (front matter left out, headings inside code fences not headings)."""
    found: dict[str, str] = {}
    for chunk in chunks:
        heading = chunk.heading.rsplit(" > ", 1)[-1]
        if heading in found:
            continue  # a later chunk (or the overlap) of a section already summarized
        prose = _first_paragraph(chunk.text)
        if prose:
            found[heading] = _first_sentence(prose)
    sections = list(found.items())
    out = [f"**{title}** (extractive summary: the first sentence of each section)"]
    for section_heading, sentence in sections[:max_sections]:
        if not sentence:
            continue
        out.append(f"- {section_heading}: {sentence}" if section_heading else f"- {sentence}")
    if len(sections) > max_sections:
        out.append(f"- … and {len(sections) - max_sections} more sections")
    if len(out) == 1:
        out.append("- (the file has no prose to extract)")
    return "\n".join(out)
