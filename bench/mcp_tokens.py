"""Token economy of `kb mcp` on the FastAPI docs: what an agent reads through the MCP
tools, against reading the files that answer the question.

    python -m bench mcp [--store DIR]

The real `kb mcp` (stdio, real MiniLM embedder, no model: summaries are extractive) on a
copy of fastapi-docs, driven by the official MCP client (`mcp.ClientSession`). For each
of the quality set's 54 developer questions (`bench/queries/fastapi.json`), an agent:

* calls `search(question)` (10 results, the default; and 5 in a second call), then
* one of `open_result(1)` (the lines of the top result's best passage) or
  `summarize_file(n=1)` (the top file's summary).

Counted: the tokens of the text the tools return (what the model reads; the same data
also comes as `structuredContent`, counted separately for clients that pass it on),
against the tokens of the answer file (the query set's first file for the question) and
of all its answer files. Recall at that budget: whether an answer file's passage is in
what the agent received (an answer file among the listed results, each listed with its
best passage), and whether the file it then opened or summarized is an answer file.

Tokens are counted with the MiniLM WordPiece tokenizer shipped with kb-lsp (no LLM
tokenizer can be fetched here); ratios are what matter, and they hardly depend on the
tokenizer. Characters are reported too.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult
from tokenizers import Tokenizer

from bench import corpora, stamp
from bench.report import table, write_json
from kb_lsp.engine.embed.model_source import TOKENIZER_FILE, TOKENIZER_PACKAGE

QUERIES = Path(__file__).parent / "queries" / "fastapi.json"
REPO = Path(__file__).resolve().parent.parent
READY_DEADLINE = 3600.0  # a cold index of the corpus on a busy 2-core machine


def _tokenizer() -> Tokenizer:
    spec = importlib.util.find_spec(TOKENIZER_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"the tokenizer package {TOKENIZER_PACKAGE} is not installed")
    tokenizer = Tokenizer.from_file(
        str(Path(next(iter(spec.submodule_search_locations))) / TOKENIZER_FILE)
    )
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


TOKENIZER = _tokenizer()


def tokens(text: str) -> int:
    return len(TOKENIZER.encode(text, add_special_tokens=False).ids)


def text_of(result: CallToolResult) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


@dataclass
class Received:
    """What one tool call handed the agent."""

    text: str
    structured: str

    @classmethod
    def of(cls, result: CallToolResult) -> Received:
        if result.is_error:
            raise RuntimeError(f"tool error: {text_of(result)}")
        return cls(text_of(result), json.dumps(result.structured_content, ensure_ascii=False))


@dataclass
class Question:
    query: str
    files: list[str]
    search10: Received | None = None
    search5: Received | None = None
    opened: Received | None = None
    summary: Received | None = None
    listed10: list[str] = field(default_factory=list)
    listed5: list[str] = field(default_factory=list)


async def _wait_ready(session: ClientSession, files: int) -> float:
    started = time.perf_counter()
    while True:
        status = (await session.call_tool("status", {})).structured_content or {}
        ready = status.get("state") == "ready" and not status.get("pending")
        if ready and status.get("files") == files:
            return time.perf_counter() - started
        if time.perf_counter() - started > READY_DEADLINE:
            raise SystemExit(f"the index was not ready after {READY_DEADLINE:.0f}s: {status}")
        await asyncio.sleep(1.0)


async def _drive(workspace: Path, store: Path, questions: list[Question]) -> float:
    env = dict(os.environ)
    for name in ("KB_TEST_EMBEDDER", "KB_EMBEDDER_FACTORY", "KB_STORAGE", "OLLAMA_HOST"):
        env.pop(name, None)
    env["KB_OLLAMA_HOST"] = "http://127.0.0.1:9"  # no model: extractive summaries
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "server"), env.get("PYTHONPATH", "")])
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "kb_lsp.cli", "mcp", "--workspace", str(workspace), "--storage", str(store)],
        env=env,
    )
    count = sum(1 for _ in workspace.rglob("*.md"))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        waited = await _wait_ready(session, count)
        for q in questions:
            five = await session.call_tool("search", {"query": q.query, "limit": 5})
            ten = await session.call_tool("search", {"query": q.query})
            q.search5, q.search10 = Received.of(five), Received.of(ten)
            q.listed5 = [hit["path"] for hit in (five.structured_content or {})["results"]]
            q.listed10 = [hit["path"] for hit in (ten.structured_content or {})["results"]]
            if q.listed10:  # both refer to result 1 of the last list (the 10-result one)
                q.opened = Received.of(await session.call_tool("open_result", {"n": 1}))
                q.summary = Received.of(await session.call_tool("summarize_file", {"n": 1}))
    return waited


def _cost(parts: Sequence[Received | None], *, structured: bool = False) -> tuple[int, int]:
    text = "\n".join(
        (p.text + ("\n" + p.structured if structured else "")) for p in parts if p is not None
    )
    return tokens(text), len(text)


def measure(workspace: Path, questions: list[Question]) -> dict[str, Any]:
    def file_tokens(paths: Sequence[str]) -> tuple[int, int]:
        text = "\n".join((workspace / p).read_text(encoding="utf-8") for p in paths)
        return tokens(text), len(text)

    strategies: dict[str, list[tuple[int, int]]] = {
        "search (10 results)": [],
        "search (10) + open_result(1)": [],
        "search (10) + summarize_file(1)": [],
        "search (5) + open_result(1)": [],
        "search (10) + open_result(1), text + structuredContent": [],
        "read the answer file": [],
        "read every answer file": [],
    }
    for q in questions:
        strategies["search (10 results)"].append(_cost([q.search10]))
        strategies["search (10) + open_result(1)"].append(_cost([q.search10, q.opened]))
        strategies["search (10) + summarize_file(1)"].append(_cost([q.search10, q.summary]))
        strategies["search (5) + open_result(1)"].append(_cost([q.search5, q.opened]))
        strategies["search (10) + open_result(1), text + structuredContent"].append(
            _cost([q.search10, q.opened], structured=True)
        )
        strategies["read the answer file"].append(file_tokens(q.files[:1]))
        strategies["read every answer file"].append(file_tokens(q.files))

    baseline = [t for t, _ in strategies["read the answer file"]]
    rows = []
    for name, costs in strategies.items():
        toks = [t for t, _ in costs]
        ratios = [t / b for t, b in zip(toks, baseline, strict=True) if b]
        rows.append(
            {
                "strategy": name,
                "tokens_median": statistics.median(toks),
                "tokens_mean": statistics.fmean(toks),
                "tokens_total": sum(toks),
                "chars_median": statistics.median(c for _, c in costs),
                "vs_answer_file_median_ratio": statistics.median(ratios),
                "vs_answer_file_total_ratio": sum(toks) / sum(baseline),
            }
        )

    def share(flags: Sequence[bool]) -> float:
        return sum(flags) / len(flags)

    recall = {
        "answer file listed (passage received), 10 results": share(
            [any(f in q.listed10 for f in q.files) for q in questions]
        ),
        "answer file listed (passage received), 5 results": share(
            [any(f in q.listed5 for f in q.files) for q in questions]
        ),
        "opened / summarized file (result 1) answers": share(
            [bool(q.listed10) and q.listed10[0] in q.files for q in questions]
        ),
    }
    return {"strategies": rows, "recall": recall}


def run(store: Path | None) -> dict[str, Any]:
    data = json.loads(QUERIES.read_text(encoding="utf-8"))
    questions = [Question(item["query"], list(item["files"])) for item in data["questions"]]
    with tempfile.TemporaryDirectory(prefix="kb-bench-mcp-") as tmp:
        base = store or Path(tmp)
        stamp.ensure(base)
        workspace = base / "fastapi"
        if not workspace.is_dir():
            corpora.copy_fastapi(workspace)
        index = base / "index"
        index.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        waited = asyncio.run(_drive(workspace, index, questions))
        seconds = time.perf_counter() - started
        out = measure(workspace, questions)
    return {
        "corpus": "fastapi-docs",
        "questions": len(questions),
        "tokenizer": "all-MiniLM-L6-v2 WordPiece (shipped with kb-lsp)",
        "index_wait_seconds": waited,
        "run_seconds": seconds,
        "load_average": os.getloadavg(),
        **out,
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench mcp", description=__doc__)
    parser.add_argument(
        "--store", type=Path, help="keep the corpus copy and its index here (reused next time)"
    )
    args = parser.parse_args(argv)
    out = run(args.store)
    table(
        ["what the agent reads", "tokens p50", "mean", "total", "chars p50", "÷ answer file p50",
         "÷ answer file, totals"],
        [
            [r["strategy"], r["tokens_median"], r["tokens_mean"], r["tokens_total"],
             r["chars_median"], r["vs_answer_file_median_ratio"], r["vs_answer_file_total_ratio"]]
            for r in out["strategies"]
        ],
        title=f"Tokens per question ({out['questions']} FastAPI questions, {out['tokenizer']})",
    )  # fmt: skip
    table(
        ["recall at that budget", "share of questions"],
        [[name, value] for name, value in out["recall"].items()],
        title="Is the answer in what the agent received?",
    )
    load = ", ".join(f"{x:.1f}" for x in out["load_average"])
    print(f"\nindex ready after {out['index_wait_seconds']:.0f}s; load average {load}")
    write_json("mcp", out)
