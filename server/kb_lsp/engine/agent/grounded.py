"""Grounded answers for models that do not call tools: retrieve, grade, answer, cite.

The kb-agent retrieval lessons this project grew from, applied:

* **Chunks as separate context items.** Each passage is one numbered source: the exact
  lines of one chunk of one file, read from disk, so a citation `[2]` points at lines that
  hold the text the model was shown (`Passage.source()`).
* **Relevance grading before the model.** Candidates come from the same hybrid search as
  everything else (files above `kb.search.threshold`, then their best chunks); a passage
  is kept only when its score clears the passage threshold and is at least
  `GRADE_RELATIVE` of the best passage's. Grading by the model itself was not used: a
  model too small to call tools grades no better than the score, at one call per passage.
* **Changelogs weigh less.** Release notes, CHANGELOG, HISTORY… mention every feature in
  passing ("Add support for X"), so they match most questions and answer none: their
  chunks' scores count `CHANGELOG_WEIGHT` of themselves, unless the question is about
  releases or changes (issue 29 point 3; measured in bench/results/README.md).
* **A page's next chunk joins it.** Up to `PER_FILE` chunks of each top file compete; a
  chunk overlapping a passage already given adds only its own lines, joined to that
  passage while the whole fits a passage's size (issue 35 point 3: the answer of a tldr
  page or a section often sat in the chunk after the best-matching one). A chunk longer
  than a passage is cut around the lines holding most of the question's terms, not at
  its top (`focused`).
* **Usage never in the history.** Earlier turns go back as questions and answers only
  (`Conversations` strips usage and thinking); the sources are given fresh each time.

"file N" and the selected file still work: the question's focus files give their own best
passages (at least one each, whatever the score), instead of a workspace search.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from kb_lsp.engine.agent import grounding, prompts
from kb_lsp.engine.agent.summarize import read_lines
from kb_lsp.engine.agent.tools import PASSAGE_THRESHOLD_FACTOR, defuse
from kb_lsp.engine.knowledge import FileInfo, KnowledgeBase
from kb_lsp.engine.workspace.files import UnreadableFile
from kb_lsp.protocol import Range, SearchHit, Source

MAX_PASSAGES = 5
MAX_FILES = 4  # files of the workspace search whose chunks are candidates
PER_FILE = 3  # best chunks of each such file (2 left the answering third of a page out)
PER_FOCUS_FILE = 4
GRADE_RELATIVE = 0.7  # issue 29: 0.5 gave more passages, none better (bench ask)
PASSAGE_MAX_CHARS = 1500
SMALL_CONTEXT = 4096  # tokens: under this, 2 passages of 600 characters
MEDIUM_CONTEXT = 8192  # under this, 3 of 1000
CHANGELOG_WEIGHT = 0.5
INTRO_REACH = 3  # lines above a passage opening in a list where its introduction may be
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+")
# A file of release notes by its name: CHANGELOG.md, release-notes.md, HISTORY, NEWS.rst,
# docs/changelog/2024.md, changes.md…
CHANGELOG = re.compile(
    r"(?:^|/)(?:change[-_ ]?log|changes|release[-_ ]?notes|releases|history|news|whats[-_ ]?new)"
    r"(?:/|\.[\w]+$|$)",
    re.I,
)
# A question about releases or changes keeps them at full weight ("release" alone is
# often the verb: "release it on shutdown").
ABOUT_CHANGES = re.compile(
    r"\b(?:change ?log|release notes?|releases|released in|"
    r"(?:the|a|which|latest|last|new|next|this|each|every) release|"
    r"what(?:'s| has| have)? changed|changes? (?:in|since|between)|what'?s new|new in|"
    r"versions?|upgrad\w*|deprecat\w*)\b",
    re.I,
)


@dataclass(frozen=True)
class Passage:
    n: int
    path: str
    uri: str
    title: str
    heading: str
    start: int  # 0-based, inclusive
    end: int  # 0-based, inclusive
    text: str  # the file's lines start..end, verbatim
    score: float

    def source(self) -> Source:
        return Source(
            n=self.n, uri=self.uri, path=self.path, range=Range.of_lines(self.start, self.end)
        )


def fitted(num_ctx: int) -> tuple[int, int]:
    """How many passages, of how many characters at most, a model with `num_ctx` tokens
    of context gets: a small one reads one or two short passages better than five long
    ones (issue 29: SmolLM2 answered from passage [1] alone, not from five)."""
    if num_ctx < SMALL_CONTEXT:
        return 2, 600
    if num_ctx < MEDIUM_CONTEXT:
        return 3, 1000
    return MAX_PASSAGES, PASSAGE_MAX_CHARS


def gather(
    kb: KnowledgeBase,
    question: str,
    focus: list[FileInfo],
    *,
    budget_chars: int,
    max_passages: int = MAX_PASSAGES,
    passage_chars: int = PASSAGE_MAX_CHARS,
    searched: tuple[list[SearchHit], list[SearchHit]] | None = None,
    selection: tuple[int, int] | None = None,
) -> tuple[list[Passage], list[SearchHit]]:
    """The graded passages for `question` (numbered from 1), and the file hits of the
    workspace search they came from (empty with focus files); `searched`: `search`'s."""
    candidates, files = searched or search(kb, question, focus, selection)
    if not ABOUT_CHANGES.search(question):
        candidates = [_weighed(hit) for hit in candidates]
    graded = grade(candidates, keep_first=bool(focus))
    per_passage = max(
        300, min(passage_chars, budget_chars // max(1, min(len(graded), max_passages)))
    )
    passages: list[Passage] = []
    used = 0
    asked = set(grounding.terms(question))
    for hit in graded:
        if len(passages) >= max_passages or used >= budget_chars:
            break
        start, end = hit.range.start.line, max(hit.range.start.line, hit.range.end.line - 1)
        lines_left = outside(start, end, [(p.start, p.end) for p in passages if p.path == hit.path])
        if lines_left is None:
            continue  # every line of it is in a passage already shown
        start, end = lines_left
        try:
            lines = read_lines(kb, hit.path)
        except UnreadableFile:
            continue  # changed into something unreadable since it was indexed
        end = min(end, len(lines) - 1)
        if end < start:
            continue
        start = with_intro(lines, focused(lines, (start, end), per_passage, asked))
        start = max(start, selection[0] if selection else 0)  # no intro outside a selection
        added = _join(passages, hit.path, lines, (start, end), per_passage)
        if added is not None:
            used += added
            continue
        end, text = cut(lines, start, end, min(per_passage, budget_chars - used))
        if not text.strip():
            continue
        passages.append(_passage(len(passages) + 1, hit, (start, end), text))
        used += len(text)
    return passages, files


def _passage(n: int, hit: SearchHit, lines: tuple[int, int], text: str) -> Passage:
    return Passage(
        n=n,
        path=hit.path,
        uri=hit.uri,
        title=hit.title,
        heading=hit.heading,
        start=lines[0],
        end=lines[1],
        text=text,
        score=hit.score,
    )


def quoted(
    kb: KnowledgeBase,
    question: str,
    focus: list[FileInfo],
    searched: tuple[list[SearchHit], list[SearchHit]],
    given: tuple[list[Passage], tuple[int, int]],
    selection: tuple[int, int] | None = None,
) -> list[Passage]:
    """The passages the lead quotes from: those of the largest context (`fitted`), from
    the same search, whatever the model's own; `given` (the model's passages, and the
    count and size they were fitted to) when they are those. The quotes come before the
    model and do not depend on it (issue 35, point 3): a small model reads two passages
    of 600 characters better than five, but the sentence that answers is often in a
    third, or past the 600th character of one."""
    passages, fit = given
    if fit == (MAX_PASSAGES, PASSAGE_MAX_CHARS):
        return passages
    pool, _ = gather(
        kb,
        question,
        focus,
        budget_chars=MAX_PASSAGES * PASSAGE_MAX_CHARS,
        searched=searched,
        selection=selection,
    )
    return pool


def search(
    kb: KnowledgeBase,
    question: str,
    focus: list[FileInfo],
    selection: tuple[int, int] | None = None,
) -> tuple[list[SearchHit], list[SearchHit]]:
    """The chunks that may become passages, and the file hits they came from. With
    `selection` (0-based inclusive lines of the one focus file), those lines are the one
    passage, whatever they score: the user chose them."""
    if selection is not None and focus:
        found = kb.search_in_file(focus[0].path, question, limit=1)
        return [hit.model_copy(update={"range": Range.of_lines(*selection)}) for hit in found], []
    threshold = kb.settings.search.threshold * PASSAGE_THRESHOLD_FACTOR
    candidates: list[SearchHit] = []
    files: list[SearchHit] = []
    if focus:
        for info in focus:
            found = kb.search_in_file(info.path, question, limit=PER_FOCUS_FILE)
            # The file was named: its best passage is shown whatever it scores.
            candidates += found[:1] + [h for h in found[1:] if h.score >= threshold]
    else:
        files = kb.search(question, limit=kb.settings.search.limit)
        for file_hit in files[:MAX_FILES]:
            found = kb.search_in_file(file_hit.path, question, limit=PER_FILE)
            candidates += [h for h in found if h.score >= threshold] or [file_hit]
    return candidates, files


def _weighed(hit: SearchHit) -> SearchHit:
    """`hit` with its score times `CHANGELOG_WEIGHT` when it is a changelog's."""
    if not CHANGELOG.search(hit.path):
        return hit
    return hit.model_copy(update={"score": hit.score * CHANGELOG_WEIGHT})


def grade(candidates: list[SearchHit], *, keep_first: bool) -> list[SearchHit]:
    """Best first; those scoring under `GRADE_RELATIVE` of the best are dropped."""
    if not candidates:
        return []
    ranked = sorted(candidates, key=lambda h: -h.score)
    best = ranked[0].score
    kept = [h for h in ranked if h.score >= best * GRADE_RELATIVE]
    if keep_first:
        # Each focus file's own best passage stays even when another file's is better.
        firsts = {h.path: h for h in reversed(candidates)}
        kept += [h for h in firsts.values() if h not in kept]
    return kept


def _join(
    passages: list[Passage], path: str, lines: list[str], span: tuple[int, int], limit: int
) -> int | None:
    """Joins lines `span` of `path` to the passage of that file they continue (or lead
    into) when the whole fits `limit` characters: the next chunk of a page read as one
    passage, not two, so it takes no other file's place (issue 35, point 3). The
    characters added, or None when no passage was joined."""
    start, end = span
    for i, passage in enumerate(passages):
        if passage.path != path or start > passage.end + 1 or passage.start > end + 1:
            continue
        first, last = min(start, passage.start), max(end, passage.end)
        text = "\n".join(lines[first : last + 1])
        if len(text) > limit or not text.strip():
            return None
        passages[i] = replace(passage, start=first, end=last, text=text)
        return len(text) - len(passage.text)
    return None


def outside(start: int, end: int, shown: list[tuple[int, int]]) -> tuple[int, int] | None:
    """The longest run of lines `start..end` in none of the `shown` ranges of the same
    file, or None when there is none. Chunks overlap by a few lines: a chunk overlapping
    one already shown gives its own lines (the end of a tldr page, a section's next
    paragraph) rather than nothing (issue 35, point 3)."""
    best: tuple[int, int] | None = None
    run_start: int | None = None
    for line in range(start, end + 2):
        new = line <= end and not any(first <= line <= last for first, last in shown)
        if new and run_start is None:
            run_start = line
        elif not new and run_start is not None:
            if best is None or line - 1 - run_start > best[1] - best[0]:
                best = (run_start, line - 1)
            run_start = None
    return best


def focused(lines: list[str], span: tuple[int, int], max_chars: int, asked: set[str]) -> int:
    """The first line of the run of lines of `span`, at most `max_chars` long, that holds
    the most of the question's terms `asked` (the earliest of equals: the last of equals
    lost more than it gained on bench quotes): a chunk longer than a passage is cut around
    what the question asks, not at its top (a tldr page's answering command after 600
    characters of others, issue 35 point 3)."""
    start, end = span
    if len("\n".join(lines[start : end + 1])) <= max_chars or not asked:
        return start
    held = [asked & set(grounding.terms(line)) for line in lines[start : end + 1]]
    best, best_start = -1, start
    for first in range(len(held)):
        size, got = 0, set()
        for i in range(first, len(held)):
            size += len(lines[start + i]) + 1
            if size > max_chars and i > first:
                break
            got |= held[i]
        if len(got) > best:
            best, best_start = len(got), start + first
    return best_start


def with_intro(lines: list[str], start: int) -> int:
    """`start`, or the line of the sentence introducing the list it opens in ("Two
    approvers are needed when:") when that is at most `INTRO_REACH` lines above: a chunk
    edge must not cut a list from its introduction (issue 35, point 3)."""
    if start >= len(lines) or not _LIST_ITEM.match(lines[start]):
        return start
    for above in range(start - 1, max(-1, start - INTRO_REACH - 1), -1):
        line = lines[above]
        if not line.strip() or _LIST_ITEM.match(line) or line.startswith((" ", "\t")):
            continue  # the list (or the blank line after its introduction) goes on up
        return above if line.rstrip().endswith(":") and not line.lstrip().startswith("#") else start
    return start


def cut(lines: list[str], start: int, end: int, max_chars: int) -> tuple[int, str]:
    """Lines `start..end` up to about `max_chars`, ending on a whole line; the new end."""
    size = 0
    last = start
    for i in range(start, end + 1):
        size += len(lines[i]) + 1
        if size > max_chars and i > start:
            break
        last = i
    text = "\n".join(lines[start : last + 1])
    return last, text[:max_chars] if last == start else text


def messages(
    question: str,
    passages: list[Passage],
    history: list[tuple[str, str]],
    focus: list[FileInfo],
) -> list[dict[str, str]]:
    sources = "\n\n".join(
        prompts.GROUNDED_SOURCE.format(
            n=p.n,
            path=p.path,
            start=p.start + 1,
            end=p.end + 1,
            where=f' section="{_attribute(p.heading)}"' if p.heading else "",
            text=defuse(p.text),
        )
        for p in passages
    )
    system = prompts.GROUNDED_SYSTEM
    if len(focus) == 1:
        system += prompts.GROUNDED_FOCUS.format(path=focus[0].path, title=focus[0].title)
    out = [{"role": "system", "content": system}]
    for asked, answered in history:
        out.append({"role": "user", "content": asked})
        if answered:  # only grounded answers are kept (`Conversations`)
            out.append({"role": "assistant", "content": answered})
    out.append(
        {
            "role": "user",
            "content": prompts.GROUNDED_USER.format(sources=sources, question=question),
        }
    )
    return out


def _attribute(text: str) -> str:
    """`text` as a tag attribute's value: no quote or angle bracket can end the tag."""
    return " ".join(text.split()).replace('"', "'").replace("<", "(").replace(">", ")")
