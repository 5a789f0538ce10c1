"""Quotes that state the answer (issue 35, point 3): the "From your notes:" lead of a
grounded answer, measured on a labelled set of questions and the sentences that answer
them.

    python -m bench quotes [--store DIR] [--context 8192 --context 2048]

(`python -m bench ask` prints the same table.) `bench/queries/answers.json` holds 147
questions over the project's own corpora — 45 over fastapi-docs (25 of
`bench/queries/fastapi.json`), 68 over tldr-pages' `pages/common` (the answer is a
command), 34 over examples/workspace — each with the sentence(s) or command that answer
it. Every third question of the first 67 is held out, and the 20 added later (tldr-25…44)
all are; both splits have been read while tuning. The 30 `fresh` and 30 `fresh2` ones
were written blind to the scorer and each first measured with it frozen (eb1b268,
6a9de18): the unbiased figure. Every split is reported.

Per question, the passages are gathered as grounded mode gathers them for a model with
`--context` tokens (`grounded.fitted`: 2 of 600 characters under 4k, 3 of 1,000 under 8k,
else 5 of 1,500; the shipped search threshold), and the quotes chosen as the answer's lead
chooses them: from the passages of the largest context, whatever the model's
(`grounded.quoted`), by `evidence.select` with the real MiniLM embedder. A quote *holds the answer*
when one of the labelled answers is in it, compared on letters and digits only (Markdown,
punctuation and spacing aside). Reported per context and split: the share of questions
whose first quote holds the answer, whose quotes hold it at all, and whose passages do
(the model's; "quoted from": the passages the quotes are chosen from — the ceilings
retrieval sets), and whose quotable sentences do (`evidence.candidates`: the ceiling of
the choice among them). No model is involved: the quotes come before it is asked.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import time
from pathlib import Path
from typing import Any

from bench import corpora
from bench.quality import build
from bench.report import table, write_json
from kb_lsp.config import load_settings
from kb_lsp.engine.agent import evidence, grounded
from kb_lsp.engine.embed.minilm import MiniLMEmbedder
from kb_lsp.engine.knowledge import KnowledgeBase, model_cache
from kb_lsp.protocol import SearchHit

LABELLED = Path(__file__).resolve().parent / "queries" / "answers.json"
WIKI = corpora.REPO / "examples" / "workspace"
CONTEXTS = (8192, 2048)
SPLITS = ("dev", "held-out", "fresh", "fresh2")


def normalized(text: str) -> str:
    return re.sub(r"[\W_]+", "", text.lower())


def holds(text: str, answers: list[str]) -> bool:
    """Whether `text` holds one of `answers` (letters and digits compared)."""
    said = normalized(text)
    return any(normalized(answer) in said for answer in answers)


def load_labelled() -> list[dict[str, Any]]:
    questions: list[dict[str, Any]] = json.loads(LABELLED.read_text(encoding="utf-8"))["questions"]
    return questions


def _kb(workspace: Path, storage: Path) -> KnowledgeBase:
    settings = load_settings({}).settings  # the shipped threshold, as an ask runs
    kb = KnowledgeBase(
        [workspace], settings, embedder=MiniLMEmbedder(int8_cache=model_cache()), storage=storage
    )
    started = time.perf_counter()
    report = kb.sync()
    print(
        f"{workspace.name}: {report.files_added} files added, {report.chunks_embedded} "
        f"chunks embedded in {time.perf_counter() - started:.1f} s"
    )
    return kb


def open_corpora(parent: Path) -> dict[str, KnowledgeBase]:
    """The three corpora indexed under `parent` (reused from an earlier run): fastapi-docs
    as `bench ask` and `bench quality` index it, tldr-pages' pages/common, the wiki."""
    fastapi, _, _ = build(parent)
    fastapi.settings = load_settings({}).settings
    tldr = parent / "tldr-common"
    if not tldr.exists():
        shutil.copytree(corpora.require(corpora.TLDR_PAGES) / "common", tldr / "pages" / "common")
    wiki = parent / "wiki"
    if not wiki.exists():
        shutil.copytree(WIKI, wiki)
    return {
        "fastapi": fastapi,
        "tldr": _kb(tldr, parent / "store-tldr-common"),
        "wiki": _kb(wiki, parent / "store-wiki"),
    }


Searched = tuple[list[SearchHit], list[SearchHit]]


def _passages(
    kb: KnowledgeBase, query: str, context: int
) -> tuple[list[grounded.Passage], list[grounded.Passage], Searched]:
    """The passages a model with `context` tokens is given, those the quotes are chosen
    from (`grounded.quoted`: the largest context's), and the search they came from."""
    count, each = grounded.fitted(context)
    searched = grounded.search(kb, query, [])
    passages, _ = grounded.gather(
        kb,
        query,
        [],
        budget_chars=count * each,
        max_passages=count,
        passage_chars=each,
        searched=searched,
    )
    pool = grounded.quoted(kb, query, [], searched, (passages, (count, each)))
    return passages, pool, searched


def quote_row(kb: KnowledgeBase, item: dict[str, Any], context: int) -> dict[str, Any]:
    """One question's passages and quotes for a model with `context` tokens."""
    query = item["query"]
    passages, pool, _ = _passages(kb, query, context)
    quotes = evidence.select(pool, query, kb.embedder)
    answers = item["answers"]
    return {
        "id": item["id"],
        "corpus": item["corpus"],
        "split": item["split"],
        "query": query,
        "given": any(holds(p.text, answers) for p in passages),
        "quoted from": any(holds(p.text, answers) for p in pool),
        "candidate": any(holds(c.quote.text, answers) for c in evidence.candidates(pool, query)),
        "first": bool(quotes) and holds(quotes[0].text, answers),
        "any": any(holds(q.text, answers) for q in quotes),
        "quotes": [f"{q.text} {q.citation}" for q in quotes],
        "passages": [f"{p.path}:{p.start + 1}-{p.end + 1}" for p in passages],
    }


def shares(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    return {
        "questions": n,
        "given": sum(r["given"] for r in rows) / n if n else None,
        "quoted from": sum(r["quoted from"] for r in rows) / n if n else None,
        "candidate": sum(r["candidate"] for r in rows) / n if n else None,
        "first": sum(r["first"] for r in rows) / n if n else None,
        "any": sum(r["any"] for r in rows) / n if n else None,
    }


def candidate_rows(kb: KnowledgeBase, item: dict[str, Any]) -> dict[str, Any]:
    """One question's quotable sentences with what `evidence.select` weighs — similarity,
    shared terms, kinds, names, intro, sequel, passage rank, place — and whether each holds
    an answer: the data to try another choice on without the corpora."""
    query = item["query"]
    _, pool, searched = _passages(kb, query, max(CONTEXTS))
    found = evidence.candidates(pool, query)
    similar = evidence.similarities([c.quote.text for c in found], query, kb.embedder)
    files = list(dict.fromkeys(hit.path for hit in searched[1]))
    return {
        "id": item["id"],
        "corpus": item["corpus"],
        "split": item["split"],
        "query": query,
        "files": files,
        "candidates": [
            {
                "text": c.quote.text,
                "path": c.quote.path,
                "similarity": s,
                **{k: v for k, v in vars(c).items() if k not in ("quote", "holds")},
                "kind_fit": c.holds,
                "holds_answer": holds(c.quote.text, item["answers"]),
            }
            for c, s in zip(found, similar, strict=True)
        ],
    }


def measure(
    parent: Path, contexts: tuple[int, ...] = CONTEXTS, candidates: Path | None = None
) -> dict[str, Any]:
    """Every labelled question at every context: rows and shares by split and corpus;
    with `candidates`, each question's quotable sentences written there as JSON."""
    bases = open_corpora(parent)
    labelled = load_labelled()
    out: dict[str, Any] = {"contexts": {}}
    try:
        if candidates is not None:
            dump = [candidate_rows(bases[item["corpus"]], item) for item in labelled]
            candidates.write_text(json.dumps(dump, indent=1), encoding="utf-8")
        for context in contexts:
            rows = [quote_row(bases[item["corpus"]], item, context) for item in labelled]
            groups: dict[str, Any] = {}
            for split in SPLITS:
                groups[split] = shares([r for r in rows if r["split"] == split])
            groups["all"] = shares(rows)
            for corpus in ("fastapi", "tldr", "wiki"):
                groups[corpus] = shares([r for r in rows if r["corpus"] == corpus])
            out["contexts"][str(context)] = {"shares": groups, "per_question": rows}
    finally:
        for kb in bases.values():
            kb.close()
    return out


def report(out: dict[str, Any]) -> None:
    rows = []
    for context, data in out["contexts"].items():
        count, each = grounded.fitted(int(context))
        for group, s in data["shares"].items():
            rows.append(
                [
                    f"{context} ({count} × {each} chars)",
                    group,
                    s["questions"],
                    s["given"],
                    s["quoted from"],
                    s["candidate"],
                    s["first"],
                    s["any"],
                ]
            )
    table(
        [
            "context",
            "questions",
            "n",
            "answer in a passage given",
            "in a passage quoted from",
            "in a sentence that may be quoted",
            "first quote holds the answer",
            "a quote holds it",
        ],
        rows,
        f"Quotes that state the answer ({LABELLED.name})",
    )


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench quotes", description=__doc__)
    parser.add_argument("--store", type=Path, required=True, help="indexes kept (reused) here")
    parser.add_argument(
        "--context", type=int, action="append", help="the model's context (repeatable)"
    )
    parser.add_argument(
        "--candidates",
        type=Path,
        help="also write each question's quotable sentences and their scores here (JSON)",
    )
    args = parser.parse_args(argv)
    out = measure(args.store, tuple(args.context or CONTEXTS), args.candidates)
    report(out)
    write_json("quotes", out)
