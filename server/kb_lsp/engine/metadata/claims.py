"""What a model said about one note, and what was made of it.

A model's reply is a set of *claims* (`reply.py`): per field, a typed value and the
words of the note it says the value comes from. Checking them against the note
(`verify.py`) makes an `Extraction`: the values *kept* — each with its `Span`, the
note's own words it was read from and where they are — and the guesses *rejected*, each
with the reason. Only kept values become filterable metadata; the rejected ones are
kept beside them for `kb schema --extracted`, the counts of `kb schema` and the log.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from kb_lsp.engine.metadata.values import Value


@dataclass(frozen=True)
class Span:
    """Where a value was read: code-point offsets into the note's text, the same as
    0-based lines and columns (LSP positions), and the note's words there."""

    start: int
    end: int
    line: int
    character: int
    end_line: int
    end_character: int
    evidence: str

    @classmethod
    def of(cls, text: str, start: int, end: int) -> Span:
        line = text.count("\n", 0, start)
        end_line = line + text.count("\n", start, end)
        return cls(
            start,
            end,
            line,
            start - (text.rfind("\n", 0, start) + 1),
            end_line,
            end - (text.rfind("\n", 0, end) + 1),
            text[start:end],
        )


@dataclass(frozen=True)
class Kept:
    value: Value
    span: Span


@dataclass(frozen=True)
class Rejected:
    """A value the model gave that is not stored, and why. `valid`: the value was of the
    field's type (rejected for its evidence), else it was not even that."""

    field: str
    value: str
    reason: str
    evidence: str = ""
    valid: bool = True


@dataclass(frozen=True)
class Claim:
    """One field of a reply: its typed values and the evidence given for them (None:
    none was given)."""

    field: str
    values: tuple[Value, ...]
    evidence: str | None


@dataclass(frozen=True)
class Reply:
    """A model's reply read against the schema, before it is checked against the note."""

    claims: tuple[Claim, ...]
    rejected: tuple[Rejected, ...] = ()
    dropped: tuple[str, ...] = ()  # what is not a field's value (a key not in the schema)
    failed: bool = False  # the reply as a whole was unusable (not a JSON object)


@dataclass(frozen=True)
class Extraction:
    """One note's extraction: the values kept, with their spans, and the guesses
    rejected, with the reasons."""

    kept: dict[str, list[Kept]]
    rejected: tuple[Rejected, ...] = ()
    dropped: tuple[str, ...] = ()
    failed: bool = False

    @property
    def fields(self) -> dict[str, list[Value]]:
        """The values that become the note's metadata."""
        return {name: [k.value for k in kept] for name, kept in self.kept.items() if kept}

    def reasons(self) -> list[str]:
        """Every rejected guess and dropped part, one line each (for the log)."""
        said = [f"{r.field}: {r.value} rejected: {r.reason}" for r in self.rejected]
        return said + list(self.dropped)

    def as_json(self) -> str:
        return json.dumps(
            {
                "kept": {
                    name: [[*_value(k.value), asdict(k.span)] for k in kept]
                    for name, kept in self.kept.items()
                },
                "rejected": [asdict(r) for r in self.rejected],
                "dropped": list(self.dropped),
                "failed": self.failed,
            },
            ensure_ascii=False,
        )

    @classmethod
    def from_json(cls, text: str) -> Extraction:
        raw = json.loads(text)
        return cls(
            {
                str(name): [Kept(Value(str(k), str(t), n), Span(**span)) for k, t, n, span in kept]
                for name, kept in raw["kept"].items()
            },
            tuple(Rejected(**r) for r in raw["rejected"]),
            tuple(raw["dropped"]),
            bool(raw["failed"]),
        )


@dataclass(frozen=True)
class StoredClaim:
    """One value a model gave for a file, as the store keeps it: kept with its span, or
    rejected with why."""

    path: str
    model: str
    field: str
    value: str
    kept: bool
    valid: bool
    reason: str
    evidence: str
    span: Span | None


def _value(value: Value) -> list[Any]:
    return [value.kind, value.text, value.number]
