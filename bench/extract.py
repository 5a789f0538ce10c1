"""`python -m bench extract [--backend scripted|smollm2|both|server]`: metadata a model
extracts (issue 27) on a labelled sample.

The sample is `bench/data/extract/`: 24 notes (runbooks, postmortems, decisions,
meetings of a payments team) written for this benchmark, with the field values a reader
finds in each (`bench/data/extract-labels.json`) and the schema they fill
(`.kb/schema.json`: counterparty, system, amount, owner, date, kind). Each backend indexes a
copy and runs the metadata phase (`KnowledgeBase.sync(extract=True)`), then:

* **field accuracy**, per field: the share of notes whose extracted value equals the
  label (case and spacing aside; a note whose label is empty must get no value);
* **notes per minute**: notes extracted over the phase's wall time (a second sync
  shows the cache: no model call);
* **filter precision/recall**: filters over the extracted fields
  (`counterparty:"Acme Corp"`, `amount>50000`, `kind:postmortem`, …) against the
  files the labels say they should keep, micro-averaged.

Backends:
* `scripted` — `ScriptedOpenAI` (tests/fakes) answering each note with its labels, as a
  model writes JSON (amounts as strings, enums capitalised, extra keys): the pipeline's
  ceiling (structured output → validation → store → filters), not a model;
* `smollm2` — llama.cpp's server from the `xllamacpp` wheel with SmolLM2-135M-Instruct
  (`kb_lsp.devtools.llama`), `response_format: json_schema`, one thread;
* `server` — any server you run: `--provider ollama --base-url http://127.0.0.1:11434
  --model qwen2.5:7b`, or `--provider openai --base-url http://127.0.0.1:8080/v1`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Any

from bench.report import table, write_json
from kb_lsp.config import load_settings
from kb_lsp.devtools import llama
from kb_lsp.engine.knowledge import KnowledgeBase

DATA = Path(__file__).parent / "data"
SAMPLE = DATA / "extract"
LABELS = DATA / "extract-labels.json"
FIELDS = ("counterparty", "system", "amount", "owner", "date", "kind")
FILTERS = (
    'counterparty:"Acme Corp"',
    'counterparty:"Umbrella Health"',
    "system:ledger",
    'system:"Checkout Service"',
    "amount>50000",
    "amount<10000",
    'owner:"Tom Becker"',
    "date:2026-03",
    "date>=2026-05-01",
    "kind:postmortem",
    "kind:decision",
)


def load_labels() -> dict[str, dict[str, Any]]:
    labels: dict[str, dict[str, Any]] = json.loads(LABELS.read_text(encoding="utf-8"))
    return labels


def scripted_reply(labels: dict[str, dict[str, Any]]) -> Any:
    """The scripted model: each note's labels, written the way models write JSON."""
    from tests.fakes.ollama_server import Turn, answer

    by_title = {}
    for path, fields in labels.items():
        title = (SAMPLE / path).read_text(encoding="utf-8").splitlines()[0].lstrip("# ")
        by_title[title] = fields

    def reply(body: dict[str, Any]) -> Turn:
        note = body["messages"][-1]["content"]
        title = note.split("Note title: ", 1)[1].split("\n", 1)[0]
        fields = dict(by_title[title])
        if fields.get("amount") is not None:
            fields["amount"] = str(fields["amount"])  # "48000": still a number
        if fields.get("kind"):
            fields["kind"] = str(fields["kind"]).title()  # "Runbook": the enum's "runbook"
        fields["confidence"] = "high"  # not in the schema: dropped with a reason
        return answer(json.dumps(fields))

    return reply


def expected(labels: dict[str, dict[str, Any]], filter: str) -> set[str]:
    """The files a filter should keep, by the labels (the filter language's meaning)."""
    field, _, value = filter.partition(":")
    out = set()
    for path, fields in labels.items():
        got = None
        if ">" in filter or "<" in filter:
            op = ">=" if ">=" in filter else (">" if ">" in filter else "<")
            field, _, raw = filter.partition(op)
            got = fields.get(field)
            if got is None:
                continue
            if field == "amount":
                keep = got > float(raw) if op == ">" else got < float(raw)
            else:
                keep = date.fromisoformat(got) >= date.fromisoformat(raw)
            if keep:
                out.add(path)
            continue
        got = fields.get(field)
        wanted = value.strip('"').lower()
        if got is not None and (
            str(got).lower() == wanted or (field == "date" and str(got).startswith(wanted))
        ):
            out.add(path)
    return out


def same(field: str, want: Any, got: list[str] | None) -> bool:
    if want is None:
        return not got
    if not got:
        return False
    if field == "amount":
        try:
            return float(got[0]) == float(want)
        except ValueError:
            return False
    return " ".join(got[0].split()).lower() == " ".join(str(want).split()).lower()


def measure(llm: dict[str, Any], work: Path) -> dict[str, Any]:
    labels = load_labels()
    folder = work / "notes"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(SAMPLE, folder)
    settings = load_settings({"llm": llm, "search": {"threshold": 0.0}}).settings
    from tests.fakes.embedder import HashingEmbedder  # the model under test is the LLM

    kb = KnowledgeBase([folder], settings, embedder=HashingEmbedder(), storage=work / "store")
    try:
        kb.sync(extract=False)
        started = time.perf_counter()
        report = kb.sync(extract=True)
        seconds = time.perf_counter() - started
        again = time.perf_counter()
        cached = kb.sync(extract=True)
        cached_seconds = time.perf_counter() - again
        correct = dict.fromkeys(FIELDS, 0)
        for path, fields in labels.items():
            meta = kb.file_meta(path)
            extracted = meta.extracted if meta is not None else {}
            for field in FIELDS:
                correct[field] += same(field, fields.get(field), extracted.get(field))
        kept = relevant = hits = 0
        per_filter = {}
        for filter in FILTERS:
            got = {hit.path for hit in kb.search("", filter=filter, limit=100)}
            want = expected(labels, filter)
            kept += len(got)
            relevant += len(want)
            hits += len(got & want)
            per_filter[filter] = {"kept": len(got), "relevant": len(want), "right": len(got & want)}
    finally:
        kb.close()
    n = len(labels)
    return {
        "notes": n,
        "asked": report.notes_extracted,
        "errors": report.errors,
        "accuracy": {field: correct[field] / n for field in FIELDS},
        "accuracy_all": sum(correct.values()) / (n * len(FIELDS)),
        "seconds": seconds,
        "notes_per_minute": report.notes_extracted / seconds * 60 if seconds else 0.0,
        "cached_asked": cached.notes_extracted,
        "cached_seconds": cached_seconds,
        "filter_precision": hits / kept if kept else 1.0,
        "filter_recall": hits / relevant if relevant else 1.0,
        "filters": per_filter,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench extract", description=__doc__)
    parser.add_argument(
        "--backend", choices=["scripted", "smollm2", "both", "server"], default="scripted"
    )
    parser.add_argument("--provider", choices=["ollama", "openai"], default="ollama")
    parser.add_argument("--base-url", default=None)
    parser.add_argument("--model", default=None)
    parser.add_argument("--context", type=int, default=4096)
    args = parser.parse_args(argv)
    backends = ["scripted", "smollm2"] if args.backend == "both" else [args.backend]
    out: dict[str, Any] = {"sample": str(SAMPLE.relative_to(DATA.parent.parent)), "backends": {}}
    with tempfile.TemporaryDirectory(prefix="kb-bench-extract-") as tmp:
        for backend in backends:
            work = Path(tmp) / backend
            print(f"--- {backend} ---", flush=True)
            if backend == "scripted":
                from tests.fakes.openai_server import ScriptedOpenAI

                with ScriptedOpenAI(default=scripted_reply(load_labels()), tools=False) as server:
                    llm = {"provider": "openai", "baseUrl": server.base_url, "model": "scripted"}
                    out["backends"][backend] = measure(llm, work)
            elif backend == "smollm2":
                with llama.running(work / "llama.log", context=args.context) as running:
                    llm = {"provider": "openai", "baseUrl": running.base_url, "timeout": 600}
                    out["backends"][backend] = measure(llm, work)
            else:
                llm = {"provider": args.provider, "timeout": 600}
                if args.base_url:
                    llm["baseUrl"] = args.base_url
                if args.model:
                    llm["model"] = args.model
                out["backends"][f"{args.provider}:{args.model or 'default'}"] = measure(llm, work)
    rows = [
        [
            name,
            *(f"{m['accuracy'][f]:.2f}" for f in FIELDS),
            f"{m['notes_per_minute']:.0f}",
            f"{m['filter_precision']:.2f}",
            f"{m['filter_recall']:.2f}",
            m["cached_asked"],
        ]
        for name, m in out["backends"].items()
    ]
    headers = ["backend", *FIELDS, "notes/min", "filter P", "filter R", "re-asked"]
    table(headers, rows, "Field accuracy, speed and filters over extracted fields")
    write_json("extract", out)
    return 0
