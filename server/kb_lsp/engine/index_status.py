"""The index's status across every root, as `kb/status` reports it: figures, skipped
files and front-matter problems, the running sync's progress, how far the vectors are,
the metadata phase and what a team index that cannot be used means."""

from __future__ import annotations

from pathlib import Path

from kb_lsp.config import Settings
from kb_lsp.engine.index.extraction import MetadataPhase
from kb_lsp.engine.roots import RootIndex
from kb_lsp.engine.store import TEAM_MEANWHILE
from kb_lsp.engine.sync import WorkspaceSync
from kb_lsp.protocol import FileProblem, IndexState, IndexStatus, LlmStatus, SkippedFile


def index_status(
    roots: list[RootIndex],
    sync: WorkspaceSync,
    metadata_phase: MetadataPhase,
    settings: Settings,
    *,
    embedder: str,
    storage: Path,
    pending: int = 0,
    llm: LlmStatus | None = None,
) -> IndexStatus:
    """The status of `roots` (one snapshot); `pending`: saves not synced yet."""
    files = chunks = ready = with_text = 0
    skipped: list[SkippedFile] = []
    problems: list[FileProblem] = []
    for index in roots:
        figures = index.store.figures()
        files += figures.files
        chunks += figures.chunks
        ready += figures.complete_chunks + index.indexer.vectors_in_flight
        with_text += figures.written_chunks
        skipped += [SkippedFile(path=index.prefix + p, reason=r) for p, r in figures.skipped]
        problems += [
            FileProblem(path=index.prefix + p.path, line=p.line, message=p.message)
            for p in figures.problems
        ]
    state: IndexState = "indexing" if sync.syncing or pending else "ready"
    read_only = any(index.store.read_only for index in roots)
    notes = team_notes(roots, settings)
    if read_only:
        notes.insert(0, "read-only: another kb-lsp process is indexing this workspace")
    return IndexStatus(
        state=state,
        files=files,
        chunks=chunks,
        pending=pending,
        embedder=embedder,
        store=str(storage),
        llm=llm or LlmStatus(host=settings.ollama.host, model=settings.ollama.model),
        read_only=read_only,
        roots=[str(index.root) for index in roots],
        skipped=skipped,
        problems=problems,
        message="; ".join(notes) or None,
        progress=sync.wire_progress(),
        keyword_complete=sync.keyword_complete(),
        vectors_ready=min(1.0, ready / with_text) if with_text else 1.0,
        metadata=metadata_phase.status(roots),
    )


def team_notes(roots: list[RootIndex], settings: Settings) -> list[str]:
    """What the status says of a team index that cannot be used (docs/team-index.md)."""
    chroma = settings.chroma
    if chroma.collection and not chroma.url:
        return ["kb.chroma.collection is set without kb.chroma.url: the index is local"]
    problems = {p for i in roots if (p := i.store.writer.team_problem)}
    return [f"{problem}; {TEAM_MEANWHILE}" for problem in sorted(problems)]
