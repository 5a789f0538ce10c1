"""The server answers while a cold index runs (issue 25): the real server over stdio,
its first embedding batch a CPU hog in the server's own process, held by the test
(`tests/fakes/paced_embedder.py`). `initialize` and `kb/status` are answered before that
batch ends — ordered by events (the batch says when it started and ended), never by a
clock — and the status says the sync is under way."""

from __future__ import annotations

from pathlib import Path

from .conftest import running_server, wait_for

HOGGING_EMBEDDER = "tests.fakes.paced_embedder:HoggingEmbedder"


async def test_status_is_answered_while_the_first_batch_hogs_the_cpu(
    workspace: Path, storage: Path, tmp_path: Path
) -> None:
    holds = tmp_path / "holds"
    holds.mkdir()
    hold = holds / "first-batch.hold"
    hold.touch()
    started, ended = holds / "first-batch.waiting", holds / "first-batch.done"
    env = {"KB_TEST_HOLD_DIR": str(holds)}
    try:
        async with running_server(
            [workspace], storage, embedder=HOGGING_EMBEDDER, env=env, wait_ready=False
        ) as kb:
            # `initialize` was answered (running_server waited for it) before the batch ended.
            assert not ended.exists()

            async def hogging() -> bool:
                return started.exists()

            await wait_for(hogging, "the first batch to start")
            status = await kb.status()
            assert not ended.exists(), "kb/status waited for the first batch"
            assert status["state"] == "indexing"
            assert status["progress"]["phase"] == "vectors"
            assert status["keywordComplete"] is True  # keyword search works meanwhile
            found = await kb.search("SPEI cut-off", mode="keyword")
            assert found["results"] and not ended.exists()

            hold.unlink()
            ready = await kb.wait_until_ready()
            assert ended.exists() and ready["progress"] is None
    finally:
        hold.unlink(missing_ok=True)
