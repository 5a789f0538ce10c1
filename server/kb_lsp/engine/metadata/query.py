"""A parsed filter (`filters.Node`) as SQL over the store's `files` and `file_fields`.

The SQL text is made only of fixed fragments; every field name and value the user
typed is a bound parameter, so nothing in a filter can change the statement.

Meaning of a term, by field:

* `tag:x` — the file has tag `x` or a tag nested under it (`x/y`), case-insensitive;
* `folder:a/b` — the file is in folder `a/b` or below it; `folder:/` — at the top;
* `title:x` — the title contains `x`;
* `modified`, `size`, `words` — the file's last change (local time), bytes, words;
* `has:f` — the file has a non-empty value for `f`;
* any other field, `f:v` — a value of `f` equals `v` (case-insensitive; for a list, one
  of its elements; a date value matches a day, month or year: `date:2026-10`); `*` in
  `v` matches any run of characters (`owner:ana*`);
* comparisons `> >= < <=` — numbers numerically, dates by day: `modified>2026-10-01` is
  "from October 2 on", `date<=2026-10` is "up to the end of October".
"""

from __future__ import annotations

import sqlite3
from datetime import date, datetime
from typing import Any

from kb_lsp.engine.metadata.filters import And, DateRange, Has, Node, Not, Or, Term
from kb_lsp.engine.metadata.inline import normalise_tag


def _like(value: str) -> str:
    """A LIKE pattern matching `value` literally, except `*` which matches anything."""
    escaped = value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped.replace("*", "%")


# What SQLite's INTEGER holds: an mtime in nanoseconds runs out in the year 2262.
_INT64 = (-(2**63), 2**63 - 1)


def _local_ns(day: date) -> int:
    """Local midnight at the start of `day`, in nanoseconds since the epoch, within what
    SQLite's INTEGER holds (any date before 1678 or after 2262 is at that end)."""
    try:
        seconds = int(datetime(day.year, day.month, day.day).timestamp())
    except (OverflowError, ValueError, OSError):  # local time is undefined near year 1
        seconds = (day - date(1970, 1, 1)).days * 86_400
    return min(max(seconds * 1_000_000_000, _INT64[0]), _INT64[1])


def _interval(op: str, column: str, low: Any, high: Any) -> tuple[str, list[Any]]:
    """`column op value`, for a value that is the interval [low, high)."""
    if op == ">":
        return f"{column} >= ?", [high]
    if op == ">=":
        return f"{column} >= ?", [low]
    if op == "<":
        return f"{column} < ?", [low]
    if op == "<=":
        return f"{column} < ?", [high]
    return f"({column} >= ? AND {column} < ?)", [low, high]


_NUMBER_OPS = {":": "=", ">": ">", ">=": ">=", "<": "<", "<=": "<="}


class _Compiler:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix  # the root's display prefix ("" with one root)

    def node(self, node: Node) -> tuple[str, list[Any]]:
        if isinstance(node, And | Or):
            parts = [self.node(item) for item in node.items]
            joiner = " AND " if isinstance(node, And) else " OR "
            return (
                "(" + joiner.join(sql for sql, _ in parts) + ")",
                [p for _, params in parts for p in params],
            )
        if isinstance(node, Not):
            sql, params = self.node(node.item)
            return f"NOT {sql}", params
        if isinstance(node, Has):
            return self.has(node.field)
        return self.term(node)

    @staticmethod
    def exists(condition: str, params: list[Any], field: str) -> tuple[str, list[Any]]:
        return (
            "EXISTS (SELECT 1 FROM file_fields m WHERE m.path = f.path AND m.field = ?"
            + (f" AND {condition}" if condition else "")
            + ")",
            [field, *params],
        )

    def has(self, field: str) -> tuple[str, list[Any]]:
        if field in ("modified", "size", "title", "words"):
            return "(1 = 1)", []
        if field == "folder":
            return "(instr(f.path, '/') > 0)", []
        return self.exists("", [], field)

    def term(self, term: Term) -> tuple[str, list[Any]]:
        field, op = term.field, term.op
        value = term.value
        if field == "tag":
            tag = normalise_tag(value)
            if "*" in tag:
                return self.exists("m.key LIKE ? ESCAPE '\\'", [_like(tag)], "tag")
            return self.exists(
                "(m.key = ? OR m.key LIKE ? ESCAPE '\\')", [tag, _like(tag) + "/%"], "tag"
            )
        if field == "folder":
            return self.folder(value)
        if field == "title":
            return "(lower(f.title) LIKE ? ESCAPE '\\')", ["%" + _like(value.lower()) + "%"]
        if field == "modified":
            assert term.dates is not None  # checked by the parser
            low, high = _local_ns(term.dates.start), _local_ns(term.dates.end)
            sql, params = _interval(op, "f.mtime_ns", low, high)
            return f"({sql})", params
        if field == "size":
            return f"(f.size {_NUMBER_OPS[op]} ?)", [term.number]
        return self.exists(*self.value_condition(term), field)

    def folder(self, value: str) -> tuple[str, list[Any]]:
        folder = value.strip()
        if folder in ("/", ""):
            return "(instr(f.path, '/') = 0)", []
        folder = folder.strip("/")
        if self.prefix:
            root = self.prefix.rstrip("/")
            if folder.lower() == root.lower():
                return "(1 = 1)", []
            if not folder.lower().startswith(root.lower() + "/"):
                return "(0 = 1)", []
            folder = folder[len(root) + 1 :]
        return "(lower(f.path) LIKE ? ESCAPE '\\')", [_like(folder.lower()) + "/%"]

    @staticmethod
    def value_condition(term: Term) -> tuple[str, list[Any]]:
        """The condition on one `file_fields` row `m` for a generic field."""
        options: list[str] = []
        params: list[Any] = []
        if term.op == ":":
            key = term.value.lower()
            if "*" in key:
                options.append("m.key LIKE ? ESCAPE '\\'")
                params.append(_like(key))
            else:
                options.append("m.key = ?")
                params.append(key)
        if term.number is not None:
            options.append(f"(m.kind = 'number' AND m.number {_NUMBER_OPS[term.op]} ?)")
            params.append(term.number)
        if term.dates is not None:
            sql, values = _date_text(term.op, term.dates)
            options.append(f"(m.kind = 'date' AND {sql})")
            params.extend(values)
        if not options:
            return "(0 = 1)", []
        return "(" + " OR ".join(options) + ")", params


def _date_text(op: str, dates: DateRange) -> tuple[str, list[Any]]:
    # ISO text orders as the dates do; a date-time value sorts within its day.
    return _interval(op, "m.value", dates.start.isoformat(), dates.end.isoformat())


def compile_filter(node: Node, prefix: str = "") -> tuple[str, list[Any]]:
    """A WHERE condition over `files f` and its parameters."""
    return _Compiler(prefix).node(node)


def matching_paths(db: sqlite3.Connection, node: Node, prefix: str = "") -> set[str]:
    """The paths (relative to the store's root) of the files the filter keeps."""
    sql, params = compile_filter(node, prefix)
    return {str(row[0]) for row in db.execute(f"SELECT f.path FROM files f WHERE {sql}", params)}
