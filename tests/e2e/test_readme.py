"""Every `kb` command the README and the user docs (`docs/*.md` but design.md) show, run as
written against the bundled example wiki (`examples/workspace`), with the outputs they
print compared to the real ones: the quick start's list, the `kb schema` line, the
messages for a bad filter and an unknown field, and every example of the filter table
(docs/metadata.md) keeping files. An example that stops working on the wiki (or output
the pages no longer match) fails here."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.conftest import EXAMPLE_WORKSPACE, copy_example_workspace

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")
# What a user reads after the README: the topic pages (design.md is for developers).
USER_DOCS = "\n".join(
    path.read_text(encoding="utf-8")
    for path in sorted((REPO / "docs").glob("*.md"))
    if path.name != "design.md"
)
METADATA = (REPO / "docs" / "metadata.md").read_text(encoding="utf-8")
KB = Path(sys.executable).with_name("kb")
# The model server the README's `kb ask` would reach is not there: the no-model path.
NO_MODEL = {"KB_OLLAMA_HOST": "http://127.0.0.1:9"}

pytestmark = pytest.mark.skipif(
    not EXAMPLE_WORKSPACE.is_dir(), reason="examples/workspace is not in this checkout"
)


@pytest.fixture(scope="module")
def wiki(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A copy of the wiki as a fresh clone has it (every file modified now, so `today`
    and `-7d` hold), and a store for it."""
    root = tmp_path_factory.mktemp("readme")
    workspace = copy_example_workspace(root / "workspace")
    now = time.time()
    for path in workspace.rglob("*"):
        os.utime(path, (now, now))
    storage = root / "storage"
    storage.mkdir()
    return workspace, storage


def kb(args: list[str], storage: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(KB), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "KB_STORAGE": str(storage), **NO_MODEL, **env},
        timeout=600,
    )


def code_spans(text: str) -> list[str]:
    """The inline code of a Markdown text (fenced blocks left out), joined across lines."""
    prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return [" ".join(span.split()) for span in re.findall(r"`([^`]+)`", prose)]


def test_the_quick_start_prints_what_the_readme_shows(wiki: tuple[Path, Path]) -> None:
    workspace, storage = wiki
    block = re.search(r"```sh\n(python3 -m venv [^\n]*)\n```", README)
    assert block is not None, "the quick start's command"
    command = shlex.split(block.group(1).split("&&")[-1])
    assert command[0].endswith("kb") and "examples/workspace" in command
    args = [str(workspace) if a == "examples/workspace" else a for a in command[1:]]
    shown = re.search(r"prints a numbered list[^`]*```\n(.*?)```", README, re.S)
    assert shown is not None, "the quick start's output"
    expected = shown.group(1).splitlines()

    done = kb(args, storage)  # the first command: it indexes (real embedder)
    assert done.returncode == 0, done.stderr
    head, _, took = expected[0].rpartition(" (")
    assert re.fullmatch(r"\d+\.\ds\)", took), expected[0]  # the time it took, measured
    summary = re.escape(head) + r" \((\d+\.\ds|\d+ ms)\)"  # ms below a second
    assert any(re.fullmatch(summary, line) for line in done.stderr.splitlines()), done.stderr
    got = done.stdout.splitlines()
    for number, line in enumerate(expected[1:]):
        if line.strip() == "…":
            continue
        assert got[number] == line, f"line {number + 1} of the quick start's output"


def readme_commands() -> list[str]:
    """The `kb search|schema|status|index|ask …` commands of the README and the docs as
    written there, but for the synopsis's placeholders (QUERY, PATH) and elisions (…)."""
    found: list[str] = []
    for span in code_spans(README) + code_spans(USER_DOCS):
        if not re.match(r"kb (search|schema|status|index|ask)\b", span):
            continue
        if re.search(r"\b[A-Z]{2,}\b|…|\||\[", span) or span in ("kb search", "kb ask"):
            continue
        if span.split()[-1] in ("--filter", "-f"):  # the option named, not used
            continue
        if span not in found:
            found.append(span)
    return found


def test_the_readme_names_the_commands_it_should() -> None:
    commands = readme_commands()
    for expected in (
        "kb search payments tag:runbook",
        'kb search -f "tag:payments -status:draft"',
        'kb ask "summarize file 1"',
        "kb schema",
        "kb status",
        "kb status --probe",
        "kb index --full",
    ):
        assert expected in commands, (expected, commands)


def test_every_readme_command_works_on_the_example_wiki(wiki: tuple[Path, Path]) -> None:
    workspace, storage = wiki
    # `kb ask "summarize file 1"` means result 1 of the last search: there is one.
    assert kb(["search", "payments", "-w", str(workspace)], storage).returncode == 0
    for command in readme_commands():
        args = shlex.split(command)[1:]
        done = kb([*args, "-w", str(workspace)], storage)
        assert done.returncode == 0, (command, done.stderr)
        assert done.stdout.strip(), command
        assert "Traceback" not in done.stderr, command
        if args[0] == "search":
            assert done.stdout.strip() != "No matching files.", command
            assert done.stdout.startswith("1, "), (command, done.stdout)


def test_the_outputs_the_readme_quotes_are_the_real_ones(wiki: tuple[Path, Path]) -> None:
    workspace, storage = wiki
    ws = ["-w", str(workspace)]
    spans = code_spans(README) + code_spans(USER_DOCS)
    # `kb schema`'s line for tags.
    tag_line = next(span for span in spans if re.match(r"tag +list, ", span))
    schema = kb(["schema", *ws], storage)
    assert schema.returncode == 0, schema.stderr
    lines = [line.strip() for line in schema.stdout.splitlines()]
    assert " ".join(tag_line.split()) in [" ".join(line.split()) for line in lines], lines
    # A bad filter: one line naming the character, exit 2.
    bad = next(span for span in spans if span.startswith("kb: filter, character 14:"))
    typed = re.search(r"\(in '(.*)'\)$", bad)
    assert typed is not None
    done = kb(["search", "payments", "-f", typed.group(1), *ws], storage)
    assert (done.returncode, done.stderr.splitlines()) == (2, [bad])
    # A field no file has, keeping nothing: the line that says so.
    unknown = next(span for span in spans if span.startswith("kb: no indexed file has the field"))
    field = re.search(r"field '(\w+)'", unknown)
    assert field is not None
    done = kb(["search", "payments", "-f", f"{field.group(1)}:x", *ws], storage)
    assert done.returncode == 0
    assert unknown in done.stderr.splitlines(), done.stderr


def filter_examples() -> list[str]:
    """The first column of docs/metadata.md's filter table: every example filter."""
    table = METADATA[METADATA.index("| filter | keeps files that… |") :]
    table = table[: table.index("\n\n")]
    examples: list[str] = []
    for row in table.splitlines()[2:]:
        first = row.split(" | ")[0]
        examples += re.findall(r"`([^`]+)`", first)
    return examples


def test_every_filter_of_the_readme_keeps_files_of_the_example_wiki(
    wiki: tuple[Path, Path],
) -> None:
    workspace, storage = wiki
    examples = filter_examples()
    assert len(examples) >= 20 and 'owner:"Ana López"' in examples
    kept: dict[str, int] = {}
    for example in examples:
        done = kb(["search", "-f", example, "-n", "50", "-w", str(workspace)], storage)
        assert done.returncode == 0, (example, done.stderr)
        kept[example] = len(re.findall(r"^\d+, ", done.stdout, re.M))
    assert all(kept.values()), {example: n for example, n in kept.items() if not n}
