"""`kb status` from a terminal while another `kb index` builds the index: both real
commands in processes of their own. The indexing one is held in its vectors phase with
some passages embedded (`HeldEmbedder`), so the test reads the status at that point,
ordered by the embedder's files, not by time: the other process's phase, counts and
time left, and vectors never "complete" while any are pending. Meanwhile a second
`kb index` says, in a terminal's words, that the index is held, and exits 4."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from tests.helpers.cli import KB, REPO, run

HELD = {
    "KB_EMBEDDER_FACTORY": "tests.fakes.paced_embedder:HeldEmbedder",
    "PYTHONPATH": str(REPO),
}
DEADLINE = 120.0  # seconds any one condition is waited for (a loaded machine)


def wait_for(check: Any, what: str) -> Any:
    """`check()`'s first true answer, asked again until DEADLINE."""
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        answer = check()
        if answer:
            return answer
        time.sleep(0.1)
    raise AssertionError(f"never happened: {what}")


def test_status_shows_the_other_process_progress_and_time_left(
    workspace: Path, storage: Path, tmp_path: Path
) -> None:
    hold_dir = tmp_path / "hold"
    hold_dir.mkdir()
    hold = hold_dir / "second-batch.hold"
    hold.touch()
    env = {**os.environ, "KB_STORAGE": str(storage), "KB_TEST_HOLD_DIR": str(hold_dir), **HELD}
    writer = subprocess.Popen(
        [str(KB), "index", "-w", str(workspace)],
        env={**env, "KB_PROGRESS_SECONDS": "3600"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: (hold_dir / "second-batch.waiting").exists(), "the second batch")
        ws = ("-w", str(workspace))

        def status() -> dict[str, Any]:
            done = run("status", *ws, "--json", storage=storage, **HELD)
            assert done.returncode == 0, done.stderr
            payload: dict[str, Any] = json.loads(done.stdout)
            # Whenever it is read: the other process's sync, vectors not all ready.
            assert (payload["state"], payload["readOnly"]) == ("indexing", True), payload
            progress = payload["progress"]
            assert progress["phase"] == "vectors", progress
            assert 0 <= progress["chunksDone"] < progress["chunksTotal"], progress
            assert payload["vectorsReady"] < 1.0, payload
            return payload

        # The writer publishes its estimate with its steps and again every second.
        def with_time_left() -> dict[str, Any] | None:
            payload = status()
            progress = payload["progress"]
            return payload if progress["secondsLeft"] is not None else None

        payload = wait_for(with_time_left, "a time left")
        progress = payload["progress"]
        assert progress["secondsLeft"] >= 0 and progress["chunksDone"] > 0, progress
        assert payload["vectorsReady"] <= progress["chunksDone"] / progress["chunksTotal"]

        text = run("status", *ws, storage=storage, **HELD)
        lines = text.stdout.splitlines()
        shown = next(line for line in lines if line.startswith("progress:"))
        assert "Keyword search ready · embedding " in shown and " left" in shown, shown
        vectors = next(line for line in lines if line.startswith("vectors:"))
        assert "complete" not in vectors, vectors
        assert " passages of this sync embedded" in vectors, vectors

        # A second kb index: the index is held; in a terminal's words, with its own code.
        second = run("index", *ws, storage=storage, **HELD)
        assert second.returncode == 4, second.stderr
        assert second.stderr.startswith("kb: another kb index, kb mcp or an editor is indexing")
        assert "kb-lsp process" not in second.stderr
    finally:
        hold.unlink(missing_ok=True)
        _, err = writer.communicate(timeout=300)
    assert writer.returncode == 0, err
    after = json.loads(run("status", "-w", str(workspace), "--json", storage=storage).stdout)
    assert (after["state"], after["vectorsReady"], after["readOnly"]) == ("ready", 1.0, False)
