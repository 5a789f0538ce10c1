"""Where a section's chunks begin and end: the line ranges of one section (breaking at
top-level blocks first, then nested ones, then lines, with overlap), and a line too long
for any chunk cut at word boundaries (`markdown.py` has the rules)."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Any


class Chunker:
    """Chooses the line ranges of one section's chunks (the rules: `markdown.py`)."""

    def __init__(self, lines: list[str], tokens: list[Any], size: int, overlap: int) -> None:
        self.lines = lines
        self.size = size
        self.overlap = overlap
        # offset[i] = characters before line i, counting one "\n" per line.
        self.offset = [0]
        for line in lines:
            self.offset.append(self.offset[-1] + len(line) + 1)
        top: set[int] = set()
        nested: set[int] = set()
        for token in tokens:
            if token.map and token.nesting in (0, 1) and token.type != "front_matter":
                (top if token.level == 0 else nested).add(int(token.map[0]))
        self.top = sorted(top)
        self.nested = sorted(nested | top)

    def chars(self, start: int, end: int) -> int:
        """Characters of lines [start, end) joined with "\\n"."""
        return self.offset[end] - self.offset[start] - 1

    def split(self, start: int, end: int) -> list[tuple[int, int]]:
        if self.chars(start, end) <= self.size:
            return [(start, end)]
        tiers = [self._within(self.top, start, end), self._within(self.nested, start, end)]
        ranges: list[tuple[int, int]] = []
        chunk_start, done = start, start
        while done < end:
            stop = self._best_break(tiers, chunk_start, done, end)
            ranges.append((chunk_start, stop))
            if stop >= end:
                break
            chunk_start = self._overlap_start(chunk_start, stop, tiers, end)
            done = stop
        return ranges

    @staticmethod
    def _within(points: list[int], start: int, end: int) -> list[int]:
        return [*points[bisect_right(points, start) : bisect_left(points, end)], end]

    def _best_break(self, tiers: list[list[int]], start: int, done: int, end: int) -> int:
        """The furthest break after `done` that keeps [start, break) within the size.

        A coarser break wins when it fills at least half a chunk; otherwise the furthest
        fitting break of any tier, so a heading is not left alone in front of a big block.
        """
        limit = self.offset[start] + self.size + 1
        furthest = -1
        for tier in tiers:
            # The last point of the tier with offset <= limit.
            lo, hi = bisect_right(tier, done), len(tier)
            while lo < hi:
                mid = (lo + hi) // 2
                if self.offset[tier[mid]] <= limit:
                    lo = mid + 1
                else:
                    hi = mid
            if lo and tier[lo - 1] > done:
                point = tier[lo - 1]
                if self.chars(start, point) >= self.size // 2:
                    return point
                furthest = max(furthest, point)
        # Any line: as many whole lines as fit, at least one.
        line = min(end, bisect_right(self.offset, limit) - 1)
        return max(line, furthest, done + 1)

    def _overlap_start(self, start: int, stop: int, tiers: list[list[int]], end: int) -> int:
        # Leave room for the next chunk's first new piece (at least its next line).
        next_piece = self.chars(stop, stop + 1) + 1
        for tier in tiers:
            i = bisect_right(tier, stop)
            if i < len(tier) and self.chars(stop, tier[i]) <= self.size:
                next_piece = self.chars(stop, tier[i]) + 1
                break
        budget = min(self.overlap, self.size - next_piece)
        new_start = stop
        while new_start - 1 > start and self.chars(new_start - 1, stop) + 1 <= budget:
            new_start -= 1
        return new_start


def trim_blank(lines: list[str], start: int, end: int) -> tuple[int, int]:
    """The first and last non-blank lines of [start, end); first > last when all blank."""
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return start, end - 1


def capped(
    lines: list[str], first: int, last: int, size: int, overlap: int
) -> list[tuple[int, int, str]]:
    """(first line, last line, text) pieces of lines[first..last], none over `size`:
    runs of whole lines, and a line too long for a chunk cut by `_cut_line`."""
    pieces: list[tuple[int, int, str]] = []
    run: list[int] = []
    run_chars = -1
    for number in range(first, last + 1):
        line = lines[number]
        if len(line) > size or run_chars + 1 + len(line) > size:
            if run:
                pieces.append((run[0], run[-1], "\n".join(lines[run[0] : run[-1] + 1])))
            run, run_chars = [], -1
        if len(line) > size:
            pieces.extend((number, number, piece) for piece in cut_line(line, size, overlap))
            continue
        run.append(number)
        run_chars += 1 + len(line)
    if run:
        pieces.append((run[0], run[-1], "\n".join(lines[run[0] : run[-1] + 1])))
    return [piece for piece in pieces if piece[2].strip()]


def cut_line(line: str, size: int, overlap: int) -> list[str]:
    """`line` in pieces of at most `size` characters, cut after the last space or tab that
    leaves at least half a piece (else mid-word), overlapping by whole words."""
    overlap = min(overlap, size // 2)
    pieces: list[str] = []
    pos, length = 0, len(line)
    while pos < length:
        if length - pos <= size:
            pieces.append(line[pos:])
            break
        end = pos + size
        space = max(
            line.rfind(" ", pos + size // 2, end + 1), line.rfind("\t", pos + size // 2, end + 1)
        )
        cut = space if space > pos else end
        pieces.append(line[pos:cut].rstrip())
        following = cut
        if overlap:
            # Start the next piece at the first word boundary within `overlap` of the cut.
            back = max(pos + 1, cut - overlap)
            boundary = max(line.find(" ", back, cut), line.find("\t", back, cut))
            if 0 <= boundary < cut - 1:
                following = boundary + 1
        while following < length and line[following] in " \t":
            following += 1
        pos = max(following, pos + 1)
    return pieces
