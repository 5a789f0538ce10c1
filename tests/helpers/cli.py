"""Running the installed `kb` console script as a user would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

KB = Path(sys.executable).with_name("kb")
REPO = Path(__file__).resolve().parents[2]
# The embedder factory the test processes use (`tests/fakes/embedder.py`): no model.
HASHING = "tests.fakes.embedder:HashingEmbedder"
# The environment of a `kb` process that embeds with it.
HASHED = {"KB_EMBEDDER_FACTORY": HASHING, "PYTHONPATH": str(REPO)}


def run(
    *args: str, storage: Path, cwd: Path | None = None, **extra_env: str
) -> subprocess.CompletedProcess[str]:
    # No progress lines unless a test asks for them: a sync that takes over the default 5 s
    # on a busy machine would add "kb: indexing …" lines to the stderr the tests read.
    env = {**os.environ, "KB_STORAGE": str(storage), "KB_PROGRESS_SECONDS": "3600", **extra_env}
    return subprocess.run(
        [str(KB), *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300
    )
