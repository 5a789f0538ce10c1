"""YAML front matter, read safely.

PyYAML's `SafeLoader` (no Python objects, no code) with three guards of our own:

* size: front matter longer than `MAX_FRONT_MATTER_CHARS` is not parsed (a 1 MB block
  of YAML in a note is a mistake or an attack, and parsing it would hold the indexer);
* aliases: at most `MAX_ALIASES` `*alias` references, so a "billion laughs" document
  (anchors referring to anchors, exponential when walked) is refused early;
* size of the result: `flatten` visits at most `MAX_VALUES` values.

Anything wrong (a YAML error, a top level that is not a mapping, a duplicate key) is a
`Problem` with the file's 0-based line; the fields that could be read are still used,
and the file is always indexed. Duplicate keys keep the last value, as YAML parsers do,
and are reported. Characters YAML does not allow (the ESC of pasted terminal colours,
other control characters) are reported and left out, and the rest is read; a lone
surrogate that a `"\\ud800"` escape makes (it cannot be stored as UTF-8) becomes U+FFFD;
a number too large for a float is kept as text.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

import yaml

from kb_lsp.engine.metadata.values import Value

MAX_FRONT_MATTER_CHARS = 64 * 1024
MAX_ALIASES = 64
MAX_VALUES = 2_000
MAX_DEPTH = 3  # nested mappings become dotted names down to this depth

# What PyYAML's reader refuses (`Reader.NON_PRINTABLE`), and UTF-16 surrogates.
_NOT_YAML = re.compile("[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class Problem:
    line: int  # 0-based line of the file
    message: str


class _TooComplex(yaml.YAMLError):
    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


class _GuardedLoader(yaml.SafeLoader):
    """SafeLoader counting aliases and recording duplicate keys."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.aliases = 0
        self.duplicates: list[tuple[str, int]] = []
        self.huge_numbers: list[tuple[int, int]] = []  # (line, digits)

    def construct_huge_aware_int(self, node: Any) -> int:
        value: int = self.construct_yaml_int(node)
        try:
            float(value)
        except OverflowError:  # `scalar_value` keeps it as text
            self.huge_numbers.append((node.start_mark.line, len(str(abs(value)))))
        return value

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
                raise _TooComplex(
                    f"more than {MAX_ALIASES} YAML aliases (*name); the fields are ignored",
                    mark.line,
                )
        return super().compose_node(parent, index)

    def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                key = key_node.value
                if key in seen and key != "<<":
                    self.duplicates.append((str(key), key_node.start_mark.line))
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


_GuardedLoader.add_constructor("tag:yaml.org,2002:int", _GuardedLoader.construct_huge_aware_int)


@dataclass(frozen=True)
class FrontMatter:
    fields: dict[str, Any]  # top-level keys as written, values as YAML gave them
    problems: tuple[Problem, ...]


def load_front_matter(text: str, first_line: int) -> FrontMatter:
    """Parse front matter `text` whose first line is line `first_line` of the file."""
    if len(text) > MAX_FRONT_MATTER_CHARS:
        return FrontMatter(
            {},
            (
                Problem(
                    first_line,
                    f"front matter of {len(text) // 1024} KB is over the "
                    f"{MAX_FRONT_MATTER_CHARS // 1024} KB read; its fields are ignored",
                ),
            ),
        )
    if not text.strip():
        return FrontMatter({}, ())
    problems: list[Problem] = []
    bad = _NOT_YAML.search(text)
    if bad is not None:
        line = first_line + text.count("\n", 0, bad.start())
        problems.append(
            Problem(
                line,
                f"front matter holds the control character U+{ord(bad.group()):04X}, which "
                "YAML does not allow; it is read without it",
            )
        )
        text = _NOT_YAML.sub("", text)
    try:
        loader = _GuardedLoader(text)
    except yaml.YAMLError as err:  # the reader's own check, should ours ever differ
        return FrontMatter(
            {}, (*problems, Problem(first_line, f"front matter is not valid YAML: {err}"))
        )
    try:
        data = loader.get_single_data()
    except _TooComplex as err:
        return FrontMatter({}, (*problems, Problem(first_line + err.line, err.message)))
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = first_line + (mark.line if mark is not None else 0)
        reason = err.problem or err.context or "invalid YAML"
        problem = Problem(line, f"front matter is not valid YAML: {reason}")
        return FrontMatter({}, (*problems, problem))
    except (yaml.YAMLError, RecursionError, ValueError, TypeError, OverflowError) as err:
        # Constructor errors without a mark (an unhashable key, a bad timestamp, an
        # integer of more digits than Python converts).
        message = f"front matter is not valid YAML: {err}"
        return FrontMatter({}, (*problems, Problem(first_line, message)))
    finally:
        loader.dispose()
    problems.extend(
        Problem(first_line + line, f"duplicate key {key!r} in front matter: the last one is used")
        for key, line in loader.duplicates
    )
    problems.extend(
        Problem(
            first_line + line,
            f"a number of {digits} digits is too large to compare as a number; it is kept as text",
        )
        for line, digits in loader.huge_numbers
    )
    if data is None:
        return FrontMatter({}, tuple(problems))
    if not isinstance(data, dict):
        problems.append(
            Problem(
                first_line,
                "front matter is not a list of fields (`key: value` lines); it is ignored",
            )
        )
        return FrontMatter({}, tuple(problems))
    fields = {_storable(str(k)): _without_surrogates(v, 0) for k, v in data.items()}
    return FrontMatter(fields, tuple(problems))


def _storable(text: str) -> str:
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def _without_surrogates(value: Any, depth: int) -> Any:
    """`value` with lone surrogates made U+FFFD, as deep as anything is read (`flatten`
    and `extract` go no deeper; this also ends on an alias that contains itself)."""
    if isinstance(value, str):
        return _storable(value)
    if depth > MAX_DEPTH:
        return value
    if isinstance(value, dict):
        return {
            _storable(k) if isinstance(k, str) else k: _without_surrogates(v, depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_without_surrogates(item, depth + 1) for item in value]
    return value


# --- typed values (`values.py`) ---------------------------------------------------------


def flatten(fields: dict[str, Any]) -> dict[str, list[Value]]:
    """Front matter as typed values per field name (lower-cased; nested mappings dotted).

    Strings, numbers, booleans and dates are single values; a list of scalars is a
    "list" of strings (`tags: [a, b]`); empty values, nulls and lists of mappings are
    left out. At most `MAX_VALUES` values in all.
    """
    out: dict[str, list[Value]] = {}
    budget = [MAX_VALUES]

    def add(name: str, value: Value) -> None:
        if budget[0] <= 0:
            return
        budget[0] -= 1
        out.setdefault(name, []).append(value)

    def walk(prefix: str, data: dict[Any, Any], depth: int) -> None:
        for key, value in data.items():
            if budget[0] <= 0:
                return
            name = f"{prefix}{str(key).strip().lower()}"
            if not name or name.endswith("."):
                continue
            if isinstance(value, dict):
                if depth < MAX_DEPTH:
                    walk(name + ".", value, depth + 1)
                continue
            if isinstance(value, list | tuple | set):
                for item in list(value)[: budget[0]]:
                    scalar = scalar_value(item)
                    if scalar is not None:
                        add(name, Value("list", scalar.text))
                continue
            scalar = scalar_value(value)
            if scalar is not None:
                add(name, scalar)

    walk("", fields, 1)
    return out


MAX_VALUE_CHARS = 500


def scalar_value(value: Any) -> Value | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return Value("bool", "true" if value else "false")
    if isinstance(value, int | float):
        if value != value or value in (float("inf"), float("-inf")):  # NaN, infinities
            return Value("string", str(value))
        try:
            number = float(value)
        except OverflowError:  # an integer of 309 digits or more: not comparable
            return Value("string", str(value)[:MAX_VALUE_CHARS])
        return Value("number", _number_text(value, number), number)
    if isinstance(value, dt.datetime):
        return Value("date", value.replace(tzinfo=None).isoformat(timespec="seconds"))
    if isinstance(value, dt.date):
        return Value("date", value.isoformat())
    if isinstance(value, str):
        text = " ".join(value.split())[:MAX_VALUE_CHARS]
        if not text:
            return None
        if _looks_like_date(text):
            return Value("date", text)
        return Value("string", text)
    return None  # bytes, sets of mappings, anything exotic: not filterable


def _number_text(value: int | float, number: float) -> str:
    if isinstance(value, int):
        return str(value)
    return str(int(number)) if number.is_integer() and abs(number) < 1e15 else repr(number)


def _looks_like_date(text: str) -> bool:
    """A quoted ISO date or date-time ("2026-10-14", "2026-10-14T09:30") is a date."""
    if len(text) < 10 or text[4] != "-" or text[7] != "-":
        return False
    try:
        dt.date.fromisoformat(text[:10])
    except ValueError:
        return False
    if len(text) == 10:
        return True
    try:
        dt.datetime.fromisoformat(text)
    except ValueError:
        return False
    return True
