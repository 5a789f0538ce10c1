"""Reading a grounded prompt as the scripted model sees it."""

from __future__ import annotations

import re
from dataclasses import dataclass

_PASSAGE = re.compile(
    r'<passage n="(\d+)" file="([^"]+)" lines="(\d+)-(\d+)"[^>]*>\n(.*?)\n</passage>', re.S
)


@dataclass(frozen=True)
class Given:
    n: int
    path: str
    start: int  # 1-based, as the model sees lines
    end: int
    text: str


def given_passages(prompt: str) -> list[Given]:
    """The numbered passages of a grounded prompt, in order."""
    return [
        Given(int(n), path, int(a), int(b), text)
        for n, path, a, b, text in _PASSAGE.findall(prompt)
    ]


def number_of(prompt: str, path: str) -> int:
    """The number of the first passage of `path` in the prompt."""
    return next(g.n for g in given_passages(prompt) if g.path == path)
