"""`python -m bench extract [--backend scripted|smollm2|both|server]`: metadata a model
extracts (issues 27, 36) on a labelled sample, before and after verification.

The sample is `bench/data/extract/`: 45 notes (runbooks, postmortems, decisions,
meetings, reference pages of a payments team) written for this benchmark, with the
field values a reader finds in each (`bench/data/extract-labels.json`: null where the
note does not say; `written`: how the note writes a labelled date or amount when it is
not ISO or plain digits) and the schema they fill (`.kb/schema.json`: counterparty,
system, amount, owner, date, kind with `x-synonyms`). Each backend indexes a copy and
runs the metadata phase (`KnowledgeBase.sync(extract=True)`), twice: with the schema's
enum options as written, and reversed. Then, from `kb schema --extracted`'s answer
(`KnowledgeBase.schema(extracted=True)`: every value given, kept or rejected):

* per field, **before and after verification**, precision, recall and the
  invented-value rate (`extract_scoring.py` says how each is judged);
* **enum accuracy** (`kind`) with the options as written and reversed: as given, as
  kept, how often the answer was the first option shown, and how many answers changed;
* **notes per minute** (a second sync shows the cache: no model call) and **filter
  precision/recall** over the kept fields (`counterparty:"Acme Corp"`, `amount>50000`…).

Backends:
* `scripted` — `ScriptedOpenAI` answering each note from its labels, with the note's
  words as evidence, and guessing where the labels say nothing (`extract_scripted.py`);
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

from bench.extract_scoring import enum_accuracy, score
from bench.extract_scripted import scripted_reply
from bench.report import table, write_json
from kb_lsp.config import load_settings
from kb_lsp.devtools import llama
from kb_lsp.engine.knowledge import KnowledgeBase
from kb_lsp.engine.metadata.extractor import seen, shown_options
from kb_lsp.engine.metadata.user_schema import SCHEMA_FILE, parse_schema

DATA = Path(__file__).parent / "data"
SAMPLE = DATA / "extract"
LABELS = DATA / "extract-labels.json"
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


def synonyms() -> dict[str, list[str]]:
    schema = json.loads((SAMPLE / SCHEMA_FILE).read_text(encoding="utf-8"))
    found: dict[str, list[str]] = schema["properties"]["kind"].get("x-synonyms", {})
    return found


def reversed_schema(folder: Path) -> None:
    """The copy's schema with every enum's options in the other order."""
    path = folder / SCHEMA_FILE
    schema = json.loads(path.read_text(encoding="utf-8"))
    for spec in schema["properties"].values():
        if "enum" in spec:
            spec["enum"] = list(reversed(spec["enum"]))
    path.write_text(json.dumps(schema, indent=2), encoding="utf-8")


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


def given_and_kept(kb: KnowledgeBase) -> dict[str, dict[str, tuple[str | None, str | None]]]:
    """path -> field -> (the first value of its type the model gave, the first kept)."""
    out: dict[str, dict[str, tuple[str | None, str | None]]] = {}
    for note in kb.schema(extracted=True).notes or []:
        fields = out.setdefault(note.path, {})
        for claim in note.values:
            given, kept = fields.get(claim.field, (None, None))
            if claim.kept or claim.valid:
                given = given if given is not None else claim.value
            if claim.kept:
                kept = kept if kept is not None else claim.value
            fields[claim.field] = (given, kept)
    return out


def first_shown(folder: Path, values: dict[str, dict[str, tuple[str | None, str | None]]]) -> float:
    """Of the kinds given, the share that is the first option the note was shown."""
    spec = parse_schema((folder / SCHEMA_FILE).read_text(encoding="utf-8"), "schema").field("kind")
    assert spec is not None
    given = first = 0
    for path, fields in values.items():
        kind = fields.get("kind", (None, None))[0]
        if kind is not None:
            text = (folder / path).read_text(encoding="utf-8")
            given += 1
            first += kind == shown_options(spec, seen(text))[0]
    return first / given if given else 0.0


def measure(llm: dict[str, Any], work: Path, *, reverse: bool = False) -> dict[str, Any]:
    labels = load_labels()
    folder = work / ("reversed" if reverse else "notes")
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(SAMPLE, folder)
    if reverse:
        reversed_schema(folder)
    settings = load_settings({"llm": llm, "search": {"threshold": 0.0}}).settings
    from tests.fakes.embedder import HashingEmbedder  # the model under test is the LLM

    storage = work / ("store-reversed" if reverse else "store")
    kb = KnowledgeBase([folder], settings, embedder=HashingEmbedder(), storage=storage)
    try:
        kb.sync(extract=False)
        started = time.perf_counter()
        report = kb.sync(extract=True)
        seconds = time.perf_counter() - started
        again = time.perf_counter()
        cached = kb.sync(extract=True)
        cached_seconds = time.perf_counter() - again
        values = given_and_kept(kb)
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
    texts = {path: (folder / path).read_text(encoding="utf-8") for path in labels}
    return {
        "notes": len(labels),
        "asked": report.notes_extracted,
        "errors": report.errors,
        "fields": score(labels, texts, values, synonyms()).as_dict(),
        "kind": {**enum_accuracy(labels, values), "first_shown": first_shown(folder, values)},
        "kinds_given": {
            path: fields.get("kind", (None, None))[0] for path, fields in values.items()
        },
        "seconds": seconds,
        "notes_per_minute": report.notes_extracted / seconds * 60 if seconds else 0.0,
        "cached_asked": cached.notes_extracted,
        "cached_seconds": cached_seconds,
        "filter_precision": hits / kept if kept else 1.0,
        "filter_recall": hits / relevant if relevant else 1.0,
        "filters": per_filter,
    }


def both_orders(llm: dict[str, Any], work: Path) -> dict[str, Any]:
    """One backend with the enum options as written, then reversed."""
    written = measure(llm, work)
    flipped = measure(llm, work, reverse=True)
    changed = sum(
        written["kinds_given"].get(path) != flipped["kinds_given"].get(path)
        for path in load_labels()
    )
    return {"written": written, "reversed": flipped, "kinds_changed": changed}


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

                script = scripted_reply(SAMPLE, load_labels(), synonyms())
                with ScriptedOpenAI(default=script, tools=False) as server:
                    llm = {"provider": "openai", "baseUrl": server.base_url, "model": "scripted"}
                    out["backends"][backend] = both_orders(llm, work)
            elif backend == "smollm2":
                with llama.running(work / "llama.log", context=args.context) as running:
                    llm = {"provider": "openai", "baseUrl": running.base_url, "timeout": 600}
                    out["backends"][backend] = both_orders(llm, work)
            else:
                llm = {"provider": args.provider, "timeout": 600}
                if args.base_url:
                    llm["baseUrl"] = args.base_url
                if args.model:
                    llm["model"] = args.model
                name = f"{args.provider}:{args.model or 'default'}"
                out["backends"][name] = both_orders(llm, work)
    report(out["backends"])
    write_json("extract", out)
    return 0


def report(backends: dict[str, Any]) -> None:
    rows = []
    for name, runs in backends.items():
        for field, m in runs["written"]["fields"].items():
            before, after = m["before"], m["after"]
            rows.append(
                [
                    name,
                    field,
                    m["labelled"],
                    f"{before['given']} -> {after['given']}",
                    f"{_ratio(before['precision'])} -> {_ratio(after['precision'])}",
                    f"{_ratio(before['recall'])} -> {_ratio(after['recall'])}",
                    f"{before['invented_rate']:.2f} -> {after['invented_rate']:.2f}",
                ]
            )
    headers = ["backend", "field", "labelled", "values", "precision", "recall", "invented"]
    table(headers, rows, "Before -> after verification, per field (enum options as written)")
    rows = []
    for name, runs in backends.items():
        for order in ("written", "reversed"):
            kind = runs[order]["kind"]
            changed = runs["kinds_changed"] if order == "reversed" else ""
            rows.append(
                [
                    name,
                    order,
                    f"{kind['given']:.2f}",
                    f"{kind['kept']:.2f}",
                    f"{kind['first_shown']:.2f}",
                    changed,
                ]
            )
    headers = ["backend", "options", "kind given", "kind kept", "first shown", "changed"]
    table(headers, rows, "Enum accuracy with the option order reversed (kind, all notes)")
    rows = [
        [
            name,
            f"{runs['written']['notes_per_minute']:.0f}",
            f"{runs['written']['filter_precision']:.2f}",
            f"{runs['written']['filter_recall']:.2f}",
            runs["written"]["cached_asked"],
        ]
        for name, runs in backends.items()
    ]
    headers = ["backend", "notes/min", "filter P", "filter R", "re-asked"]
    table(headers, rows, "Speed and filters over the kept fields")


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"
