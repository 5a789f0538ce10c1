"""What kind of answer a question asks for, and whether a sentence holds one (issue 35,
point 3): a quote that states the answer holds what was asked — a time for "when", a
number for "how many", a command for "how do I list…", a name for "who".

The kinds are read from the question's own words, the way a person reads them; a
sentence holds a kind when it has a time (14:30, Thursday, the 25th, business day 3,
within 30 minutes), a number, a command (a code span the piece carries), or a name
(a capitalised word inside the sentence). A question may ask for none of them ("what is
a boleto?").
"""

from __future__ import annotations

import re
from typing import Literal

Kind = Literal["time", "number", "command", "name"]

_ASKS: dict[Kind, re.Pattern[str]] = {
    "time": re.compile(
        r"\b(?:when|what time|by when|how soon|how long|which day|on which day|deadline|"
        r"cut-?off|what date)\b",
        re.I,
    ),
    "number": re.compile(
        r"\b(?:how (?:many|much|big|large|long)|what (?:is|are) the (?:limit|maximum|minimum|"
        r"fee|rate|size)|percent|limit|maximum|minimum|at most|at least|greater than|"
        r"less than|more than|fewer than|zero|positive)\b",
        re.I,
    ),
    # "How do I list…", "list my cron jobs", "which command…": a how-to answered by a
    # command; an imperative question opens with its verb.
    "command": re.compile(
        r"^\s*(?:how (?:do|can|should) (?:i|we|you)\b|(?:which|what) command\b|"
        r"(?:list|show|find|create|delete|remove|copy|move|extract|download|upload|generate|"
        r"install|print|search|grep|replace|stop|kill|start|run|set|make|let|see|display|"
        r"compress|archive|stash|pretty[- ]print|count|check|change|rename|convert|open)\b)",
        re.I,
    ),
    "name": re.compile(r"\b(?:who|whom|whose|which (?:person|team|bank|tool|module))\b", re.I),
}
_TIME = re.compile(
    r"\b\d{1,2}:\d{2}\b|\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?\b|"
    r"\b(?:january|february|march|april|may|june|july|august|september|october|november|"
    r"december)\b|\b\d{1,2}(?:st|nd|rd|th)\b|\bbusiness days?\b|\bday \d\b|"
    r"\b\d+\s*(?:seconds?|minutes?|hours?|days?|weeks?|months?|years?)\b|"
    r"\b(?:daily|weekly|monthly|quarterly|yearly|every day|month-end|year-end)\b",
    re.I,
)
_NUMBER = re.compile(r"\d")
_CODE = re.compile(r"`[^`]+`")
_NAME = re.compile(r"(?<=[\w,;:)] )[A-Z][a-zà-ÿ]+|(?<=[\w,;:)] )[A-Z]{2,}\b")


def asked(question: str) -> frozenset[Kind]:
    """The kinds of answer `question` asks for."""
    return frozenset(kind for kind, pattern in _ASKS.items() if pattern.search(question))


def holds(kind: Kind, text: str, markdown: str = "") -> bool:
    """Whether a piece (its plain `text`, and its sentence as written) holds an answer of
    `kind`: a command is a code span of either."""
    if kind == "time":
        return bool(_TIME.search(text))
    if kind == "number":
        return bool(_NUMBER.search(_CODE.sub("", text)))
    if kind == "command":
        return bool(_CODE.search(text) or _CODE.search(markdown))
    return bool(_NAME.search(text))


def fit(kinds: frozenset[Kind], text: str, markdown: str = "") -> float:
    """The share of the asked kinds a piece holds (0 when none is asked)."""
    if not kinds:
        return 0.0
    return sum(holds(kind, text, markdown) for kind in kinds) / len(kinds)
