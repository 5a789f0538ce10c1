"""A full rebuild (`kb/reindex {full: true}`) never breaks readers: searches in the
window that rebuilds and in a read-only second window keep answering, correctly, while
it runs, and see what was written before it once it is done."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from .conftest import KbClient, running_server

QUERY = "Mexico payments SPEI cut-off"
MEXICO = "payments/mexico-payments.md"


async def search_until(kb: KbClient, done: asyncio.Future[Any]) -> list[list[str]]:
    """Search in a loop until `done`; every answer's paths, in order."""
    answers = []
    while True:
        finished = done.done()
        response = await kb.search(QUERY)
        answers.append([hit["path"] for hit in response["results"]])
        if finished:
            return answers


async def test_searches_answer_during_a_full_rebuild_in_both_windows(
    workspace: Path, storage: Path
) -> None:
    bulk = workspace / "bulk"
    bulk.mkdir()
    for i in range(150):  # enough files that the rebuild takes a while
        (bulk / f"ledger-{i:03}.md").write_text(
            f"# Ledger {i}\n\nReconciliation notes for account {i}.\n"
        )
    async with (
        running_server([workspace], storage) as first,
        running_server([workspace], storage) as second,
    ):
        assert (await second.status())["readOnly"] is True
        note = workspace / "zebra.md"
        note.write_text("# Zebra\n\nThe quokka ledger closes on Fridays.\n")

        rebuild = asyncio.ensure_future(first.request("kb/reindex", {"full": True}))
        here, there = await asyncio.gather(
            search_until(first, rebuild), search_until(second, rebuild)
        )
        status = await rebuild

        # (It may say "indexing": the watcher's own batch for the note can follow it.)
        assert status["state"] != "error" and not status["message"]
        # Every search answered (an error would have raised) with the right file first.
        for answers in (here, there):
            assert answers and all(paths and paths[0] == MEXICO for paths in answers)
        # And the last ones see the note written before the rebuild, in both windows.
        for kb in (first, second):
            response = await kb.search("quokka ledger")
            assert response["results"][0]["path"] == "zebra.md"
