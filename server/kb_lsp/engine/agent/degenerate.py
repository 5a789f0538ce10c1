"""Degenerate model output, recognised as it streams, so that it can be stopped early.

A small model (SmolLM2-135M) given passages often loops instead of answering: "You
can't." forty times, the prompt's `<passage>` tags written back, the question said again
and again, until the token limit (issue 35: 22 of 24 answers, a median 15 s). A `Watch`
reads the answer's text as it comes and says when it has degenerated:

* **repetition** — the text ends in the same run of words said `repeats(unit)` times in a
  row (one word 12 times, two words 6 times, three 4 times, a longer run 3 times), or one
  line (of at least two words) is written a third time;
* **markup** — the prompt's own markup written back: its passage, question or document
  tags, a source header, or a chat template's control tokens (`<|im_start|>`…), which a
  model with no chat template of its own continues the prompt with;
* **no new content** — `STALE_WORDS` words in a row that add no word the text did not
  already have.

It keeps the text before the degeneration began (one copy of a repeated run, nothing of
the markup or of the stale words), so the answer shows what was said once. This is the
Ask answer path's own judgement of the text; hard bounds on any stream (bytes, tokens,
time) are the model client's (`engine/llm/`), not this module's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Kind = Literal["repetition", "markup", "stale"]

MAX_UNIT = 24  # words: a longer repeated run is a repeated sentence, which `LINE_REPEATS` catches
LINE_REPEATS = 3
STALE_WORDS = 48
# A model's answer opens with a few words it may well say again ("The cut-off is … The
# cut-off …"): nothing is judged stale before this many words.
MIN_WORDS_FOR_STALE = 24

_MARKUP = re.compile(
    r"</?\s*(?:passage|question|document|sources?)\b[^>\n]{0,200}>|"
    r"<\|[a-z_]{2,20}\|>|\[/?INST\]|<</?SYS>>|</?s>|"
    r"^\s*(?:Question|Answer from the passages)\s*:",
    re.I | re.M,
)
_WORD = re.compile(r"\S+")
_TRIM = re.compile(r"^[\W_]+|[\W_]+$")


def repeats(unit: int) -> int:
    """How many times in a row a run of `unit` words makes a loop."""
    return max(3, -(-12 // unit))


@dataclass(frozen=True)
class Degenerate:
    kind: Kind
    keep: int  # characters of the text to keep: what came before the degeneration

    @property
    def note(self) -> str:
        """What the answer says about it."""
        return {
            "repetition": "the model was repeating itself",
            "markup": "the model was writing the prompt's markup back",
            "stale": f"the model had written nothing new for {STALE_WORDS} words",
        }[self.kind]


class Watch:
    """Reads one model answer as it streams (`feed`); see the module docstring."""

    def __init__(self) -> None:
        self.text = ""
        self._words: list[str] = []  # normalised, in order
        self._starts: list[int] = []  # each word's start in `text`
        self._first: dict[str, int] = {}  # word -> its first index in `_words`
        self._scanned = 0  # `text` up to here is in `_words`
        self.found: Degenerate | None = None

    def feed(self, piece: str) -> Degenerate | None:
        """More of the answer; what was found once the text has degenerated (and from
        then on), else None."""
        if self.found is not None:
            return self.found
        start = max(0, len(self.text) - 200)  # a tag may straddle two pieces
        self.text += piece
        markup = _MARKUP.search(self.text, start)
        if markup:
            self.found = Degenerate("markup", markup.start())
        else:
            self.found = self._scan()
        return self.found

    def _scan(self) -> Degenerate | None:
        # Whole words only: the last one may still grow.
        end = max(self.text.rfind(" ", self._scanned), self.text.rfind("\n", self._scanned))
        if end <= self._scanned:
            return None
        for match in _WORD.finditer(self.text, self._scanned, end):
            found = self._word(match.group(0), match.start())
            if found is not None:
                return found
        self._scanned = end
        return self._line_repeated()

    def _word(self, raw: str, at: int) -> Degenerate | None:
        word = _TRIM.sub("", raw.lower()) or raw
        words = self._words
        words.append(word)
        self._starts.append(at)
        self._first.setdefault(word, len(words) - 1)
        for unit in range(1, min(MAX_UNIT, len(words) // 3) + 1):
            count = repeats(unit)
            if len(words) >= unit * count and words[-unit * count :] == words[-unit:] * count:
                # Keep the first time the run was said.
                return Degenerate("repetition", self._starts[len(words) - unit * (count - 1)])
        if len(words) >= max(MIN_WORDS_FOR_STALE, STALE_WORDS):
            window = len(words) - STALE_WORDS
            if all(self._first[w] < window for w in words[window:]):
                return Degenerate("stale", self._starts[window])
        return None

    def _line_repeated(self) -> Degenerate | None:
        """A line of two words or more written `LINE_REPEATS` times (whole lines only)."""
        offsets: dict[str, list[int]] = {}
        offset = 0
        for line in self.text[: self.text.rfind("\n") + 1].split("\n"):
            key = " ".join(_TRIM.sub("", w.lower()) for w in line.split())
            if len(key.split()) >= 2:
                offsets.setdefault(key, []).append(offset)
                if len(offsets[key]) >= LINE_REPEATS:
                    # Keep what came before the line's second time.
                    return Degenerate("repetition", offsets[key][1])
            offset += len(line) + 1
        return None
