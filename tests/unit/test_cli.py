"""The `kb` console script, run as a user runs it, on a temp copy of examples/workspace."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.embedder import HashingEmbedder
from tests.fakes.ollama_server import ScriptedOllama, answer, stall
from tests.helpers.cli import HASHED, HASHING, KB, REPO, run
from tests.helpers.runtime import HeldSync, editor_runtime

from kb_lsp import cli
from kb_lsp.cli.common import EXIT_HELD
from kb_lsp.config import load_settings
from kb_lsp.engine.knowledge import KnowledgeBase


def test_console_script_is_installed() -> None:
    assert KB.exists(), "pip install -e . installs the `kb` console script"


def test_search_prints_numbered_list_and_resync_embeds_nothing(
    workspace: Path, storage: Path
) -> None:
    first = run("search", "mexico payment files", "--workspace", str(workspace), storage=storage)
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert lines[0] == "1, payments/mexico-payments.md (filename match)"
    assert lines[1].startswith("   ## ") and " — L" in lines[1] and '"' in lines[1]
    assert "chunks embedded" in first.stderr

    second = run("search", "mexico payment files", "--workspace", str(workspace), storage=storage)
    assert second.returncode == 0
    assert second.stdout == first.stdout
    # Nothing changed: the quiet re-sync prints nothing and embeds nothing.
    assert "chunks embedded" not in second.stderr


def test_search_json_is_the_kb_search_result(workspace: Path, storage: Path) -> None:
    result = run(
        "search",
        "Deutsche Bank Thursday supplier payments",
        "-w",
        str(workspace),
        "--json",
        "-n",
        "3",
        storage=storage,
    )
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert set(payload) == {"query", "results", "index", "didYouMean", "warnings"}
    assert payload["warnings"] == []
    assert payload["query"] == "Deutsche Bank Thursday supplier payments"
    assert payload["didYouMean"] is None  # every word is in the index
    assert 1 <= len(payload["results"]) <= 3
    hit = payload["results"][0]
    assert set(hit) == {
        "n",
        "uri",
        "path",
        "root",
        "title",
        "label",
        "score",
        "snippet",
        "heading",
        "range",
        "meta",
        "marks",
    }
    assert hit["path"] == "payments/germany-payments.md"
    assert set(payload["index"]) >= {
        "state",
        "files",
        "chunks",
        "pending",
        "embedder",
        "store",
        "llm",
    }
    assert payload["index"]["state"] == "ready"


def test_index_and_status(workspace: Path, storage: Path) -> None:
    (workspace / "blob.md").write_bytes(b"\x00\x01binary")
    indexed = run("index", str(workspace), storage=storage)
    assert indexed.returncode == 0, indexed.stderr
    assert "files" in indexed.stdout and "chunks" in indexed.stdout
    status = run("status", "-w", str(workspace), storage=storage)
    assert status.returncode == 0
    assert "blob.md: binary file" in status.stdout
    as_json = json.loads(run("status", "-w", str(workspace), "--json", storage=storage).stdout)
    assert as_json["files"] == len(list(workspace.rglob("*.md"))) - 1
    assert {"path": "blob.md", "reason": "binary file"} in as_json["skipped"]


def test_index_says_how_long_it_took_and_takes_the_workspace_as_w(
    workspace: Path, storage: Path
) -> None:
    indexed = run("index", "-w", str(workspace), storage=storage, **HASHED)
    assert indexed.returncode == 0, indexed.stderr
    summary = next(line for line in indexed.stderr.splitlines() if line.startswith("Indexed "))
    # The sync's own time: milliseconds below a second, else to a tenth of a second.
    took = r"\((\d+ ms|\d+\.\ds)\)"
    assert re.fullmatch(rf"Indexed 14 changed files, .* reused {took}", summary), summary
    # The positional PATH still works, alone or naming the same folder as -w.
    again = run("index", str(workspace), "-w", str(workspace), storage=storage, **HASHED)
    assert again.returncode == 0, again.stderr
    noop = next(line for line in again.stderr.splitlines() if line.startswith("Indexed "))
    assert noop.startswith("Indexed 0 changed files, removed 0, 14 unchanged"), noop
    # Nothing to do takes some milliseconds, never a "(0.0s)" that looks unmeasured.
    assert re.search(rf"{took}$", noop) and "(0.0s)" not in noop, noop
    other = run("index", str(workspace), "-w", str(workspace.parent), storage=storage)
    assert other.returncode == 2
    assert other.stderr.startswith("kb: two workspaces given")


def test_index_off_a_terminal_prints_progress_lines(workspace: Path, storage: Path) -> None:
    """stderr is a pipe here, as in CI: plain lines rather than a bar, or silence. A line
    every KB_PROGRESS_SECONDS (0: every step, so the test does not wait for the clock)."""
    indexed = run("index", str(workspace), storage=storage, KB_PROGRESS_SECONDS="0", **HASHED)
    assert indexed.returncode == 0, indexed.stderr
    assert "\r" not in indexed.stderr
    phases = ("kb: Reading ", "kb: Keyword search ready")
    lines = [line for line in indexed.stderr.splitlines() if line.startswith(phases)]
    rate = r"[\d.]+ (files|passages)/s( · (less than a minute|about [\d.]+ (min|h)) left)?"
    reading = rf"kb: Reading \d+/14 files · {rate}"
    embedding = rf"kb: Keyword search ready · embedding \d+/\d+ passages · {rate}"
    assert any(re.fullmatch(reading, line) for line in lines), lines
    assert any(re.fullmatch(embedding, line) for line in lines), lines
    assert all(re.fullmatch(f"{reading}|{embedding}", line) for line in lines), lines
    # Nothing to do: no progress to show.
    quiet = run("index", str(workspace), storage=storage, KB_PROGRESS_SECONDS="0", **HASHED)
    assert not any(line.startswith(phases) for line in quiet.stderr.splitlines())
    # --full reads every file again and reuses every cached vector: counted as reused,
    # never "embedding 0/67 passages" while they are.
    full = run(
        "index", "--full", str(workspace), storage=storage, KB_PROGRESS_SECONDS="0", **HASHED
    )
    assert full.returncode == 0, full.stderr
    chunks = re.search(r"0 chunks embedded, (\d+) reused", full.stderr)
    assert chunks is not None, full.stderr
    total = int(chunks.group(1))
    vectors = [line for line in full.stderr.splitlines() if "embedding " in line]
    assert vectors, full.stderr
    assert all(re.search(rf"embedding (\d+)/{total} passages \(\1 reused\)", v) for v in vectors)
    # A bad interval is said once, and the default is used.
    bad = run("index", str(workspace), storage=storage, KB_PROGRESS_SECONDS="soon", **HASHED)
    assert bad.returncode == 0
    assert "kb: KB_PROGRESS_SECONDS='soon' is not a number of seconds: using 5" in bad.stderr


@pytest.mark.parametrize("command", [("search", "payments", "--json"), ("status", "--json")])
def test_output_into_a_closed_pipe_ends_quietly(
    command: tuple[str, ...], workspace: Path, storage: Path
) -> None:
    """`kb search … --json | head`: the reader goes away; the command ends with 0 and
    nothing on stderr (it said `kb: BrokenPipeError: [Errno 32] Broken pipe`, exit 1)."""
    assert run("index", str(workspace), storage=storage, **HASHED).returncode == 0
    env = {**os.environ, "KB_STORAGE": str(storage), **HASHED}
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first byte
    try:
        done = subprocess.run(
            [str(KB), *command, "-w", str(workspace)],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            timeout=300,
        )
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (0, "")


def test_ask_without_a_model_prints_passages_exits_0_and_names_the_variable(
    workspace: Path, storage: Path
) -> None:
    """No model: the best passages, and why, in the terminal's words: the setting with
    the environment variable that sets it. Exit 0: an answer was printed (docs/cli.md says
    so); `--json` has `mode: "fallback"` for scripts."""
    ws = ("-w", str(workspace))
    down = {"KB_OLLAMA_HOST": "http://127.0.0.1:9", **HASHED}
    asked = run("ask", "When is the Mexico cut-off?", *ws, storage=storage, **down)
    assert asked.returncode == 0, asked.stderr
    why = [line for line in asked.stderr.splitlines() if line.startswith("[No model: ")]
    assert len(why) == 1, asked.stderr
    assert "127.0.0.1:9" in why[0]
    assert "kb.ollama.host (KB_OLLAMA_HOST)" in why[0]
    # What the notes say first, quoted with file and lines; then what the rest is.
    lead, heading = asked.stdout.split("\n\n")[:2]
    heading_line, *quotes = lead.splitlines()
    assert heading_line == "From your notes:" and 1 <= len(quotes) <= 2
    assert all(re.fullmatch(r"- “[^”]+” \[[\w./-]+\.md:\d+(-\d+)?\]", q) for q in quotes), lead
    assert heading.startswith("**No model: here are the best passages**")
    assert asked.stdout.rstrip().endswith("[NO MODEL: the best passages; stop: answer]")
    as_json = run("ask", "When is the Mexico cut-off?", *ws, "--json", storage=storage, **down)
    assert as_json.returncode == 0
    assert json.loads(as_json.stdout)["mode"] == "fallback"
    # The OpenAI-compatible provider's message names its variables too.
    openai = {**down, "KB_LLM_PROVIDER": "openai", "KB_LLM_BASE_URL": "http://127.0.0.1:9/v1"}
    other = run("ask", "When is the Mexico cut-off?", *ws, storage=storage, **openai)
    assert other.returncode == 0
    assert "kb.llm.baseUrl (KB_LLM_BASE_URL)" in other.stderr, other.stderr


def test_status_probe_waits_no_longer_than_its_help_says(
    workspace: Path,
    storage: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`--probe` asks the model for at most PROBE_SECONDS (the help says so), however the
    server behaves: here one that never answers, held until the test lets it go."""
    import kb_lsp.engine.llm as llm_package
    from kb_lsp import cli
    from kb_lsp.cli import status as status_command

    helped = run("status", "--help", storage=storage)
    assert "waits up to 2 s" in " ".join(helped.stdout.split())
    assert status_command.PROBE_SECONDS == 2.0
    monkeypatch.setenv("KB_STORAGE", str(storage))
    monkeypatch.setenv("KB_EMBEDDER_FACTORY", HASHED["KB_EMBEDDER_FACTORY"])
    monkeypatch.setenv("KB_OLLAMA_HOST", "http://127.0.0.1:9")
    assert cli.main(["index", str(workspace)]) == 0
    released = threading.Event()
    real = llm_package.create_llm

    def hanging(settings: Any, **kwargs: Any) -> Any:
        model = real(settings, **kwargs)

        def status(timeout: float) -> Any:
            released.wait()  # a server that accepts and says nothing, however long
            return model.configured_status()

        model.status = status
        return model

    monkeypatch.setattr(llm_package, "create_llm", hanging)
    monkeypatch.setattr(status_command, "PROBE_SECONDS", 0.05)  # the same bound, shorter
    capsys.readouterr()
    try:
        assert cli.main(["status", "-w", str(workspace), "--probe", "--json"]) == 0
    finally:
        released.set()
    llm = json.loads(capsys.readouterr().out)["llm"]
    assert llm["reachable"] is False
    assert llm["message"].startswith("Ollama at http://127.0.0.1:9 did not answer within 0.05 s")


def test_the_int8_copy_of_the_model_is_announced_once(
    workspace: Path,
    storage: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The first command after install makes the int8 copy (a minute on a busy machine):
    one line says so, without --verbose; the next command says nothing of it."""
    from kb_lsp import cli
    from kb_lsp.engine.embed import quantize
    from kb_lsp.engine.embed.minilm import MiniLMEmbedder
    from kb_lsp.engine.knowledge import model_cache

    made = MiniLMEmbedder(int8_cache=model_cache())  # the session's copy
    made.load()
    assert made.int8 is not None
    calls: list[Path] = []

    def derive(source: Path, dest: Path) -> None:  # the session's copy, not a new one
        calls.append(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(made.int8.path, dest)  # type: ignore[union-attr]

    monkeypatch.setattr(quantize, "derive", derive)
    monkeypatch.setattr(quantize, "fastest_threads", lambda run: 1)
    monkeypatch.setenv("KB_MODEL_CACHE", str(tmp_path / "fresh-cache"))
    monkeypatch.setenv("KB_STORAGE", str(storage))
    monkeypatch.delenv("KB_EMBEDDER_FACTORY", raising=False)
    assert cli.main(["index", str(workspace)]) == 0
    first = capsys.readouterr().err.splitlines()
    notices = [line for line in first if "int8 copy" in line]
    assert len(calls) == 1
    assert len(notices) == 1, first
    assert notices[0].startswith(
        "kb: making the int8 copy of the embedding model, once per machine"
    )
    assert str(tmp_path / "fresh-cache") in notices[0]
    assert cli.main(["search", "SPEI", "-w", str(workspace)]) == 0
    assert "int8" not in capsys.readouterr().err
    assert len(calls) == 1


def test_build_output_is_ignored_by_git() -> None:
    """`pip wheel .` leaves build/; it is not something to commit."""
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", "build/lib/kb_lsp/cli.py"], cwd=REPO, timeout=60
    )
    assert ignored.returncode == 0


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("search", "x", "--workspace", "/no/such/folder"), "no such folder"),
        (("index", "/no/such/folder"), "no such folder"),
        (("search", "x", "--limit", "0"), "between 1 and"),
        (("search", "x", "--mode", "fuzzy"), "invalid choice"),
        (("serve", "--tcp", "localhost:http"), "HOST:PORT"),
    ],
)
def test_errors_are_one_line_without_traceback(
    args: tuple[str, ...], needle: str, storage: Path, tmp_path: Path
) -> None:
    result = run(*args, storage=storage, cwd=tmp_path)
    assert result.returncode != 0
    assert needle in result.stderr
    assert "Traceback" not in result.stderr


def test_locked_store_index_fails_clearly_and_search_still_answers(
    workspace: Path, storage: Path
) -> None:
    assert run("index", str(workspace), storage=storage).returncode == 0
    settings = load_settings({"storage": str(storage)}).settings
    # Another process (an editor window) holds the writer lock; this test plays it.
    holder = KnowledgeBase([workspace], settings, embedder=HashingEmbedder(384))
    try:
        locked = run("index", str(workspace), storage=storage)
        # Its own exit code: not 2 (bad usage), the same command works once it is done.
        assert locked.returncode == EXIT_HELD == 4
        assert locked.stderr.splitlines() == [
            "kb: another kb index, kb mcp or an editor is indexing this folder and keeps its "
            "index up to date; wait for it (kb status shows how far it is), stop it, or index "
            "into another --storage"
        ]
        search = run("search", "SPEI", "-w", str(workspace), storage=storage)
        assert search.returncode == 0
        # One line, in the command's words: not the store's and the runtime's log
        # warnings besides ("another window…"), which stay in the log (-v shows them).
        assert search.stderr.splitlines() == [
            "kb: another kb index, kb mcp or an editor keeps this folder's index: "
            "answering from it read-only"
        ]
        assert search.stdout.startswith("1, ")
        verbose = run("-v", "search", "SPEI", "-w", str(workspace), storage=storage)
        assert "WARNING kb_lsp.engine.store: The index at" in verbose.stderr
    finally:
        holder.close()


def test_search_while_another_process_builds_the_index_says_so(
    workspace: Path, storage: Path, monkeypatch: pytest.MonkeyPatch
) -> None:

    from kb_lsp.runtime import Hooks

    monkeypatch.setenv("KB_EMBEDDER_FACTORY", HASHING)

    class HeldWhileReading(HeldSync):
        """Held at its first file to read: the total is known, nothing read yet."""

        def report(self, progress: Any) -> None:
            if progress.phase == "keyword":
                super().report(progress)

    held = HeldWhileReading()
    # Another process (an editor window) on its cold index, held before its first file.
    builder = editor_runtime(
        Hooks(start_progress=held.start), watch=False, probe_llm=False, listen=False
    )
    try:
        builder.open([workspace], load_settings({"storage": str(storage)}).settings)
        assert held.holding.wait(60)
        fake = {"KB_EMBEDDER_FACTORY": HASHING, "PYTHONPATH": str(REPO)}
        search = run("search", "SPEI", "-w", str(workspace), storage=storage, **fake)
        assert search.returncode == 3, search.stderr
        total = len(list(workspace.rglob("*.md")))
        assert search.stderr.splitlines() == [
            "kb: another kb index, kb mcp or an editor is building this folder's index "
            f"(Reading 0/{total} files); results are partial until it is done"
        ]
        assert search.stdout.strip() == "No matching files."
        status = run("status", "-w", str(workspace), "--json", storage=storage, **fake)
        assert status.returncode == 0, status.stderr
        payload = json.loads(status.stdout)
        assert (payload["state"], payload["readOnly"], payload["files"]) == ("indexing", True, 0)
        assert payload["message"] == "being built by another process"
        # Its progress reads as this process's own would: the files it has left are
        # pending, keyword search is not complete while it reads.
        assert payload["progress"] == {
            "phase": "keyword",
            "filesDone": 0,
            "filesTotal": total,
            "chunksDone": 0,
            "chunksTotal": 0,
            "chunksReused": 0,
            "secondsLeft": None,  # no rate yet: nothing read
        }
        assert (payload["pending"], payload["keywordComplete"]) == (total, False)
        text = run("status", "-w", str(workspace), storage=storage, **fake)
        lines = text.stdout.splitlines()
        assert "state:     indexing — being built by another process" in lines
        assert f"progress:  Reading 0/{total} files" in lines
        assert f"pending:   {total} files to index" in lines
        assert f"keyword:   0/{total} files read" in lines
        # Nothing is embedded yet: not "complete" (of nothing), in --json or in words.
        assert payload["vectorsReady"] == 0.0
        assert (
            "vectors:   after the files are read: the passages they change are embedded then"
            in lines
        )
    finally:
        held.go.set()
        builder.close()


# --- metadata: --filter, kb schema, problems in kb status ------------------------------------


def _paths(stdout: str) -> set[str]:
    return {line.split(", ", 1)[1].rsplit(" (", 1)[0] for line in stdout.splitlines()[::2]}


def test_search_filter_keeps_exactly_the_matching_files(workspace: Path, storage: Path) -> None:
    """On the example wiki's own front matter (tags, statuses, owners, dates)."""
    ws = ("-w", str(workspace))
    words = run("search", "payments", "--filter", "tag:treasury", *ws, storage=storage, **HASHED)
    assert words.returncode == 0, words.stderr
    assert _paths(words.stdout) == {"payments/mexico-payments.md", "runbooks/treasury-close.md"}
    # A filter alone lists the files it keeps; negation and OR; typed inline in the query.
    alone = run("search", "-f", "tag:payments -status:draft", *ws, storage=storage, **HASHED)
    assert _paths(alone.stdout) == {
        "payments/mexico-payments.md",
        "payments/germany-payments.md",
    }, alone.stderr
    either = run(
        "search", "--filter", "status:draft OR tag:runbook", *ws, storage=storage, **HASHED
    )
    assert _paths(either.stdout) == {
        "payments/brazil-payments.md",
        "projects/policy_brief.md",
        "projects/budget_brief.md",
        "runbooks/treasury-close.md",
        "runbooks/incident-response.md",
    }
    inline = run("search", "cut-off", "tag:payments", "--json", *ws, storage=storage, **HASHED)
    payload = json.loads(inline.stdout)
    assert {hit["path"] for hit in payload["results"]} <= {
        "payments/mexico-payments.md",
        "payments/germany-payments.md",
        "payments/brazil-payments.md",
    }
    assert payload["results"], inline.stderr
    assert all("payments" in hit["meta"]["tags"] for hit in payload["results"])


def test_a_field_no_file_has_says_why_nothing_matched(workspace: Path, storage: Path) -> None:
    """The filter's own error names a likely typo (`ownr` → `owner`); a field that is no
    typo keeps nothing, and the command says which field no file has."""
    ws = ("-w", str(workspace))
    unknown = run("search", "payments", "-f", "bogusfield:x", *ws, storage=storage, **HASHED)
    assert unknown.returncode == 0, unknown.stderr
    assert unknown.stdout.strip() == "No matching files."
    hints = [line for line in unknown.stderr.splitlines() if line.startswith("kb: ")]
    assert hints == ["kb: no indexed file has the field 'bogusfield' (kb schema lists the fields)"]
    # A field some file has, with no file matching: no such line.
    none = run("search", "payments", "-f", "owner:nobody", *ws, storage=storage, **HASHED)
    assert none.stdout.strip() == "No matching files."
    assert "kb: " not in none.stderr


def test_search_says_what_looks_mistyped_and_what_was_meant(workspace: Path, storage: Path) -> None:
    ws = ("-w", str(workspace))
    typo = run("search", "incidnet respnse", *ws, storage=storage, **HASHED)
    assert typo.returncode == 0, typo.stderr
    assert "kb: did you mean 'incident response'? (kb search 'incident response')" in (
        typo.stderr.splitlines()
    )
    slips = run("search", "ownr:priya", *ws, storage=storage, **HASHED)
    assert slips.returncode == 0  # a warning beside the results, not a refusal
    said = [line for line in slips.stderr.splitlines() if line.startswith("kb: query")]
    assert said == [
        "kb: query, character 1: no indexed file has the field 'ownr', so 'ownr:priya' was "
        'searched as words; did you mean owner:"Priya Raman"?'
    ]
    paren = run("search", "tag:payments )", "--json", *ws, storage=storage, **HASHED)
    assert json.loads(paren.stdout)["warnings"] == [
        {
            "where": "query",
            "position": 13,
            "message": "')' without a matching '(': left out",
            "suggestion": "tag:payments",
        }
    ]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("payments", "--filter", "tag:payments )"), "filter, character 14: ')'"),
        (("payments", "--filter", 'owner:"Ana'), "filter, character 7: this quote is never"),
        (("payments modified>2026-13-01",), "query, character 19:"),
        (
            ("payments", "-f", "ownr:x"),
            "no indexed file has the field 'ownr'; did you mean 'owner'?",
        ),
    ],
)
def test_a_bad_filter_is_one_line_with_its_position(
    args: tuple[str, ...], needle: str, workspace: Path, storage: Path
) -> None:
    result = run("search", *args, "-w", str(workspace), storage=storage, **HASHED)
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("kb: ")]
    assert len(errors) == 1 and needle in errors[0], result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_schema_lists_fields_counts_and_values(workspace: Path, storage: Path) -> None:
    as_json = run("schema", "-w", str(workspace), "--json", storage=storage, **HASHED)
    assert as_json.returncode == 0, as_json.stderr
    schema = json.loads(as_json.stdout)
    assert schema["files"] == len(list(workspace.rglob("*.md")))
    fields = {field["name"]: field for field in schema["fields"]}
    assert fields["tag"]["files"] == 7
    assert {v["value"]: v["count"] for v in fields["tag"]["top"]} == {
        "payments": 3,
        "meeting": 2,
        "runbook": 2,
        "treasury": 2,
    }
    assert fields["folder"]["files"] == schema["files"]
    text = run("schema", "-w", str(workspace), storage=storage, **HASHED)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0].startswith(f"{schema['files']} files; metadata fields")
    tag_line = next(line for line in lines if line.split()[0] == "tag")
    assert tag_line.split(None, 1)[1] == (
        "list, 7 files: payments (3), meeting (2), runbook (2), treasury (2)"
    ), tag_line


def test_status_lists_front_matter_problems_with_their_lines(
    workspace: Path, storage: Path
) -> None:
    (workspace / "broken.md").write_text("---\ntitle: x\nstatus: [oops\n---\n# Broken\n\nbody\n")
    assert run("index", str(workspace), storage=storage, **HASHED).returncode == 0
    status = run("status", "-w", str(workspace), storage=storage, **HASHED)
    assert status.returncode == 0, status.stderr
    lines = status.stdout.splitlines()
    at = lines.index("problems:  1 file indexed with a problem to fix")
    assert lines[at + 1].startswith("  broken.md:3: front matter is not valid YAML")
    payload = json.loads(run("status", "-w", str(workspace), "--json", storage=storage).stdout)
    assert payload["problems"][0]["path"] == "broken.md"
    assert payload["problems"][0]["line"] == 2


# --- kb ask: status steps, mode, ungrounded marker, stop reason, --model ----------------------


def test_ask_shows_the_mode_status_steps_and_an_ungrounded_answer(
    workspace: Path, storage: Path
) -> None:
    # A model that cannot call tools, named only by --model (the default is not served).
    with ScriptedOllama(
        [answer("The cut-off is at noon.")], models=["tiny:1b"], capabilities=["completion"]
    ) as server:
        result = run(
            "ask",
            "What is the cut-off for Mexico payments?",
            "--model",
            "tiny:1b",
            "-w",
            str(workspace),
            storage=storage,
            KB_OLLAMA_HOST=server.url,
            **HASHED,
        )
        assert server.errors == []
        assert [request["model"] for request in server.chat_requests] == ["tiny:1b"]
    assert result.returncode == 0, result.stderr
    # The status step says which mode ran and why, on stderr while it works.
    assert "[" in result.stderr and "tiny:1b does not call tools" in result.stderr
    # What the notes say, printed before the model was asked; the model's text as it
    # streamed; then, as the check found it unsupported, why: one answer, nothing twice.
    lead, text, label = result.stdout.split("\n\n")[:3]
    assert lead.startswith("From your notes:\n- “"), result.stdout
    assert "14:30 Mexico City cut-off.” [payments/mexico-payments.md:" in lead
    assert text == "The cut-off is at noon."
    assert label.startswith("> Not supported by your notes: cites no passage.")
    assert result.stdout.count("The cut-off is at noon.") == 1
    assert result.stdout.count("From your notes:") == 1
    # One verdict, first; the mode and why as its small print.
    footer = result.stdout.rstrip().splitlines()[-1]
    assert footer.startswith(
        "[NOT SUPPORTED by your notes: check it against the passages; grounded mode "
        "(tiny:1b does not call tools);"
    ), footer
    assert "GROUNDED" not in footer.replace("NOT SUPPORTED", "")
    # The answer names the passages it was given once (not again as a list).
    assert "- payments/mexico-payments.md L" not in result.stdout
    assert footer.endswith("; stop: answer]"), footer


def test_ask_prints_the_answer_as_it_comes(workspace: Path, storage: Path) -> None:
    text = "Payments are released before 14:30 in Mexico."
    with ScriptedOllama([stall(after_chunks=3, content=text)]) as server:
        env = {
            **os.environ,
            "KB_STORAGE": str(storage),
            "KB_OLLAMA_HOST": server.url,
            "KB_LLM_MODE": "agent",  # its answer, without a tool call, is the answer
            **HASHED,
        }
        process = subprocess.Popen(
            [str(KB), "ask", "When is the Mexico cut-off?", "-w", str(workspace)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            text=True,
        )
        out: list[str] = []
        seen = threading.Condition()

        def read() -> None:
            assert process.stdout is not None
            while chunk := process.stdout.read(1):
                with seen:
                    out.append(chunk)
                    seen.notify_all()

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        with seen:
            # The first pieces are on stdout while the model is still stalled.
            assert seen.wait_for(lambda: "Payments are relea" in "".join(out), timeout=240)
        assert process.poll() is None and not server.released
        server.release()
        assert process.wait(timeout=240) == 0
        reader.join(timeout=60)
    printed = "".join(out)
    # The answer once (its pieces, then what the final answer adds), then the footer.
    assert printed.startswith("Payments are relea\n")
    assert printed.count("Payments are relea") == 1
    assert "; agent mode (kb.llm.mode (KB_LLM_MODE) is agent);" in printed.splitlines()[-1]


def test_ask_says_when_the_answer_was_cut_off(workspace: Path, storage: Path) -> None:
    cut_off = answer("Payments to Mexico must be released befo", done_reason="length")
    with ScriptedOllama([cut_off, cut_off]) as server:
        result = run(
            "ask",
            "When is the Mexico cut-off?",
            "-w",
            str(workspace),
            "--json",
            storage=storage,
            KB_OLLAMA_HOST=server.url,
            KB_LLM_MODE="agent",
            **HASHED,
        )
        text = run(
            "ask",
            "When is the Mexico cut-off?",
            "-w",
            str(workspace),
            storage=storage,
            KB_OLLAMA_HOST=server.url,
            KB_LLM_MODE="agent",
            **HASHED,
        )
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert (payload["stop"], payload["mode"]) == ("length", "agent")
    footer = text.stdout.rstrip().splitlines()[-1]
    assert footer.startswith("[NOT SUPPORTED by your notes: check it against the passages; agent")
    assert "agent mode (kb.llm.mode (KB_LLM_MODE) is agent)" in footer, footer
    assert footer.endswith(
        "stop: length — cut off: the model hit its token limit: raise kb.llm.maxTokens "
        "(--settings) for more]"
    ), footer


def test_status_names_the_provider_and_probes_the_model_when_asked(
    workspace: Path, storage: Path
) -> None:
    ws = ("-w", str(workspace))
    quick = run("status", *ws, storage=storage, KB_OLLAMA_HOST="http://127.0.0.1:9", **HASHED)
    assert quick.returncode == 0, quick.stderr
    assert "llm:       qwen2.5:7b at http://127.0.0.1:9 (ollama): not asked" in quick.stdout
    with ScriptedOllama(models=["tiny:1b"], capabilities=["completion"]) as server:
        probed = run(
            "status",
            *ws,
            "--probe",
            storage=storage,
            KB_OLLAMA_HOST=server.url,
            KB_LLM_MODEL="tiny:1b",
            **HASHED,
        )
    assert probed.returncode == 0, probed.stderr
    assert f"tiny:1b at {server.url} (ollama): answers, does not call tools" in probed.stdout
    # A server that is not there: the model's own message, naming the host and the fix.
    down = run(
        "status",
        *ws,
        "--probe",
        "--json",
        storage=storage,
        KB_OLLAMA_HOST="http://127.0.0.1:9",
        **HASHED,
    )
    llm = json.loads(down.stdout)["llm"]
    assert (llm["provider"], llm["reachable"]) == ("ollama", False)
    assert "127.0.0.1:9" in llm["message"]


def test_a_filter_may_start_with_a_minus(capsys: pytest.CaptureFixture[str]) -> None:
    """`-f -tag:archived` is a filter (a negation), not an unknown option."""
    from kb_lsp import cli

    assert cli.parse_args(["search", "-f", "-tag:archived", "x"]).filter == "-tag:archived"
    assert cli.parse_args(["search", "x", "--filter", "-status:draft"]).filter == "-status:draft"
    assert cli.parse_args(["search", "-f", "tag:a", "x"]).filter == "tag:a"
    # An option after -f stays an option, so argparse says -f lacks its value.
    with pytest.raises(SystemExit) as exited:
        cli.parse_args(["search", "-f", "-w", ".", "x"])
    assert exited.value.code == 2
    assert "argument --filter/-f: expected one argument" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["serch", "payments"], "kb: no command 'serch'; did you mean 'search'?"),
        (["-v", "staus"], "kb: no command 'staus'; did you mean 'status'?"),
        (["frobnicate"], "kb: no command 'frobnicate'; the commands are serve, index, search"),
    ],
)
def test_a_mistyped_command_gets_the_closest_one(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as ended:
        cli.main(argv)
    assert ended.value.code == 2
    assert capsys.readouterr().err.startswith(said)


def test_a_long_first_index_of_the_current_folder_says_which_and_how_many(
    tmp_path: Path, storage: Path
) -> None:
    """`kb search` with no -w in a folder of many notes (a clone, a home folder): before
    it indexes them for the first time, which folder and how many files; not again once
    indexed, not where -w names the folder, not for a folder of a few notes."""
    from kb_lsp.cli.common import FIRST_INDEX_FILES

    many = tmp_path / "clone"
    many.mkdir()
    for n in range(FIRST_INDEX_FILES):
        (many / f"note-{n}.md").write_text(f"# Note {n}\n\nabout payments {n}\n")
    (many / "readme.txt").write_text("not Markdown: not counted")
    first = run("search", "payments", storage=storage, cwd=many, **HASHED)
    assert first.returncode == 0, first.stderr
    said = [line for line in first.stderr.splitlines() if line.startswith("kb: ")]
    assert said == [
        f"kb: indexing {many.resolve()} for the first time: {FIRST_INDEX_FILES} Markdown "
        "files, which takes a while (-w FOLDER names another folder)"
    ]
    again = run("search", "payments", storage=storage, cwd=many, **HASHED)
    assert again.returncode == 0 and "first time" not in again.stderr, again.stderr

    named = tmp_path / "named"
    shutil.copytree(many, named)
    given = run("search", "payments", "-w", str(named), storage=storage, **HASHED)
    assert given.returncode == 0 and "first time" not in given.stderr, given.stderr

    few = tmp_path / "few"
    few.mkdir()
    for n in range(3):
        (few / f"note-{n}.md").write_text(f"# Note {n}\n\npayments\n")
    small = run("search", "payments", storage=storage, cwd=few, **HASHED)
    assert small.returncode == 0 and "first time" not in small.stderr, small.stderr
