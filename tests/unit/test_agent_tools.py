"""The agent's tools, references and summaries on the real KnowledgeBase."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.embedder import HashingEmbedder
from tests.fakes.ollama_server import ScriptedOllama, Turn, answer

from kb_lsp.config import OllamaSettings, Settings
from kb_lsp.engine.agent import references
from kb_lsp.engine.agent.summarize import Summarizer, extractive_summary
from kb_lsp.engine.agent.tools import ALL_TOOLS, READ_PAGE_LINES, Toolbox, defuse
from kb_lsp.engine.knowledge import FileInfo, KnowledgeBase, StoredChunk
from kb_lsp.engine.llm import ChatModel, ollama_chat
from kb_lsp.engine.markdown.document import parse_markdown

MEXICO = "payments/mexico-payments.md"
BIG = "engineering/big-log.md"


@pytest.fixture
def kb(workspace: Path, storage: Path) -> Iterator[KnowledgeBase]:
    (workspace / BIG).write_text(
        "# Big log\n\n"
        + "".join(f"Entry {i}: payment batch {i} settled.\n" for i in range(1, 1201)),
        encoding="utf-8",
    )
    (workspace / "secrets.env").write_text("API_KEY=do-not-show\n", encoding="utf-8")
    base = KnowledgeBase([workspace], Settings(), embedder=HashingEmbedder(), storage=storage)
    base.sync()
    yield base
    base.close()


def toolbox(kb: KnowledgeBase, llm: ChatModel | None = None) -> Toolbox:
    return Toolbox(kb, Summarizer(kb, llm))


def run(box: Toolbox, name: str, **args: Any) -> Any:
    return box.run(name, args, allowed=ALL_TOOLS, cancel=threading.Event())


# --- read_file ------------------------------------------------------------------------------------


def test_read_file_pages_a_large_file(kb: KnowledgeBase) -> None:
    box = toolbox(kb)
    first = run(box, "read_file", path=BIG)
    assert not first.error
    assert f'lines="1-{READ_PAGE_LINES}" of="1202"' in first.text
    assert f"start_line {READ_PAGE_LINES + 1}" in first.text  # how to read on
    assert "Entry 198:" in first.text and "Entry 199:" not in first.text
    assert first.sources[0].range.start.line == 0
    assert first.sources[0].range.end.line == READ_PAGE_LINES

    last = run(box, "read_file", path=BIG, start_line=1190)
    assert 'lines="1190-1202"' in last.text and "read on" not in last.text

    middle = run(box, "read_file", path=BIG, start_line=10, end_line=12)
    assert [line.split("|")[0].strip() for line in middle.text.splitlines()[1:4]] == [
        "10",
        "11",
        "12",
    ]
    assert middle.summary == f"Read {BIG} lines 10–12 of 1202"


def test_read_file_caps_characters_per_call(kb: KnowledgeBase) -> None:
    box = toolbox(kb)
    box.result_chars = 2000
    page = run(box, "read_file", path=BIG)
    assert len(page.text) < 2600
    assert "To read on, call read_file" in page.text


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("../../etc/passwd", "Refused"),
        ("/etc/passwd", "Refused"),
        ("secrets.env", "is not a file of the knowledge base"),  # in the workspace, not indexed
        ("payments/mexico.md", "Did you mean: payments/mexico-payments.md?"),
        ("", "A path is required"),
    ],
)
def test_read_file_refuses_what_is_not_an_indexed_file(
    kb: KnowledgeBase, path: str, expected: str
) -> None:
    result = run(toolbox(kb), "read_file", path=path)
    assert result.error
    assert expected in result.text
    assert "do-not-show" not in result.text and "root:" not in result.text


def test_read_file_bad_arguments(kb: KnowledgeBase) -> None:
    box = toolbox(kb)
    assert "whole number" in run(box, "read_file", path=MEXICO, start_line="ten").text
    assert "past the end" in run(box, "read_file", path=MEXICO, start_line=5000).text
    assert "There is no tool 'write_file'" in run(box, "write_file", path=MEXICO).text


# --- search tools -----------------------------------------------------------------------------


def test_search_knowledge_base_gives_numbered_hits_with_passages(kb: KnowledgeBase) -> None:
    result = run(toolbox(kb), "search_knowledge_base", query="mexico payment cut-off")
    assert not result.error
    assert result.hits and result.hits[0].path == MEXICO and result.hits[0].n == 1
    assert f"[1] {MEXICO}" in result.text
    assert '<passage path="payments/mexico-payments.md"' in result.text
    assert "14:30" in result.text  # the passage text, not only a snippet
    assert result.sources[0].n == 1 and result.sources[0].path == MEXICO


def test_search_without_relevant_results_says_so(kb: KnowledgeBase) -> None:
    result = run(toolbox(kb), "search_knowledge_base", query="zebra xylophone quantum")
    assert result.hits == []
    assert "No file matches" in result.text


def test_search_in_document_drops_passages_below_the_threshold(kb: KnowledgeBase) -> None:
    box = toolbox(kb)
    result = run(box, "search_in_document", path=MEXICO, query="cut-off time")
    assert not result.error and result.sources
    shown = kb.search_in_file(MEXICO, "cut-off time", limit=5)
    kept = [h for h in shown if h.score >= box.threshold]
    assert 0 < len(result.sources) == len(kept) < len(shown)  # the junk was dropped
    box.threshold = 0.99
    nothing = run(box, "search_in_document", path=MEXICO, query="cut-off time")
    assert not nothing.sources and not nothing.error
    assert "matches 'cut-off time' well enough" in nothing.text


def test_list_files(kb: KnowledgeBase) -> None:
    box = toolbox(kb)
    everything = run(box, "list_files")
    assert f"- {MEXICO} — Mexico payments" in everything.text
    assert "secrets.env" not in everything.text
    payments = run(box, "list_files", pattern="payments/*")
    assert payments.summary == "4 files"
    brief = run(box, "list_files", pattern="brief")  # a word filters by substring
    assert brief.summary == "2 files"
    assert run(box, "list_files", pattern="nothing-like-this").text == (
        "No files matching '*nothing-like-this*'."
    )


def test_defuse_keeps_document_text_inside_its_quotation() -> None:
    text = defuse("a </passage> b <document path='x'> c </document>")
    assert "</passage>" not in text and "<document" not in text and "</document>" not in text


# --- summaries --------------------------------------------------------------------------------


FINAL = "FINAL: 1200 payment batches settled across the quarter, all before cut-off."


def test_map_reduce_summary_of_a_long_file_is_cached(kb: KnowledgeBase) -> None:
    def model(request: dict[str, Any]) -> Turn:
        prompt = request["messages"][-1]["content"]
        if "Combine them" in prompt:
            return answer(FINAL)
        assert "Summarize this part" in prompt
        return answer("- some batches settled")

    with ScriptedOllama(default=model) as server:
        llm = ollama_chat(OllamaSettings(host=server.url, num_ctx=2048, timeout=10))
        summarizer = Summarizer(kb, llm)
        info = kb.file_info(BIG)
        assert info is not None
        summary = summarizer.summarize(info, cancel=threading.Event())
        calls = len(server.chat_requests)
        assert summary.text == FINAL
        assert not summary.cached and not summary.extractive
        maps = [r for r in server.chat_requests if "Summarize this part" in str(r["messages"])]
        assert len(maps) > 3  # it was cut into parts that fit num_ctx
        for request in server.chat_requests:
            assert len(request["messages"][-1]["content"]) < 2048 * 3

        again = summarizer.summarize(info, cancel=threading.Event())
        assert again.cached and again.text == summary.text
        assert len(server.chat_requests) == calls
        assert server.errors == []


def test_extractive_summary() -> None:
    lines = [
        "---",
        "title: Mexico payments",
        "owner: Priya",
        "---",
        "# Mexico payments",
        "",
        "Payments are sent by SPEI. More text here.",
        "",
        "```",
        "# not a heading",
        "```",
        "## Limits",
        "",
        "- Single approver up to **MXN 2,000,000**. Two above.",
    ]
    doc = parse_markdown("\n".join(lines), file_name="mexico.md")
    chunks = [
        StoredChunk(
            "mexico.md",
            "/ws",
            c.index,
            c.text,
            " > ".join(c.heading_path),
            c.start_line,
            c.end_line,
        )
        for c in doc.chunks
    ]
    text = extractive_summary("Mexico payments", chunks)
    assert text.splitlines() == [
        "**Mexico payments** (extractive summary: the first sentence of each section)",
        "- Mexico payments: Payments are sent by SPEI.",
        "- Limits: Single approver up to MXN 2,000,000.",
    ]


# --- references -------------------------------------------------------------------------------


def _info(path: str, title: str) -> FileInfo:
    return FileInfo(path, "/ws", f"file:///ws/{path}", title, 1, 10, "0")


FILES = [
    _info("projects/policy_brief.md", "Brief: payment approval policy"),
    _info("projects/budget_brief.md", "Brief: 2027 treasury budget"),
    _info("notes/problem-statement.md", "Problem statement"),
    _info("payments/mexico-payments.md", "Mexico payments"),
    _info("runbooks/treasury-close.md", "Treasury close"),
    _info("runbooks/incident-response.md", "Incident response"),
]


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("summarize file 1", [1]),
        ("what is the cut-off time in file 2?", [2]),
        ("compare result 1 with result #3", [1, 3]),
        ("open #2", [2]),
        ("what does the second one say", [2]),
        ("the 3rd result please", [3]),
        ("summarize the last one", [None]),
        ("what is the payment cut-off?", []),
        ("find three related runbooks", []),
    ],
)
def test_numbered_references(question: str, expected: list[int | None]) -> None:
    assert [r.n for r in references.find_numbered(question)] == expected


def test_bare_number_counts_only_after_a_clarification() -> None:
    assert references.find_numbered("2") == []
    assert [r.n for r in references.find_numbered("2", after_clarify=True)] == [2]
    assert [r.n for r in references.find_numbered("the first", after_clarify=True)] == [1]


@pytest.mark.parametrize(
    ("question", "expected", "explicit"),
    [
        ("what is in policy_brief.md?", ["projects/policy_brief.md"], True),
        ("what does “Mexico payments” say about approvals?", [MEXICO], True),
        ('what does "problem statement" list?', ["notes/problem-statement.md"], True),
        ("what does the mexico payments file say?", [MEXICO], False),
        (
            "what does the brief document say?",
            ["projects/policy_brief.md", "projects/budget_brief.md"],
            False,
        ),
    ],
)
def test_references_by_name(question: str, expected: list[str], explicit: bool) -> None:
    refs = references.find_by_name(question, FILES)
    assert len(refs) == 1
    assert [f.path for f in refs[0].candidates] == expected
    assert refs[0].explicit is explicit


@pytest.mark.parametrize(
    "question",
    [
        "what is the payment cut-off for Mexico?",
        "find the Mexico payment files",
        "summarize my runbooks",
        "what are my notes about?",
        # Issue 35: "my X" / "our X" is a question about X, never a file reference.
        "How do I build my program for release?",
        "What happens to my payment if it is released after the cut-off?",
        "using my problem statement, find three related runbooks",
        "summarize my brief",
        "what does our treasury close need?",
        "How do I move a value out of my struct?",
        'what does "idempotency key" mean?',  # a quoted phrase that is no title
    ],
)
def test_general_questions_are_not_file_references(question: str) -> None:
    assert references.find_by_name(question, FILES) == []


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("summarize my budget brief", "projects/budget_brief.md"),
        ("tl;dr of the problem statement", "notes/problem-statement.md"),
        ("Summarize our incident response", "runbooks/incident-response.md"),
    ],
)
def test_a_summary_request_names_a_file_by_its_whole_name(question: str, expected: str) -> None:
    target = references.summary_target(question, FILES)
    assert target is not None
    assert [f.path for f in target.candidates] == [expected]


@pytest.mark.parametrize(
    "question",
    ["summarize my brief", "summarize the risks of my budget brief", "what is my budget brief"],
)
def test_no_summary_target_without_a_whole_name(question: str) -> None:
    assert references.summary_target(question, FILES) is None


def test_summarize_only() -> None:
    refs = references.find_numbered("summarize file 1")
    assert references.is_summarize_only("summarize file 1", [(refs[0].start, refs[0].end)])
    assert references.is_summarize_only("Summarise this file", [])
    assert not references.is_summarize_only("summarize the risks in file 1", [(22, 28)])
    assert not references.is_summarize_only("what is in file 1", [(11, 17)])


# --- the context budget ---------------------------------------------------------------------


def test_fit_elides_old_tool_results_first_and_keeps_the_question() -> None:
    from kb_lsp.engine.agent.budget import fit, messages_tokens

    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "rules"},
        {"role": "user", "content": "earlier question"},
        {"role": "assistant", "content": "earlier answer"},
        {"role": "user", "content": "the question"},
        {"role": "tool", "tool_name": "read_file", "content": "old page " * 2000},
        {"role": "tool", "tool_name": "read_file", "content": "new page " * 320},
    ]
    fitted = fit(messages, 2000)
    assert messages_tokens(fitted) <= 2000
    assert fitted[0]["content"] == "rules"
    assert fitted[4]["content"].startswith("[elided to fit the model's context")
    assert fitted[-1]["content"] == messages[-1]["content"]  # the newest result is kept
    assert "the question" in [m["content"] for m in fitted]
    assert messages[4]["content"].startswith("old page")  # the input is not changed

    tight = fit(messages, 1000)
    assert messages_tokens(tight) <= 1000
    contents = [m["content"] for m in tight]
    assert "earlier question" not in contents  # then old turns go
    assert contents[:2] == ["rules", "the question"]
    assert tight[-1]["content"].startswith("new page")  # cut, not dropped


def test_search_knowledge_base_takes_a_metadata_filter(kb: KnowledgeBase) -> None:
    result = run(toolbox(kb), "search_knowledge_base", query="payments", filter="folder:runbooks")
    assert not result.error
    assert result.hits and all(h.path.startswith("runbooks/") for h in result.hits)
    bad = run(toolbox(kb), "search_knowledge_base", query="payments", filter="tag:a )")
    assert bad.error and "character 7" in bad.text


def test_the_system_prompt_lists_the_metadata_fields(kb: KnowledgeBase) -> None:
    from datetime import date

    from kb_lsp.engine.agent.prompts import metadata_hint

    hint = metadata_hint(kb.schema(), date(2026, 11, 20))
    assert "Today is 2026-11-20" in hint
    assert "- folder (string, " in hint and "payments (" in hint
    assert "filter" in hint
