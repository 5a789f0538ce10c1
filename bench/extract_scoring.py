"""How `bench extract` scores a model's values against the labels, before and after
verification (issue 36).

Per field, over the notes of the sample, for a set of values (one per note and field:
*before* — every value of the right type the model gave; *after* — the values kept):

* **precision** — the values that equal the label, of the values given;
* **recall** — the notes whose label is given back, of the notes with a label;
* **invented** — the values the note does not hold at all, of the values given. Judged
  here on its own, without the product's verifier: a text whose words the note does not
  have (case and spacing aside); a number whose figures the note does not have (commas
  aside); a date that is not the label and not written in ISO form in the note (the
  sample writes only its labelled dates another way: `written` in the labels); an enum
  option whose word, and whose synonyms', the note does not have.

A value that is in the note but is not the label (the system where the counterparty was
asked for) is a wrong value, not an invented one: precision counts it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

FIELDS = ("counterparty", "system", "amount", "owner", "date", "kind")


def flat(text: str) -> str:
    return " ".join(text.split()).lower()


def same(name: str, want: Any, got: str | None) -> bool:
    if want is None or got is None:
        return want is None and got is None
    if name == "amount":
        try:
            return float(got) == float(want)
        except ValueError:
            return False
    return flat(got) == flat(str(want))


def in_note(name: str, value: str, text: str, label: Any, synonyms: dict[str, list[str]]) -> bool:
    """Whether the note holds `value` in any form (see the module)."""
    if same(name, label, value):
        return True
    if name == "amount":
        try:
            number = float(value)
        except ValueError:
            return False
        figures = str(int(number)) if number.is_integer() else str(number)
        return (
            re.search(rf"(?<![\d.]){re.escape(figures)}(?![\d])", text.replace(",", "")) is not None
        )
    if name == "date":
        return value in text
    words = [value, *synonyms.get(value.lower(), [])] if name == "kind" else [value]
    return any(re.search(rf"(?<!\w){re.escape(flat(w))}", flat(text)) for w in words)


@dataclass
class Tally:
    given: int = 0
    right: int = 0
    invented: int = 0
    found: int = 0  # notes whose label was given back

    def add(self, name: str, want: Any, got: str, invented: bool) -> None:
        """One value `got` of field `name` whose label is `want`."""
        self.given += 1
        if same(name, want, got):
            self.right += 1
            self.found += want is not None
        self.invented += invented

    def row(self, labelled: int) -> dict[str, Any]:
        return {
            "given": self.given,
            "right": self.right,
            "invented": self.invented,
            "precision": self.right / self.given if self.given else None,
            "recall": self.found / labelled if labelled else None,
            "invented_rate": self.invented / self.given if self.given else 0.0,
        }


@dataclass
class Score:
    """Per field: the tallies before and after verification."""

    labelled: dict[str, int] = field(default_factory=dict)
    before: dict[str, Tally] = field(default_factory=dict)
    after: dict[str, Tally] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in (*FIELDS, "all"):
            out[name] = {
                "labelled": self.labelled[name],
                "before": self.before[name].row(self.labelled[name]),
                "after": self.after[name].row(self.labelled[name]),
            }
        return out


def score(
    labels: dict[str, dict[str, Any]],
    texts: dict[str, str],
    values: dict[str, dict[str, tuple[str | None, str | None]]],
    synonyms: dict[str, list[str]],
) -> Score:
    """`values`: path -> field -> (the value the model gave, the value kept)."""
    result = Score()
    for name in (*FIELDS, "all"):
        result.before[name] = Tally()
        result.after[name] = Tally()
        result.labelled[name] = 0
    for path, fields in labels.items():
        for name in FIELDS:
            want = fields.get(name)
            given, kept = values.get(path, {}).get(name, (None, None))
            result.labelled[name] += want is not None
            result.labelled["all"] += want is not None
            for tallies, got in ((result.before, given), (result.after, kept)):
                if got is None:
                    continue
                invented = not in_note(name, got, texts[path], want, synonyms)
                tallies[name].add(name, want, got, invented)
                tallies["all"].add(name, want, got, invented)
    return result


def enum_accuracy(
    labels: dict[str, dict[str, Any]], values: dict[str, dict[str, tuple[str | None, str | None]]]
) -> dict[str, float]:
    """The share of notes whose kind is right (null where the label is null), as given
    and as kept."""
    given = kept = 0
    for path, fields in labels.items():
        want = fields.get("kind")
        raw, stored = values.get(path, {}).get("kind", (None, None))
        given += same("kind", want, raw)
        kept += same("kind", want, stored)
    return {"given": given / len(labels), "kept": kept / len(labels)}
