"""The grounding check against the hand-labelled set (`data/grounding_cases.json`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kb_lsp.engine.agent.grounding import copied_prompt, judge

CASES: list[dict[str, Any]] = json.loads(
    (Path(__file__).parent / "data" / "grounding_cases.json").read_text(encoding="utf-8")
)


@dataclass(frozen=True)
class P:
    n: int
    path: str
    text: str


def passages(case: dict[str, Any]) -> list[P]:
    return [P(p["n"], p["path"], p["text"]) for p in case["passages"]]


def test_the_labelled_set_covers_every_kind() -> None:
    labels = [case["label"] for case in CASES]
    assert len(CASES) >= 20
    assert {"grounded", "ungrounded", "declined", "fallback"} <= set(labels)
    assert labels.count("grounded") >= 6 and labels.count("ungrounded") >= 10


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_each_labelled_answer_is_judged_as_labelled(case: dict[str, Any]) -> None:
    verdict = judge(
        case["answer"], passages(case), question=case["question"], fallback=case["fallback"]
    )
    assert verdict.label == case["label"], verdict.reasons
    if verdict.label == "ungrounded":
        assert verdict.reasons  # it says why


def test_copied_headers_and_tags_are_copies() -> None:
    assert copied_prompt("[2] docs/a.md (lines 3-9) — Intro")
    assert copied_prompt("see <passage> above")
    assert not copied_prompt("Payments to Mexico must be released before 14:30 [1].")


@given(st.text(max_size=200))
def test_any_text_gets_a_verdict(text: str) -> None:
    verdict = judge(text, passages(CASES[0]), question=CASES[0]["question"])
    assert verdict.label in ("grounded", "ungrounded", "declined")
    assert verdict.supported <= verdict.sentences
