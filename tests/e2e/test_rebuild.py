"""A full rebuild (`kb/reindex {full: true}`) never breaks readers: searches in the
window that rebuilds and in a read-only second window answer, correctly, while it runs,
and see what was written before it once it is done.

The test embedder holds the rebuild in the middle (`GatedEmbedder`: a file it finds new
is not embedded while the test holds it), so every search below runs inside it, however
fast the machine."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

from lsprotocol import types
from tests.fakes.embedder import HOLD_DIR_VARIABLE

from .conftest import GATED_EMBEDDER, KbClient, running_server, wait_for

QUERY = "Mexico payments SPEI cut-off"
MEXICO = "payments/mexico-payments.md"
REBUILDING = "Rebuilding the knowledge base"


def held(holds: Path, name: str) -> Callable[[], Awaitable[bool]]:
    async def waiting() -> bool:
        return (holds / f"{name}.waiting").exists()

    return waiting


def rebuilding(kb: KbClient) -> bool:
    """A rebuild's progress has begun and not ended."""
    return any(
        isinstance(reports[0], types.WorkDoneProgressBegin)
        and reports[0].title == REBUILDING
        and not isinstance(reports[-1], types.WorkDoneProgressEnd)
        for reports in kb.lsp.progress_reports.values()
        if reports
    )


async def test_searches_answer_during_a_full_rebuild_in_both_windows(
    workspace: Path, storage: Path, tmp_path: Path
) -> None:
    holds = tmp_path / "holds"
    holds.mkdir()
    env = {HOLD_DIR_VARIABLE: str(holds)}
    async with (
        running_server([workspace], storage, embedder=GATED_EMBEDDER, env=env) as first,
        running_server([workspace], storage, embedder=GATED_EMBEDDER, env=env) as second,
    ):
        assert (await second.status())["readOnly"] is True
        (holds / "a.hold").touch()
        (holds / "b.hold").touch()
        # The writer is busy: the watcher's sync of a note is held in its embedding.
        (workspace / "zebra.md").write_text(
            "# Zebra\n\nThe quokka ledger closes on Fridays.\nHOLD-a\n"
        )
        await wait_for(held(holds, "a"), "the note's sync to be held")
        # The rebuild queues behind it (kb/status answers after it was queued: the server
        # handles messages in order), and a file written now is new to it: it is held there.
        rebuild = asyncio.ensure_future(first.request("kb/reindex", {"full": True}))
        await first.status()
        (workspace / "held.md").write_text("# Held\n\nHOLD-b\n")
        (holds / "a.hold").unlink()
        await wait_for(held(holds, "b"), "the rebuild to be held")
        assert rebuilding(first) and not rebuild.done()

        # Inside the rebuild: both windows answer, with the right file first, and find the
        # note synced before it.
        for kb in (first, second):
            for _ in range(3):
                assert (await kb.search(QUERY))["results"][0]["path"] == MEXICO
            assert (await kb.search("quokka ledger"))["results"][0]["path"] == "zebra.md"
        assert (await first.status())["state"] == "indexing"
        assert rebuilding(first) and not rebuild.done()  # still held: they ran inside it

        (holds / "b.hold").unlink()
        status = await rebuild
        # (It may say "indexing": the watcher's own batch for the held file can follow it.)
        assert status["state"] != "error" and not status["message"]
        for kb in (first, second):
            assert (await kb.search(QUERY))["results"][0]["path"] == MEXICO
            response = await kb.search("quokka ledger")
            assert response["results"][0]["path"] == "zebra.md"
