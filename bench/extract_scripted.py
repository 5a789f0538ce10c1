"""The scripted model of `bench extract`: it knows each note's labels and answers the way
models do — right where the labels say so, and guessing where they say nothing.

* A labelled value comes with evidence: the note's sentence that holds it (its written
  form, `written` in the labels, where the note writes it another way), and a date as
  the model returns it (ISO) put into that sentence, as a model that rewrites what it
  copies does; a kind comes with the sentence holding its option or one of the
  schema's synonyms, else with the note's title (which may not say it).
* Where the labels have nothing, it guesses as a small model does (issue 36): a bank the
  note never names, a person, a system, a round amount without evidence, a date from
  another century, and for the kind the first option it is shown, without evidence.
* Its JSON is a model's: amounts as strings, enums capitalised, a key not in the schema.

So the pipeline's ceiling (what a perfect reader's answers become) and what verification
does with invented values are measured without a model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

GUESSES: dict[str, tuple[Any, str | None]] = {
    # field -> (value, evidence) a small model writes for a note that does not say it
    "counterparty": ("Bank of America", "a payment to Bank of America"),
    "system": ("SAP", None),
    "amount": ("1000", None),
    "owner": ("John Smith", "Owner: John Smith"),
    "date": ("1567-03-14", None),
}
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")
_SHOWN = re.compile(r'^- kind \(one of "([^"]+)"', re.MULTILINE)


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s.strip()]


def holding(text: str, words: list[str]) -> str | None:
    """The first sentence of `text` holding one of `words` (case aside)."""
    for sentence in sentences(text):
        if any(w.lower() in sentence.lower() for w in words):
            return sentence
    return None


def labelled(field: str, want: Any, text: str, written: dict[str, str]) -> dict[str, Any]:
    """A right answer with the note's words for it."""
    form = written.get(field, _plain(want))
    sentence = holding(text, [form]) or text.splitlines()[0]
    if field == "date" and form != want:
        sentence = sentence.replace(form, str(want))  # the model rewrites the date
    value: Any = str(want) if field == "amount" else want
    return {"evidence": sentence, "value": value}


def kind_answer(want: str | None, text: str, synonyms: dict[str, list[str]], prompt: str) -> Any:
    if want is None:
        shown = _SHOWN.search(prompt)
        return shown.group(1).title() if shown else None  # the first option, no evidence
    sentence = holding(text, [want, *synonyms.get(want, [])]) or text.splitlines()[0]
    return {"evidence": sentence, "value": want.title()}


def scripted_reply(
    sample: Path, labels: dict[str, dict[str, Any]], synonyms: dict[str, list[str]]
) -> Callable[[dict[str, Any]], Any]:
    from tests.fakes.ollama_server import Turn, answer

    notes = {}
    for path, fields in labels.items():
        text = (sample / path).read_text(encoding="utf-8")
        notes[text.splitlines()[0].lstrip("# ")] = (text, fields)

    def reply(body: dict[str, Any]) -> Turn:
        prompt = body["messages"][-1]["content"]
        title = prompt.split("Note title: ", 1)[1].split("\n", 1)[0]
        text, fields = notes[title]
        written = fields.get("written", {})
        out: dict[str, Any] = {}
        for field in ("counterparty", "system", "amount", "owner", "date"):
            want = fields.get(field)
            if want is not None:
                out[field] = labelled(field, want, text, written)
            else:
                value, evidence = GUESSES[field]
                out[field] = {"evidence": evidence, "value": value} if evidence else value
        out["kind"] = kind_answer(fields.get("kind"), text, synonyms, prompt)
        out["confidence"] = "high"  # not in the schema: dropped with a reason
        return answer(json.dumps(out))

    return reply


def _plain(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
