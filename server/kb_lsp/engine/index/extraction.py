"""Phase 3 of a sync: the fields of the user's schema, extracted by their local model.

It runs after keyword rows and vectors, so search never waits for it, and it gives way:
between two notes it stops when the sync is cancelled (pause, cancel) or when other
work waits (`yield_to`: a save while the model reads) — the next sync goes on where
this one stopped, because the work is "every note whose extraction is not current", not
a list this sync made.

Per root: the schema (`metadata/user_schema.py`, read again at every sync: an edit to
it applies at once), then for each note the cache (`store/extractions.py`, by content
hash, schema hash and model), else the model (`metadata/extractor.py`), whose values
are checked against the note (`metadata/verify.py`): only those the note's own words
say are stored as metadata, the rest kept as rejected guesses with the reason. Without a
schema nothing happens; with one but no model that answers, or a schema that cannot be
used, the phase is skipped and the reason is logged once and shown in the status.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from kb_lsp.config import Settings
from kb_lsp.engine.index.reports import SyncReport
from kb_lsp.engine.index.sync_tally import SyncTally
from kb_lsp.engine.metadata.extractor import FieldExtractor, model_identity
from kb_lsp.engine.metadata.user_schema import SchemaError, UserSchema, load_schema
from kb_lsp.engine.store import Store
from kb_lsp.engine.store.extractions import ExtractionKey
from kb_lsp.engine.workspace.files import PathOutsideWorkspace, UnreadableFile, WorkspaceRoot
from kb_lsp.protocol import MetadataStatus

if TYPE_CHECKING:
    from kb_lsp.engine.llm.base import ChatModel

log = logging.getLogger("kb_lsp.engine.index.extraction")

PROBE_SECONDS = 5.0
# After no model answered, syncs within this many seconds do not ask again (each save
# would otherwise wait for the probe); new settings ask at once.
RETRY_SECONDS = 60.0


class AnyOf(threading.Event):
    """Set while any of its events is set: what the model's cancel check polls."""

    def __init__(self, *events: threading.Event | None) -> None:
        super().__init__()
        self._events = [event for event in events if event is not None]

    def is_set(self) -> bool:
        return any(event.is_set() for event in self._events)


class ExtractRoot(Protocol):
    """What the phase needs of one workspace folder (`knowledge.RootIndex`)."""

    root: Path
    prefix: str
    store: Store
    workspace: WorkspaceRoot


@dataclass
class _Ready:
    index: ExtractRoot
    extractor: FieldExtractor
    key: ExtractionKey
    todo: list[tuple[str, str]]


class MetadataPhase:
    """The third phase over every root; one per knowledge base (it keeps the model)."""

    def __init__(self, settings: Settings, model: ChatModel | None = None) -> None:
        self.settings = settings
        self._model = model
        self._said: str | None = None  # the last reason for skipping, logged once
        self.message: str | None = None
        self._schemas: dict[Path, UserSchema] = {}
        self._retry_at = 0.0
        self._lock = threading.Lock()

    def use_settings(self, settings: Settings) -> None:
        with self._lock:
            self.settings = settings
            self._model = None
            self._retry_at = 0.0

    def model(self) -> ChatModel:
        with self._lock:
            if self._model is None:
                from kb_lsp.engine.llm import create_llm

                self._model = create_llm(self.settings)
            return self._model

    # --- the phase -------------------------------------------------------------------------

    def run(
        self,
        roots: Sequence[ExtractRoot],
        tally: SyncTally,
        cancel: threading.Event | None,
        report: SyncReport,
        yield_to: threading.Event | None = None,
    ) -> None:
        """`yield_to`: set when other work waits; the phase stops at once (a model call
        in flight is dropped, not cached) and the next sync goes on where it stopped."""
        ready = self._plan(roots)
        if not ready:
            return
        tally.metadata(sum(len(r.todo) for r in ready))
        stop = AnyOf(cancel, yield_to)
        for part in ready:
            for path, content_hash in part.todo:
                if stop.is_set() or not self._one(part, path, content_hash, stop, report):
                    if cancel is not None and cancel.is_set():
                        report.cancelled = True
                    elif yield_to is not None and yield_to.is_set():
                        log.debug("extraction gives way to waiting work; the next sync goes on")
                    return
                tally.extracted(part.index.prefix + path)
        for part in ready:  # every note is current: what no note holds any more can go
            part.index.store.writer.forget_unused_extractions()

    def _plan(self, roots: Sequence[ExtractRoot]) -> list[_Ready]:
        if not self.settings.metadata.extract:
            return []
        schemas, problem = self._load(roots)
        if not schemas:
            self._skip(problem)
            return []
        model = self.model()
        # Asked first: the cache key names the model, and a server that serves its own
        # first model (`kb.llm.model` unset) says which only when asked (once a process).
        if time.monotonic() < self._retry_at:
            return []  # no model a moment ago: a save should not wait for it again
        from kb_lsp.engine.llm.errors import ModelUnavailable

        try:
            model.capabilities(timeout=PROBE_SECONDS)
        except ModelUnavailable as err:
            self._retry_at = time.monotonic() + RETRY_SECONDS
            self._skip(f"metadata extraction skipped: {err.message}")
            return []
        self._skip(problem)
        ready = []
        for index, schema in schemas:
            extractor = FieldExtractor(model, schema)
            key = ExtractionKey(schema.digest, extractor.identity)
            todo = index.store.writer.extraction_todo(key)
            if todo:
                ready.append(_Ready(index, extractor, key, todo))
        return ready

    def _load(
        self, roots: Sequence[ExtractRoot]
    ) -> tuple[list[tuple[ExtractRoot, UserSchema]], str | None]:
        """The schemas of the roots that have one, and the first problem of those that
        have a bad one."""
        out = []
        problems = []
        for index in roots:
            try:
                schema = load_schema(index.root, self.settings.metadata.schema_file)
            except SchemaError as err:
                problems.append(str(err))
                continue
            if schema is not None:
                self._schemas[index.root] = schema
                out.append((index, schema))
            else:
                self._schemas.pop(index.root, None)
        return out, f"metadata extraction skipped: {problems[0]}" if problems else None

    def _one(
        self,
        part: _Ready,
        path: str,
        content_hash: str,
        cancel: threading.Event | None,
        report: SyncReport,
    ) -> bool:
        """One note's fields into its store; False when the phase must stop."""
        from kb_lsp.engine.llm.errors import LlmCancelled, LlmError, ModelUnavailable

        store = part.index.store
        found = store.writer.cached_extraction(content_hash, part.key)
        if found is None:
            try:
                raw, text = part.index.workspace.read(path)
            except (UnreadableFile, PathOutsideWorkspace):
                return True  # gone or changed: phase 1 of the next sync sees to it
            if hashlib.sha256(raw).hexdigest() != content_hash:
                return True
            record = store.reader.file(path)
            try:
                found = part.extractor.extract(record.title if record else path, text, cancel)
            except LlmCancelled:
                return False  # cancelled, or other work waits: `run` says which
            except ModelUnavailable as err:
                self._skip(f"metadata extraction stopped: {err.message}")
                return False
            except LlmError as err:
                # A timeout or a server error on this note: asked again next sync.
                report.errors.append(f"{part.index.prefix}{path}: extraction failed: {err}")
                return True
            report.notes_extracted += 1
            # What was not stored, and why: the log says it as it happens.
            for reason in found.reasons():
                log.info("extraction of %s%s: %s", part.index.prefix, path, reason)
        store.writer.apply_extraction(path, content_hash, part.key, found)
        return True

    def _skip(self, reason: str | None) -> None:
        """Say why the phase does not run, once per reason (None: it runs)."""
        self.message = reason
        if reason is not None and reason != self._said:
            log.warning("%s", reason)
        self._said = reason

    # --- the status ------------------------------------------------------------------------

    def status(self, roots: Sequence[ExtractRoot]) -> MetadataStatus | None:
        """How far extraction is, or why it does not run; None without any schema."""
        found = [(index, self._schemas.get(index.root)) for index in roots]
        schemas = [(index, schema) for index, schema in found if schema is not None]
        if not schemas and self.message is None:
            return None
        model = model_identity(self._model) if self._model is not None else None
        done = total = 0
        for index, schema in schemas:
            total += index.store.reader.file_count()
            if model is not None:
                done += index.store.writer.extractions_done(ExtractionKey(schema.digest, model))
        return MetadataStatus(
            schema_file=schemas[0][1].source if schemas else None,
            model=model,
            extracted=done,
            total=total,
            message=self.message,
        )
