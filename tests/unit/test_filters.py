"""The metadata filter language: parsing, errors with positions, splitting a query, and
the SQL it compiles to (values always bound, never spliced)."""

from __future__ import annotations

import sqlite3
from datetime import date

import pytest

from kb_lsp.engine.metadata.filters import (
    And,
    DateRange,
    FilterError,
    Has,
    Not,
    Or,
    Term,
    parse_filter,
    split_query,
)
from kb_lsp.engine.metadata.query import compile_filter, matching_paths

TODAY = date(2026, 11, 20)


def parse(text: str) -> str:
    return str(parse_filter(text, today=TODAY))


def error(text: str) -> FilterError:
    with pytest.raises(FilterError) as caught:
        parse_filter(text, today=TODAY)
    return caught.value


# --- parsing -------------------------------------------------------------------------------------


def test_every_operator() -> None:
    node = parse_filter("a:1 b=2 c>3 d>=4 e<5 f<=6", today=TODAY)
    assert isinstance(node, And)
    assert [(t.field, t.op, t.value) for t in node.items if isinstance(t, Term)] == [
        ("a", ":", "1"),
        ("b", ":", "2"),  # `=` is `:`
        ("c", ">", "3"),
        ("d", ">=", "4"),
        ("e", "<", "5"),
        ("f", "<=", "6"),
    ]
    assert all(isinstance(t, Term) and t.number is not None for t in node.items)


def test_juxtaposition_is_and_and_binds_tighter_than_or() -> None:
    assert parse("tag:a tag:b OR tag:c") == "((tag:a tag:b) OR tag:c)"
    assert parse("tag:a (tag:b OR tag:c)") == "(tag:a (tag:b OR tag:c))"
    assert parse("tag:a AND tag:b") == "(tag:a tag:b)"


def test_negation_of_terms_and_groups() -> None:
    assert parse("-tag:archived") == "-tag:archived"
    assert parse("status:draft -tag:archived") == "(status:draft -tag:archived)"
    assert parse("-(tag:a OR tag:b)") == "-(tag:a OR tag:b)"
    assert parse("NOT tag:a") == "-tag:a"
    assert parse("- has:owner") == "-has:owner"


def test_quoting_keeps_spaces_and_escapes() -> None:
    node = parse_filter('owner:"Ana López" title:"say \\"hi\\"" x:"a\\\\b"', today=TODAY)
    assert isinstance(node, And)
    values = [t.value for t in node.items if isinstance(t, Term)]
    assert values == ["Ana López", 'say "hi"', "a\\b"]
    assert str(node.items[0]) == 'owner:"Ana López"'


def test_field_names_are_case_insensitive_and_tags_is_tag() -> None:
    node = parse_filter("Status:Draft TAGS:x", today=TODAY)
    assert isinstance(node, And)
    assert [(t.field, t.value) for t in node.items if isinstance(t, Term)] == [
        ("status", "Draft"),
        ("tag", "x"),
    ]


def test_has() -> None:
    assert parse_filter("has:Owner", today=TODAY) == Has("owner", 0)


def test_dates_exact_month_year_and_relative() -> None:
    def dates(text: str) -> DateRange:
        node = parse_filter(text, today=TODAY)
        assert isinstance(node, Term) and node.dates is not None
        return node.dates

    assert dates("modified>2026-10-01") == DateRange(date(2026, 10, 1), date(2026, 10, 2))
    assert dates("date<=2026-12") == DateRange(date(2026, 12, 1), date(2027, 1, 1))
    assert dates("date:2026") == DateRange(date(2026, 1, 1), date(2027, 1, 1))
    assert dates("modified>=today") == DateRange(date(2026, 11, 20), date(2026, 11, 21))
    assert dates("modified:yesterday") == DateRange(date(2026, 11, 19), date(2026, 11, 20))
    assert dates("modified>=-7d").start == date(2026, 11, 13)
    assert dates("modified>=-2w").start == date(2026, 11, 6)
    assert dates("modified>=-1m").start == date(2026, 10, 20)
    assert dates("modified>=-1y").start == date(2025, 11, 20)


def test_size_units() -> None:
    node = parse_filter("size<10kb", today=TODAY)
    assert isinstance(node, Term) and node.number == 10 * 1024


@pytest.mark.parametrize(
    ("text", "position", "words"),
    [
        ("tag:a )", 6, "without a matching"),
        ("(tag:a", 0, "never closed"),
        ("tag:a OR", 6, "needs a term after"),
        ("OR tag:a", 0, "needs a term before"),
        ("tag:", 4, "needs a value"),
        ('owner:"Ana', 6, "never closed"),
        ("modified>2026-13-01", 9, "no month 13"),
        ("date:2026-02-30", 5, "has 28 days"),
        ("status>draft", 7, "compares numbers and dates"),
        ("modified>soon", 9, "date"),
        ("tag>3", 0, "takes a value with ':'"),
        ("payments", 0, "not a filter term"),
        ('"quoted"', 0, "needs a field"),
        ("tag:a ()", 6, "empty parentheses"),
        ("", 0, "empty"),
        ("words>many", 6, "number"),
        ("has>x", 3, "has: takes a field name"),
    ],
)
def test_errors_point_at_the_offending_character(text: str, position: int, words: str) -> None:
    err = error(text)
    assert err.position == position, err.describe()
    assert words in err.message
    assert f"character {position + 1}" in str(err)


def test_nesting_and_size_are_bounded() -> None:
    assert "nested" in error("(" * 40 + "tag:a" + ")" * 40).message
    assert "terms" in error(" ".join(f"tag:t{i}" for i in range(70))).message


# --- a filter typed in the query -------------------------------------------------------------


def test_split_query_takes_filter_terms_out_of_the_words() -> None:
    split = split_query("payments tag:runbook modified>2026-10 wire", today=TODAY)
    assert split.text == "payments wire"
    assert str(split.filter) == "(tag:runbook modified>2026-10)"


def test_split_query_needs_a_known_field() -> None:
    # `error:` in a pasted message, a URL, a time of day: words, not filters.
    split = split_query("error:timeout https://x.org/a 10:30", today=TODAY)
    assert split.filter is None
    assert split.text == "error:timeout https://x.org/a 10:30"
    split = split_query("payments owner:ana", known={"owner"}, today=TODAY)
    assert split.text == "payments"
    assert str(split.filter) == "owner:ana"


def test_split_query_or_groups_and_negation() -> None:
    split = split_query(
        "wire (tag:a OR tag:b) -status:done NOT tag:x cats OR dogs",
        known={"status"},
        today=TODAY,
    )
    assert split.text == "wire cats OR dogs"
    assert str(split.filter) == "((tag:a OR tag:b) -status:done -tag:x)"
    split = split_query("tag:a OR tag:b mexico", today=TODAY)
    assert split.text == "mexico"
    assert str(split.filter) == "(tag:a OR tag:b)"
    # A group holding words is not a filter group; the filter term in it still is.
    split = split_query("(see tag:a)", today=TODAY)
    assert split.text == "( see )"
    assert str(split.filter) == "tag:a"


def test_split_query_quoted_value_and_phrase() -> None:
    split = split_query('"wire cut-off" owner:"Ana López"', known={"owner"}, today=TODAY)
    assert split.text == '"wire cut-off"'
    assert isinstance(split.filter, Term) and split.filter.value == "Ana López"


def test_split_query_reports_a_malformed_filter_term_in_the_query() -> None:
    with pytest.raises(FilterError) as caught:
        split_query("payments modified>2026-13", today=TODAY)
    assert caught.value.where == "query"
    assert caught.value.position == len("payments modified>")


# --- SQL: values are parameters ------------------------------------------------------------------


def _db() -> sqlite3.Connection:
    from kb_lsp.engine.metadata.tables import DDL

    db = sqlite3.connect(":memory:")
    db.executescript(
        "CREATE TABLE files (path TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER, "
        "title TEXT);" + DDL
    )
    return db


def _add(db: sqlite3.Connection, path: str, mtime: date, **fields: object) -> None:
    from datetime import datetime

    ns = int(datetime(mtime.year, mtime.month, mtime.day, 12).timestamp()) * 1_000_000_000
    db.execute("INSERT INTO files VALUES (?, ?, ?, ?)", (path, 100, ns, path))
    for name, value in fields.items():
        values = value if isinstance(value, list) else [value]
        for item in values:
            kind = "list" if isinstance(value, list) else "string"
            number = None
            if isinstance(item, int | float):
                kind, number = "number", float(item)
            db.execute(
                "INSERT INTO file_fields(path, field, kind, value, key, number) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (path, name, kind, str(item), str(item).lower(), number),
            )


def _corpus() -> sqlite3.Connection:
    db = _db()
    _add(db, "a.md", date(2026, 9, 1), tag=["payments", "area/treasury"], status="draft")
    _add(db, "runbooks/b.md", date(2026, 10, 1), tag=["payments"], owner="Ana López")
    _add(db, "runbooks/deep/c.md", date(2026, 10, 2), tag=["archived"], priority=3)
    _add(db, "d.md", date(2026, 11, 5), status="Done", priority=1)
    return db


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("tag:payments", {"a.md", "runbooks/b.md"}),
        ("tag:#Payments", {"a.md", "runbooks/b.md"}),
        ("tag:area", {"a.md"}),  # nested tags count for their parent
        ("tag:area/treasury", {"a.md"}),
        ("tag:pay*", {"a.md", "runbooks/b.md"}),
        ("-tag:archived", {"a.md", "runbooks/b.md", "d.md"}),
        ("folder:runbooks", {"runbooks/b.md", "runbooks/deep/c.md"}),
        ("folder:runbooks/deep", {"runbooks/deep/c.md"}),
        ("folder:/", {"a.md", "d.md"}),
        ('owner:"ana lópez"', {"runbooks/b.md"}),
        ("owner:ana*", {"runbooks/b.md"}),
        ("status:done", {"d.md"}),
        ("has:owner", {"runbooks/b.md"}),
        ("-has:status", {"runbooks/b.md", "runbooks/deep/c.md"}),
        ("priority>=2", {"runbooks/deep/c.md"}),
        ("priority<2", {"d.md"}),
        ("priority:1", {"d.md"}),
        ("modified>2026-10-01", {"runbooks/deep/c.md", "d.md"}),
        ("modified>=2026-10-01", {"runbooks/b.md", "runbooks/deep/c.md", "d.md"}),
        ("modified<2026-10", {"a.md"}),
        ("modified<=2026-10", {"a.md", "runbooks/b.md", "runbooks/deep/c.md"}),
        ("modified:2026-10", {"runbooks/b.md", "runbooks/deep/c.md"}),
        ("title:deep", {"runbooks/deep/c.md"}),
        ("tag:payments OR status:done", {"a.md", "runbooks/b.md", "d.md"}),
        ("tag:payments -status:draft", {"runbooks/b.md"}),
        ("(tag:archived OR has:owner) folder:runbooks", {"runbooks/b.md", "runbooks/deep/c.md"}),
        ("size>=100 size<101", {"a.md", "runbooks/b.md", "runbooks/deep/c.md", "d.md"}),
    ],
)
def test_filters_keep_exactly_the_expected_files(text: str, expected: set[str]) -> None:
    assert matching_paths(_corpus(), parse_filter(text, today=TODAY)) == expected


def test_values_never_reach_the_sql_text() -> None:
    hostile = [
        'status:"x\' OR 1=1 --"',
        'owner:"); DROP TABLE files; --"',
        "tag:%",
        "tag:_",
        'folder:"a%/_"',
        'title:"\\\\"',
        '"we\'ird.field":x',
    ]
    db = _corpus()
    for text in hostile:
        try:
            node = parse_filter(text, today=TODAY)
        except FilterError:
            continue
        sql, params = compile_filter(node)
        for fragment in ("OR 1=1", "DROP", "we'ird"):
            assert fragment not in sql
        assert params, text
        assert matching_paths(db, node) == set(), text
    # The table survived and `%`/`_` are literal characters, not wildcards.
    assert db.execute("SELECT count(*) FROM files").fetchone()[0] == 4


def test_multi_root_folder_uses_the_roots_prefix() -> None:
    db = _corpus()
    node = parse_filter("folder:wiki/runbooks", today=TODAY)
    assert matching_paths(db, node, "wiki/") == {"runbooks/b.md", "runbooks/deep/c.md"}
    assert matching_paths(db, node, "other/") == set()
    assert len(matching_paths(db, parse_filter("folder:wiki"), "wiki/")) == 4


def test_or_and_not_structure() -> None:
    node = parse_filter("-(a:1 OR b:2) c:3", today=TODAY)
    assert isinstance(node, And)
    assert isinstance(node.items[0], Not) and isinstance(node.items[0].item, Or)
