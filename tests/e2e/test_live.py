"""The index follows the disk by itself: no kb/reindex anywhere in here."""

from __future__ import annotations

import os
from pathlib import Path

from .conftest import KbClient, wait_for


async def test_write_edit_rename_delete(kb: KbClient, workspace: Path) -> None:
    note = workspace / "notes" / "zebra-crossing.md"
    note.parent.mkdir()
    note.write_text("# Zebra crossing\n\nThe quokka committee meets on Tuesdays.\n")
    hit = await kb.wait_for_hit("quokka committee", "notes/zebra-crossing.md")
    assert hit["title"] == "Zebra crossing"

    note.write_text("# Zebra crossing\n\nThe narwhal council meets on Fridays.\n")
    await kb.wait_for_hit("narwhal council", "notes/zebra-crossing.md")
    await kb.wait_for_no_hit("quokka committee", "notes/zebra-crossing.md")

    renamed = workspace / "notes" / "pedestrian.md"
    os.rename(note, renamed)
    await kb.wait_for_hit("narwhal council", "notes/pedestrian.md")
    await kb.wait_for_no_hit("narwhal council", "notes/zebra-crossing.md")

    renamed.unlink()
    await kb.wait_for_no_hit("narwhal council", "notes/pedestrian.md")
    assert kb.index_changes, "no kb/indexChanged notification"
    assert {"state", "files", "chunks", "pending"} <= set(kb.index_changes[-1])


async def test_atomic_save(kb: KbClient, workspace: Path) -> None:
    target = workspace / "glossary.md"
    temp = workspace / ".glossary.md.tmp-4242"
    temp.write_text(target.read_text() + "\n## Xylophone\n\nA wombat ledger entry.\n")
    os.replace(temp, target)
    await kb.wait_for_hit("wombat ledger", "glossary.md")
    response = await kb.search("wombat ledger")
    assert all(".tmp" not in hit["path"] for hit in response["results"])


async def test_burst_of_200_files(kb: KbClient, workspace: Path) -> None:
    before = (await kb.status())["files"]
    folder = workspace / "burst"
    folder.mkdir()
    for i in range(200):
        (folder / f"note-{i:03}.md").write_text(f"# Burst note {i}\n\nmarmot{i} observations.\n")

    async def all_in() -> bool:
        status = await kb.status()
        return bool(status["files"] == before + 200 and status["state"] == "ready")

    await wait_for(all_in, "all 200 files indexed")
    await kb.wait_for_hit("marmot137 observations", "burst/note-137.md")
