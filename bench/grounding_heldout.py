"""How the grounding check (`engine/agent/grounding.py`) agrees with a person, on two sets.

* Development cases: `tests/unit/data/grounding_cases.json`, the 26 cases the check was
  written against and `tests/unit/test_grounding.py` requires it to get right — any green
  build classifies them all as labelled, so their 1.00 says the tests pass, not how good
  the check is.
* Held out: `bench/data/grounding-heldout.json`, real answers saved by `python -m bench
  ask` to questions no development of the check or of grounded mode read (the query set's
  questions 21–54), each labelled by hand; nothing in the check was tuned on them.

    python -m bench ask --heldout-from RESULTS.json   # a saved run's answers, to label

writes the saved run's answers as unlabelled cases (`"label": null`) beside the held-out
file (`grounding-heldout.new.json`); a person fills in each label and its reason.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kb_lsp.engine.agent.grounding import judge

REPO = Path(__file__).resolve().parent.parent
DEVELOPMENT = REPO / "tests" / "unit" / "data" / "grounding_cases.json"
HELDOUT = REPO / "bench" / "data" / "grounding-heldout.json"


@dataclass(frozen=True)
class Given:
    """A passage as the model saw it (what `judge` reads)."""

    n: int
    path: str
    text: str


def verdicts(cases: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(the person's label, the check's) for every case."""
    pairs = []
    for case in cases:
        passages = [Given(p["n"], p["path"], p["text"]) for p in case["passages"]]
        verdict = judge(
            case["answer"], passages, question=case["question"], fallback=case["fallback"]
        )
        pairs.append((case["label"], verdict.label))
    return pairs


def agreement(cases: list[dict[str, Any]]) -> dict[str, Any]:
    """The share the check classifies as labelled, and each (label, check) pair's count."""
    pairs = verdicts(cases)
    return {
        "cases": len(pairs),
        "agreement": sum(a == b for a, b in pairs) / len(pairs) if pairs else None,
        "labels": dict(Counter(label for label, _ in pairs)),
        "pairs": {f"{a} -> {b}": n for (a, b), n in sorted(Counter(pairs).items())},
    }


def both() -> dict[str, Any]:
    development = json.loads(DEVELOPMENT.read_text(encoding="utf-8"))
    held = json.loads(HELDOUT.read_text(encoding="utf-8"))["cases"]
    return {"development": agreement(development), "heldout": agreement(held)}


def report(out: dict[str, Any]) -> None:
    """The check's agreement on both sets, printed under `bench ask`'s table."""
    found = both()
    out["grounding_check"] = found
    dev, held = found["development"], found["heldout"]
    print(
        f"the check on its development cases ({dev['cases']}, which the unit tests require): "
        f"{dev['agreement']:.2f} classified as labelled"
    )
    print(
        f"the check on held-out real answers ({held['cases']}, labelled by hand, "
        f"{HELDOUT.relative_to(REPO)}): {held['agreement']:.2f} classified as labelled"
    )
    print("  label -> check: " + ", ".join(f"{k} {v}" for k, v in held["pairs"].items()))


def unlabelled(saved: Path) -> Path:
    """A saved `bench ask` run's answers as cases to label, beside the held-out file."""
    from bench.ask import given_passages

    run = json.loads(saved.read_text(encoding="utf-8"))
    cases = []
    for backend, measured in run["backends"].items():
        for row in measured["per_question"]:
            cases.append(
                {
                    "backend": backend,
                    "question": row["query"],
                    "answer": row.get("raw", ""),
                    "passages": [
                        {"n": g.n, "path": g.path, "text": g.text}
                        for g in given_passages(row.get("prompt", ""))
                    ],
                    "fallback": row["mode"] == "fallback",
                    "label": None,
                    "why": "",
                }
            )
    target = HELDOUT.with_suffix(".new.json")
    made = {"run": {k: run.get(k) for k in ("machine", "questions", "max_tokens")}, "cases": cases}
    target.write_text(json.dumps(made, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"-> {target.relative_to(REPO)}: {len(cases)} answers to label")
    return target
