"""The dates and numbers a piece of text mentions, however it writes them, as values.

A note writes "March 3rd, 2026" where a model answers 2026-03-03, and "48,000" where it
answers 48000: both are the same value, and checking a model's answer against a note
needs that sameness, not the same characters. This reads the common written forms (no
dependency does it without guessing: `dateutil`'s fuzzy parser fills a missing year
with this year's):

* dates — ISO `2026-03-03` (also `2026/03/03`, `2026.03.03`, and the date part of
  `2026-03-03T09:30`); `March 3rd, 2026`, `Mar. 3 2026`, `3 March 2026`, `3rd of
  March, 2026`; `03.03.2026` (day first) and `3/31/2026` (either order when both are
  possible);
* numbers — `48000`, `48,000`, `1,250.50`, `-3.5`, with a `k`, `thousand`,
  `million`/`m`, `billion`/`bn` after them; the parts of a date are not numbers, and
  neither is `12,34` (a decimal comma or a list? not said) nor `5 100` (in prose, two
  numbers as often as one).

Text is folded first (`folding.py`: lower case), so positions are the folded text's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sept", "sep"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = "(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>\d{4})"
_EDGE_L = r"(?<![\w.,/-])"
_EDGE_R = r"(?![\w/-]|[.,]\d)"

_DATES = [
    re.compile(
        rf"{_EDGE_L}(?P<year>\d{{4}})(?P<sep>[-/.])(?P<month>[01]?\d)(?P=sep)(?P<day>[0-3]?\d)"
        r"(?=t\d|[^\w/-]|$)(?!\.\d)"
    ),
    re.compile(rf"(?<!\w){_MONTH}\s?{_DAY},?\s(?:of\s)?{_YEAR}{_EDGE_R}"),
    re.compile(rf"(?<![\w.,/-]){_DAY}\s(?:of\s)?{_MONTH},?\s{_YEAR}{_EDGE_R}"),
]
# Day and month in figures: dots are day first (most of Europe); slashes either way.
_NUMERIC = re.compile(
    rf"{_EDGE_L}(?P<a>[0-3]?\d)(?P<sep>[./])(?P<b>[01]?\d|[0-3]?\d)(?P=sep){_YEAR}{_EDGE_R}"
)
_NUMBER = re.compile(
    r"(?<![\w.,])(?P<sign>[-+]?)(?P<digits>\d{1,3}(?:,\d{3})+|\d+)"
    r"(?P<fraction>\.\d+)?(?:\s?(?P<scale>k|thousand|million|m|billion|bn)\b)?(?![\w]|[.,]\d)"
)
_SCALE = {"k": 1e3, "thousand": 1e3, "m": 1e6, "million": 1e6, "bn": 1e9, "billion": 1e9}


@dataclass(frozen=True)
class Mention:
    start: int
    end: int
    value: date | float


def dates(text: str) -> list[Mention]:
    """The dates `text` (folded) mentions, in order; a form read two ways (`3/4/2026`)
    gives a mention for each reading."""
    found: list[Mention] = []
    for pattern in _DATES:
        for match in pattern.finditer(text):
            day = _date(match["year"], _month(match["month"]), match["day"])
            if day is not None:
                found.append(Mention(match.start(), match.end(), day))
    for match in _NUMERIC.finditer(text):
        a, b = int(match["a"]), int(match["b"])
        readings = [(b, a)] if match["sep"] == "." else [(a, b), (b, a)]
        for month, day_of in dict.fromkeys(readings):
            day = _date(match["year"], month, str(day_of))
            if day is not None:
                found.append(Mention(match.start(), match.end(), day))
    return _without_overlaps(sorted(found, key=lambda m: (m.start, -m.end)))


def numbers(text: str) -> list[Mention]:
    """The numbers `text` (folded) mentions, leaving out the figures of its dates."""
    taken = [(m.start, m.end) for m in dates(text)]
    found = []
    for match in _NUMBER.finditer(text):
        if any(start < match.end() and match.start() < end for start, end in taken):
            continue
        digits = match["digits"].replace(",", "")
        value = float(digits + (match["fraction"] or ""))
        value *= _SCALE.get(match["scale"] or "", 1.0)
        found.append(Mention(match.start(), match.end(), -value if match["sign"] == "-" else value))
    return found


def same_number(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def _month(text: str) -> int:
    return _MONTHS[text] if text in _MONTHS else int(text)


def _date(year: str, month: int, day: str) -> date | None:
    try:
        return date(int(year), month, int(day))
    except ValueError:
        return None


def _without_overlaps(found: list[Mention]) -> list[Mention]:
    """One form per place: a mention inside an earlier, longer one goes (both readings
    of the same characters stay)."""
    out: list[Mention] = []
    for mention in found:
        if (
            out
            and mention.start < out[-1].end
            and (mention.start, mention.end)
            != (
                out[-1].start,
                out[-1].end,
            )
        ):
            continue
        out.append(mention)
    return out
