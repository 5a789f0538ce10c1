"""The `kb` console script, run as a user runs it, on a temp copy of examples/workspace."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.fakes.embedder import HashingEmbedder
from tests.fakes.ollama_server import ScriptedOllama, answer

from kb_lsp.config import load_settings
from kb_lsp.knowledge import KnowledgeBase

KB = Path(sys.executable).with_name("kb")
REPO = Path(__file__).resolve().parents[2]


def run(
    *args: str, storage: Path, cwd: Path | None = None, **extra_env: str
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KB_STORAGE": str(storage), **extra_env}
    return subprocess.run(
        [str(KB), *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300
    )


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
    assert set(payload) == {"query", "results", "index"}
    assert payload["query"] == "Deutsche Bank Thursday supplier payments"
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
        assert locked.returncode != 0
        assert "locked by another kb-lsp process" in locked.stderr
        assert "Traceback" not in locked.stderr
        search = run("search", "SPEI", "-w", str(workspace), storage=storage)
        assert search.returncode == 0
        assert "read-only" in search.stderr
        assert search.stdout.startswith("1, ")
    finally:
        holder.close()


def test_search_while_another_process_builds_the_index_says_so(
    workspace: Path, storage: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.unit.test_runtime import HASHING, _HeldSync

    from kb_lsp.runtime import Hooks, Runtime

    monkeypatch.setenv("KB_EMBEDDER_FACTORY", HASHING)
    held = _HeldSync()
    # Another process (an editor window) on its cold index, held at its first file.
    builder = Runtime(Hooks(start_progress=held.start), watch=False, probe_llm=False)
    try:
        builder.open([workspace], load_settings({"storage": str(storage)}).settings)
        assert held.holding.wait(60)
        fake = {"KB_EMBEDDER_FACTORY": HASHING, "PYTHONPATH": str(REPO)}
        search = run("search", "SPEI", "-w", str(workspace), storage=storage, **fake)
        assert search.returncode == 3, search.stderr
        assert "being built by another process (0 files so far)" in search.stderr
        assert search.stdout.strip() == "No matching files."
        status = run("status", "-w", str(workspace), "--json", storage=storage, **fake)
        assert status.returncode == 0, status.stderr
        payload = json.loads(status.stdout)
        assert (payload["state"], payload["readOnly"], payload["files"]) == ("indexing", True, 0)
        assert payload["message"] == "being built by another process (0 files so far)"
    finally:
        held.go.set()
        builder.close()


# --- metadata: --filter, kb schema, problems in kb status ------------------------------------

HASHED = {"KB_EMBEDDER_FACTORY": "tests.fakes.embedder:HashingEmbedder", "PYTHONPATH": str(REPO)}


def _tag(workspace: Path, rel: str, front: str) -> None:
    """`front` in place of the file's own front matter (if it has one)."""
    path = workspace / rel
    body = path.read_text(encoding="utf-8")
    if body.startswith("---\n"):
        body = body[body.index("\n---\n", 4) + len("\n---\n") :]
    path.write_text(f"---\n{front}\n---\n{body}", encoding="utf-8")


@pytest.fixture
def tagged(workspace: Path) -> Path:
    _tag(workspace, "payments/mexico-payments.md", "tags: [payments, treasury]\nstatus: draft")
    _tag(workspace, "payments/germany-payments.md", "tags: [payments]\nstatus: published")
    _tag(workspace, "runbooks/treasury-close.md", "tags: [treasury, runbook]")
    return workspace


def _paths(stdout: str) -> set[str]:
    return {line.split(", ", 1)[1].rsplit(" (", 1)[0] for line in stdout.splitlines()[::2]}


def test_search_filter_keeps_exactly_the_matching_files(tagged: Path, storage: Path) -> None:
    ws = ("-w", str(tagged))
    words = run("search", "payments", "--filter", "tag:treasury", *ws, storage=storage, **HASHED)
    assert words.returncode == 0, words.stderr
    assert _paths(words.stdout) == {"payments/mexico-payments.md", "runbooks/treasury-close.md"}
    # A filter alone lists the files it keeps; negation and OR; typed inline in the query.
    alone = run("search", "-f", "tag:payments -status:draft", *ws, storage=storage, **HASHED)
    assert _paths(alone.stdout) == {"payments/germany-payments.md"}, alone.stderr
    either = run(
        "search", "--filter", "status:draft OR tag:runbook", *ws, storage=storage, **HASHED
    )
    assert _paths(either.stdout) == {"payments/mexico-payments.md", "runbooks/treasury-close.md"}
    inline = run("search", "cut-off", "tag:payments", "--json", *ws, storage=storage, **HASHED)
    payload = json.loads(inline.stdout)
    assert {hit["path"] for hit in payload["results"]} <= {
        "payments/mexico-payments.md",
        "payments/germany-payments.md",
    }
    assert payload["results"], inline.stderr
    assert all("payments" in hit["meta"]["tags"] for hit in payload["results"])


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


def test_schema_lists_fields_counts_and_values(tagged: Path, storage: Path) -> None:
    as_json = run("schema", "-w", str(tagged), "--json", storage=storage, **HASHED)
    assert as_json.returncode == 0, as_json.stderr
    schema = json.loads(as_json.stdout)
    assert schema["files"] == len(list(tagged.rglob("*.md")))
    fields = {field["name"]: field for field in schema["fields"]}
    assert fields["tag"]["files"] == 3
    assert {v["value"]: v["count"] for v in fields["tag"]["top"]} == {
        "payments": 2,
        "treasury": 2,
        "runbook": 1,
    }
    assert fields["folder"]["files"] == schema["files"]
    text = run("schema", "-w", str(tagged), storage=storage, **HASHED)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0].startswith(f"{schema['files']} files; metadata fields")
    tag_line = next(line for line in lines if line.split()[0] == "tag")
    assert tag_line.split(None, 1)[1] == (
        "list, 3 files: payments (2), treasury (2), runbook (1)"
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
    assert result.stdout.startswith("The cut-off is at noon.")
    footer = result.stdout.rstrip().splitlines()[-1]
    assert footer.startswith("[grounded mode (the model cannot call tools"), footer
    assert "; NOT GROUNDED (the answer cites none of its sources: check them);" in footer
    # The answer names the passages it was given once (not again as a list).
    assert "- payments/mexico-payments.md L" not in result.stdout
    assert footer.endswith("; stop: answer]"), footer


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
            **HASHED,
        )
        text = run(
            "ask",
            "When is the Mexico cut-off?",
            "-w",
            str(workspace),
            storage=storage,
            KB_OLLAMA_HOST=server.url,
            **HASHED,
        )
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert (payload["stop"], payload["mode"]) == ("length", "agent")
    footer = text.stdout.rstrip().splitlines()[-1]
    assert footer.startswith("[agent mode (the model called tools)"), footer
    assert "stop: length — cut off: the model hit its token limit (kb.llm.maxTokens)]" in footer


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
