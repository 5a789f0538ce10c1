"""Which files a question is about, resolved before any model call (`references.py`
finds the references; this says what they mean for one request).

`file`/`n` params and "file 2" / "the second one" / "#2" in the question are resolved
against the client's last numbered list; an N that does not exist ends the request with
a clear answer (`stop: "error"`). A file name or quoted title that matches several files
ends it with a question back (`stop: "clarify"`), its candidates numbered: they become
the client's list, so the reply "the first one" or "file 2" continues the original
question. A file name no indexed file has ends it before any search. A named document
that could be several files ("the brief file") narrows nothing: every note is searched,
and the candidates are said as a step.
"""

from __future__ import annotations

from dataclasses import dataclass

from kb_lsp.engine.agent import references
from kb_lsp.engine.agent.conversations import Turn
from kb_lsp.engine.agent.request import Request, Stop
from kb_lsp.engine.agent.tools import ToolError
from kb_lsp.engine.knowledge import FileInfo
from kb_lsp.protocol import Range, SearchHit, Source


@dataclass
class Resolved:
    files: list[FileInfo]  # the focus: the files the question is about
    question: str  # for the model: references annotated with their paths
    plain: str  # as written (after a clarification: the question that asked it)
    spans: list[tuple[int, int]]  # of the references in `plain`


def no_list(ref_text: str, numbered: list[SearchHit] | None) -> str:
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


def resolve(request: Request) -> Resolved:
    """The request's focus files and its question, with the references in it resolved;
    raises `Stop` for a reference that names nothing, or more than one file."""
    params, kb, history = request.params, request.kb, request.history
    question = params.question
    focus: list[FileInfo] = []
    if params.file:
        try:
            focus.append(request.toolbox.file(params.file))
        except ToolError as err:
            raise Stop("error", str(err)) from err
    elif params.n is not None:
        focus.append(numbered_file(request, params.n, f"result {params.n}"))

    after_clarify = bool(history) and history[-1].stop == "clarify"
    refs = references.find_numbered(question, after_clarify=after_clarify)
    spans = [(r.start, r.end) for r in refs]
    annotations: list[tuple[int, str]] = []
    said: list[str] = []
    for ref in refs:
        n = ref.n if ref.n is not None else len(request.numbered_in or [])
        info = numbered_file(request, n, ref.text)
        said.append(f"“{ref.text}” is `{info.path}`")
        request.emit(
            "thinking", f"“{ref.text}” is `{info.path}` (number {n} of {which_list(request)})."
        )
        annotations.append((ref.end, f" (`{info.path}`)"))
        if info not in focus:
            focus.append(info)
    if said:
        request.list_note = f"_{'; '.join(said)}: from {which_list(request)}._"

    if after_clarify and refs and references.is_reference_only(question, spans):
        # The reply to "which one?": go on with the question that asked it.
        previous: Turn = history[-1]
        request.emit("thinking", f"Continuing “{previous.question}” with `{focus[-1].path}`.")
        question = previous.question
        by_name = references.find_by_name(question, kb.files())
        spans = [(r.start, r.end) for r in by_name]
        return Resolved(focus, question, question, spans)

    if not refs and not focus:
        for info, named in named_files(request, question):
            annotations.append((named.end, f" (`{info.path}`)"))
            spans.append((named.start, named.end))
            if info not in focus:
                focus.append(info)
    return Resolved(focus, annotate(question, annotations), question, spans)


def named_files(request: Request, question: str) -> list[tuple[FileInfo, references.NameRef]]:
    """The files `question` names (by file name, quoted title or as a named document),
    each with its reference; raises `Stop` for a file name no file has, and a question
    back for an explicit name several files have."""
    if references.THIS_FILE.search(question):
        request.emit(
            "thinking",
            "No file came with the question, so “this file” narrows nothing: every note "
            "is searched (ask from a file's Ask About This File, or name it).",
        )
    files = request.kb.files()
    named = references.find_by_name(question, files)
    target = references.summary_target(question, files)
    found: list[tuple[FileInfo, references.NameRef]] = []
    for ref in named or ([target] if target else []):
        if len(ref.candidates) == 1:
            request.emit("thinking", f"“{ref.text}” is `{ref.candidates[0].path}`.")
            found.append((ref.candidates[0], ref))
        elif len(ref.candidates) > 1 and ref.explicit:
            raise clarify(ref)
        elif ref.candidates:
            paths = ", ".join(f"`{f.path}`" for f in ref.candidates[:5])
            request.emit(
                "thinking",
                f"“{ref.text}” could be {paths}: every note is searched (name the file, "
                "or “file N”, to ask about one).",
            )
        else:
            # Before any search: answering from other files would be worse.
            raise Stop("error", references.not_found(ref.text, files))
    return found


def which_list(request: Request) -> str:
    """The list "file N" was read from, as the answer names it."""
    query = request.numbered_query
    return f"the list for “{query}”" if query else "the last list"


def numbered_file(request: Request, n: int, text: str) -> FileInfo:
    numbered = request.numbered_in or []
    if n < 1 or n > len(numbered):
        raise Stop("error", no_list(text, request.numbered_in))
    hit = numbered[n - 1]
    info = request.kb.file_info(hit.path)
    if info is None:
        raise Stop("error", f"{text} was `{hit.path}`, which is no longer in the knowledge base.")
    return info


def clarify(ref: references.NameRef) -> Stop:
    candidates = sorted(ref.candidates, key=lambda f: f.path)
    hits = clarify_list(candidates)
    lines = [f"“{ref.text}” could mean {len(hits)} files. Which one do you mean?"]
    lines += [f"{h.n}. `{h.path}` — {h.title}" for h in hits]
    lines.append("Answer with the number (“file 2”, “the first one”) or the file name.")
    sources = [Source(n=h.n, uri=h.uri, path=h.path, range=h.range) for h in hits]
    return Stop("clarify", "\n".join(lines), sources=sources, numbered=hits)


def annotate(question: str, annotations: list[tuple[int, str]]) -> str:
    for at, text in sorted(annotations, reverse=True):
        question = question[:at] + text + question[at:]
    return question
