"""The one progress of a sync, over every root and both phases.

A sync first scans (every root it covers), and only then knows its work: the files it
reads (new, changed, removed) and the files whose vectors are pending (written by it, or
left by an earlier sync that stopped). Their union is the sync's `total`, fixed from then
on; it never changes within the sync, whatever the phase or the root, so a progress bar
never sees a total move.

* "keyword" (reading): `done` is the files of the total with nothing left to read — the
  ones that only wait for vectors count as read from the start.
* "vectors" (embedding): `done` is the files of the total that are complete; the
  chunks to embed (`chunks_total`) are counted when the phase starts and fixed too, and
  `chunks_done` moves inside a big file while `done` stands still.

* "metadata" (extracting, `extraction.py`): the model's fields of each note; `done` and
  `total` count the notes of this phase (every note whose extraction is not current),
  its own total, fixed when the phase starts.

`SyncProgress` (records.py) carries each step to the progress callback.
"""

from __future__ import annotations

from collections.abc import Callable

from kb_lsp.engine.index.reports import SyncProgress
from kb_lsp.protocol import IndexPhase

ProgressCallback = Callable[[SyncProgress], None]


class SyncTally:
    def __init__(self, progress: ProgressCallback | None) -> None:
        self._progress = progress
        self.total = 0
        self._read = 0
        self._complete = 0
        self._chunks_total = 0
        self._chunks_done = 0
        self._chunks_embedding = 0  # embedded in the batch being stored, not stored yet
        self._chunks_reused = 0  # of the done and embedding ones: vectors not embedded
        self._phase: IndexPhase = "scanning"
        self._extract_total = 0
        self._extracted = 0

    def scanning(self) -> None:
        if self._progress:
            self._progress(SyncProgress(0, 0, None, "scanning"))

    def planned(self, total: int, to_read: int) -> None:
        """The scan is done: `total` files in this sync, `to_read` of them to read (or
        remove) in the keyword phase."""
        self.total = total
        self._read = max(0, total - to_read)
        self._phase = "keyword"
        self._emit(None)

    def read(self, count: int = 1, path: str | None = None) -> None:
        """`count` more files read, written or removed."""
        self._read = min(self.total, self._read + count)
        self._emit(path)

    def vectors(self, pending_files: int, chunks: int) -> None:
        """The keyword phase is over; `pending_files` files (every root) wait for the
        vectors of `chunks` chunks."""
        self._phase = "vectors"
        self._complete = max(0, self.total - pending_files)
        self._chunks_total = chunks
        self._chunks_done = 0
        self._chunks_reused = 0
        if pending_files:
            self._emit(None)

    def embedded(self, chunks: int, *, reused: bool = False) -> None:
        """`chunks` more passages of the batch under way are embedded (not stored yet):
        the count moves every few dozen passages rather than once a batch. The batch's
        `stored` counts at least as many, so the count never goes back. `reused`: their
        vectors were there already (cached, a team's), counted as such."""
        self._chunks_embedding += chunks
        if reused:
            self._chunks_reused += chunks
        self._emit(None)

    def stored(self, chunks: int, files: int, path: str | None) -> None:
        """A batch of `chunks` vectors is stored, completing `files` files."""
        self._chunks_embedding = 0
        self._chunks_done = min(self._chunks_total, self._chunks_done + chunks)
        self._complete = min(self.total, self._complete + files)
        self._emit(path)

    def metadata(self, notes: int) -> None:
        """Vectors are done; the model reads `notes` notes for their fields."""
        self._phase = "metadata"
        self._extract_total = notes
        self._extracted = 0
        if notes:
            self._emit(None)

    def extracted(self, path: str | None) -> None:
        self._extracted = min(self._extract_total, self._extracted + 1)
        self._emit(path)

    def _emit(self, path: str | None) -> None:
        if not self._progress:
            return
        if self._phase == "metadata":
            step = SyncProgress(self._extracted, self._extract_total, path, "metadata")
        elif self._phase == "vectors":
            step = SyncProgress(
                self._complete,
                self.total,
                path,
                "vectors",
                min(self._chunks_total, self._chunks_done + self._chunks_embedding),
                self._chunks_total,
                min(self._chunks_total, self._chunks_reused),
            )
        else:
            step = SyncProgress(self._read, self.total, path, "keyword")
        self._progress(step)
