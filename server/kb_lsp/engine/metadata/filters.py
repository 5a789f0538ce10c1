"""The metadata filter language: one parser for every front end.

    tag:payments  status:draft  owner:"Ana López"  folder:runbooks  has:owner
    modified>2026-10-01  date<=2026-12-31  priority>=2  -tag:archived
    (tag:a OR tag:b) -status:done

Grammar (whitespace separates terms; `AND` binds tighter than `OR`, as in boolean
algebra, so `a b OR c` is `(a AND b) OR c` — parentheses say otherwise):

    filter  := or
    or      := and ("OR" and)*
    and     := unary (["AND"] unary)*          juxtaposition is AND
    unary   := ("-" | "NOT") unary | primary
    primary := "(" or ")" | term
    term    := [-]field op value | has:field
    op      := ":" | "=" | ">" | ">=" | "<" | "<="
    value   := bare (up to whitespace or a parenthesis) | "quoted, with \\" and \\\\"

Field names are case-insensitive. What a term means (string equality, a list holding the
value, a number or date compared) is decided when it is compiled against the store
(`metadata/query.py`); this module only checks what it can without the index: syntax,
that comparisons have a number or a date, that dates exist. Errors are `FilterError`s
carrying the 0-based character position of the offending text.

Typed inline in a search query (`payments tag:runbook modified>2026-10`), the query is
split by `split_query`: a word of the form `field<op>value` whose field is a built-in
one or a field some file has (so `error:` in a pasted log line stays text), `-`/`NOT`
before such a term, `OR` between two filter items, and a parenthesised group made only
of filter items are the filter; every other word is the text query.
"""

from __future__ import annotations

import calendar
import difflib
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import date, timedelta

from kb_lsp.errors import InvalidInput

# Fields every file has, computed by kb-lsp rather than read from front matter. A front
# matter key with one of these names is shadowed by the built-in (README).
BUILTIN_FIELDS = ("tag", "folder", "modified", "size", "words", "title", "has")
# `tags:` reads as naturally as `tag:`.
FIELD_ALIASES = {"tags": "tag"}

Op = str  # one of OPERATORS
OPERATORS = (">=", "<=", ":", "=", ">", "<")
COMPARISONS = (">", ">=", "<", "<=")
MAX_DEPTH = 32  # nesting of parentheses and negations
MAX_TERMS = 64

_FIELD = re.compile(r"[A-Za-z_][\w.\-]*")
_OP = re.compile(r">=|<=|[:=<>]")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)")
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*(b|k|kb|kib|m|mb|mib)?", re.IGNORECASE)
_DATE = re.compile(r"(\d{4})(?:-(\d{1,2})(?:-(\d{1,2}))?)?")
_RELATIVE = re.compile(r"-(\d{1,4})([dwmy])", re.IGNORECASE)

# An example term for a field, from the index the filter is for (`engine/examples.py`):
# `tag:runbook` where files have that tag; None where no file has the field. "" asks for
# any field's example. Without one, messages give examples only of what every index has.
ExampleOf = Callable[[str], str | None]
_EVERY_INDEX = {
    "modified": "modified>2026-10-01",
    "size": "size<10kb",
    "words": "words>500",
}


class FilterError(InvalidInput):
    """A filter that cannot be understood; `position` is the offending character. An
    `InvalidInput`: every front end answers it as bad params, with this message."""

    def __init__(self, message: str, position: int, text: str, where: str = "filter") -> None:
        self.message = message
        self.position = position
        self.text = text
        self.where = where
        super().__init__(self.describe())

    def describe(self) -> str:
        shown = self.text if len(self.text) <= 80 else self.text[:77] + "…"
        return f"{self.where}, character {self.position + 1}: {self.message} (in {shown!r})"


# --- the syntax tree ---------------------------------------------------------------------------


@dataclass(frozen=True)
class DateRange:
    """A day, month or year as the half-open interval [start, end) of days."""

    start: date
    end: date


@dataclass(frozen=True)
class Term:
    field: str  # lower-cased, aliases resolved
    op: Op
    value: str  # as typed, unquoted
    position: int  # of the term's first character
    value_position: int
    number: float | None = None  # the value read as a number, when it is one
    dates: DateRange | None = None  # the value read as a date, when it is one
    end: int = 0  # just past the term's last character (its value's closing quote)

    def __str__(self) -> str:
        return f"{self.field}{self.op}{_quote(self.value)}"


@dataclass(frozen=True)
class Has:
    field: str
    position: int

    def __str__(self) -> str:
        return f"has:{self.field}"


@dataclass(frozen=True)
class Not:
    item: Node

    def __str__(self) -> str:
        return f"-{self.item}"


@dataclass(frozen=True)
class And:
    items: tuple[Node, ...]

    def __str__(self) -> str:
        return "(" + " ".join(str(i) for i in self.items) + ")"


@dataclass(frozen=True)
class Or:
    items: tuple[Node, ...]

    def __str__(self) -> str:
        return "(" + " OR ".join(str(i) for i in self.items) + ")"


Node = Term | Has | Not | And | Or


def _quote(value: str) -> str:
    if value and not re.search(r'[\s()"\\]', value):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def fields_of(node: Node) -> set[str]:
    """Every field a filter names (for messages and for the schema's completions)."""
    if isinstance(node, Term | Has):
        return {node.field}
    if isinstance(node, Not):
        return fields_of(node.item)
    return set().union(*(fields_of(i) for i in node.items))


def _named(node: Node) -> Iterator[tuple[str, int]]:
    """Each field a filter names, with the position of its name, in order."""
    if isinstance(node, Term):
        yield node.field, node.position
    elif isinstance(node, Has):
        yield node.field, node.position + len("has:")
    elif isinstance(node, Not):
        yield from _named(node.item)
    else:
        for item in node.items:
            yield from _named(item)


def unknown_field(
    node: Node, known: Callable[[], Iterable[str]], text: str, where: str = "filter"
) -> FilterError | None:
    """The error for a field no indexed file has when it looks like a typo of one that
    some file has (`onwer:` beside `owner`), else None: a filter may name a field before
    any file has it, and then it simply keeps nothing. `known()` (the indexed files'
    fields) is only asked when the filter names a field that is not built in."""
    named = [(f, p) for f, p in _named(node) if f not in BUILTIN_FIELDS]
    if not named:
        return None
    names = {*BUILTIN_FIELDS, *(name.lower() for name in known())} - {"has"}
    for field, position in named:
        if field in names:
            continue
        near = difflib.get_close_matches(field, sorted(names), n=1)
        if near:
            return FilterError(
                f"no indexed file has the field {field!r}; did you mean {near[0]!r}? "
                "(the schema lists every field: kb schema, kb/schema)",
                position,
                text,
                where,
            )
    return None


def combine(*nodes: Node | None) -> Node | None:
    """The AND of the given filters (None for none)."""
    present = [n for n in nodes if n is not None]
    if not present:
        return None
    return present[0] if len(present) == 1 else And(tuple(present))


# --- tokens ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Token:
    kind: str  # "(" ")" "OR" "AND" "NOT" "term" "word" "quoted"
    text: str  # the source text of the token
    start: int
    end: int
    term: Term | Has | None = None
    problem: FilterError | None = None  # a term-shaped word that is not a valid term


def _tokens(text: str, where: str, today: date, examples: ExampleOf | None = None) -> list[_Token]:
    out: list[_Token] = []
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char.isspace():
            i += 1
            continue
        if char in "()":
            out.append(_Token(char, char, i, i + 1))
            i += 1
            continue
        if char == '"':
            value, end = _read_quoted(text, i, where)
            out.append(_Token("quoted", value, i, end))
            i = end
            continue
        start = i
        # A word runs to whitespace or a parenthesis, but a quote after an operator
        # (`owner:"Ana López"`) takes the quoted value, spaces and all.
        while i < n and not text[i].isspace() and text[i] not in "()":
            if text[i] == '"' and i > start and text[i - 1] in ":=<>":
                _, i = _read_quoted(text, i, where)
                break
            i += 1
        word = text[start:i]
        if word in ("OR", "||"):
            out.append(_Token("OR", word, start, i))
        elif word in ("AND", "&&"):
            out.append(_Token("AND", word, start, i))
        elif word in ("NOT", "-", "!"):
            out.append(_Token("NOT", word, start, i))
        else:
            out.append(_classify(word, start, i, text, where, today, examples))
    return out


def _read_quoted(text: str, start: int, where: str) -> tuple[str, int]:
    """The unescaped content of the quoted string opening at `start`, and its end."""
    out: list[str] = []
    i = start + 1
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            out.append(text[i + 1])
            i += 2
            continue
        if char == '"':
            return "".join(out), i + 1
        out.append(char)
        i += 1
    raise FilterError("this quote is never closed", start, text, where)


def _classify(
    word: str,
    start: int,
    end: int,
    text: str,
    where: str,
    today: date,
    examples: ExampleOf | None = None,
) -> _Token:
    negated = word.startswith("-") and len(word) > 1
    body = word[1:] if negated else word
    offset = start + (1 if negated else 0)
    field_match = _FIELD.match(body)
    op_match = _OP.match(body, field_match.end()) if field_match else None
    if field_match is None or op_match is None or body.startswith(("http:", "https:")):
        return _Token("word", word, start, end)
    field = field_match.group().lower()
    field = FIELD_ALIASES.get(field, field)
    op = op_match.group()
    raw = body[op_match.end() :]
    value_position = offset + op_match.end()
    value = raw
    if raw.startswith('"'):
        value, _ = _read_quoted(text, value_position, where)
    try:
        term = _term(field, op, value, offset, value_position, text, where, today, examples)
    except FilterError as problem:
        return _Token("word", word, start, end, problem=problem)
    if isinstance(term, Term):
        term = replace(term, end=end)
    # `-field:value` is one token: the negation of its term.
    return _Token("negterm" if negated else "term", word, start, end, term=term)


def _term(
    field: str,
    op: Op,
    value: str,
    position: int,
    value_position: int,
    text: str,
    where: str,
    today: date,
    examples: ExampleOf | None = None,
) -> Term | Has:
    def fail(message: str, at: int = value_position) -> FilterError:
        return FilterError(message, at, text, where)

    def eg(of: str) -> str:
        return _for_example(of, examples)

    if value == "":
        raise fail(f"'{field}{op}' needs a value{eg(field)}")
    if field == "has":
        if op not in (":", "="):
            raise fail(f"has: takes a field name{eg('has')}", position + 3)
        name = value.lower()
        if not _FIELD.fullmatch(name):
            raise fail(f"{value!r} is not a field name")
        return Has(FIELD_ALIASES.get(name, name), position)
    if op == "=":
        op = ":"
    number = _number(value, field)
    dates = _dates(value, today)
    if isinstance(dates, str):
        raise fail(dates)
    if op in COMPARISONS:
        if field in ("tag", "folder", "title"):
            raise fail(f"{field}: takes a value with ':'{eg(field)}", position)
        if number is None and dates is None:
            raise fail(f"'{op}' compares numbers and dates; {value!r} is neither")
        if field == "modified" and dates is None:
            raise fail(f"modified compares dates, e.g. modified>2026-10-01; {value!r} is not one")
    if field in ("size", "words") and number is None:
        raise fail(f"{field} is a number{eg(field)}; {value!r} is not one")
    if field == "modified" and dates is None:
        raise fail(f"modified takes a date, e.g. modified>2026-10-01; {value!r} is not one")
    return Term(field, op, value, position, value_position, number, dates)


def _for_example(field: str, examples: ExampleOf | None) -> str:
    """ ", e.g. TERM" for `field`: the index's own example, one every index has, or ""."""
    term = _EVERY_INDEX.get(field) or (examples(field) if examples is not None else None)
    return f", e.g. {term}" if term else ""


def _number(value: str, field: str) -> float | None:
    if field == "size":
        match = _SIZE.fullmatch(value)
        if not match:
            return None
        unit = (match.group(2) or "b").lower()
        scale = {"b": 1, "k": 1024, "kb": 1024, "kib": 1024}.get(unit, 1024 * 1024)
        return float(match.group(1)) * scale
    if _NUMBER.fullmatch(value):
        return float(value)
    return None


def _dates(value: str, today: date) -> DateRange | str | None:
    """The value as a day, month or year; a message when it looks like a date but is not
    one (2026-13-01), or is one outside the calendar Python counts in (`date:9999` ends
    in the year 10000, `modified>-9999y` starts before year 1); None when it is not a
    date at all."""
    try:
        return _date_range(value, today)
    except (ValueError, OverflowError):
        return (
            f"{value!r} is out of range: a date filter takes days from "
            f"{date.min.isoformat()} to {(date.max - timedelta(days=1)).isoformat()}"
        )


def _date_range(value: str, today: date) -> DateRange | str | None:
    lowered = value.lower()
    if lowered in ("today", "yesterday"):
        day = today - timedelta(days=lowered == "yesterday")
        return DateRange(day, day + timedelta(days=1))
    relative = _RELATIVE.fullmatch(value)
    if relative:
        count, unit = int(relative.group(1)), relative.group(2).lower()
        if unit in "dw":
            day = today - timedelta(days=count * (7 if unit == "w" else 1))
        else:
            months = count * (12 if unit == "y" else 1)
            year, month = divmod(today.year * 12 + today.month - 1 - months, 12)
            day = date(year, month + 1, min(today.day, calendar.monthrange(year, month + 1)[1]))
        return DateRange(day, day + timedelta(days=1))
    match = _DATE.fullmatch(value)
    if not match:
        return None
    year = int(match.group(1))
    if match.group(2) is None:
        if not 1000 <= year <= 9999:
            return None  # a plain number
        return DateRange(date(year, 1, 1), date(year + 1, 1, 1))
    month = int(match.group(2))
    if not 1 <= month <= 12:
        return f"{value!r} is not a date: there is no month {month}"
    if match.group(3) is None:
        end = date(year + 1, 1, 1) if month == 12 else date(year, month + 1, 1)
        return DateRange(date(year, month, 1), end)
    day_number = int(match.group(3))
    last = calendar.monthrange(year, month)[1]
    if not 1 <= day_number <= last:
        return f"{value!r} is not a date: {year}-{month:02d} has {last} days"
    day = date(year, month, day_number)
    return DateRange(day, day + timedelta(days=1))


# --- parsing -----------------------------------------------------------------------------------


class _Parser:
    def __init__(
        self, tokens: Sequence[_Token], text: str, where: str, examples: ExampleOf | None = None
    ) -> None:
        self.tokens = list(tokens)
        self.i = 0
        self.text = text
        self.where = where
        self.examples = examples
        self.depth = 0
        self.terms = 0

    def fail(self, message: str, position: int) -> FilterError:
        return FilterError(message, position, self.text, self.where)

    def peek(self) -> _Token | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def parse(self) -> Node:
        if not self.tokens:
            raise self.fail("the filter is empty", 0)
        node = self.or_()
        token = self.peek()
        if token is not None:
            raise self.fail("')' without a matching '('", token.start)
        return node

    def or_(self) -> Node:
        items = [self.and_()]
        while (token := self.peek()) is not None and token.kind == "OR":
            self.i += 1
            if self.peek() is None or self.peek().kind in (")", "OR", "AND"):  # type: ignore[union-attr]
                raise self.fail("OR needs a term after it", token.start)
            items.append(self.and_())
        return items[0] if len(items) == 1 else Or(tuple(items))

    def and_(self) -> Node:
        items = [self.unary()]
        while (token := self.peek()) is not None and token.kind not in (")", "OR"):
            if token.kind == "AND":
                self.i += 1
                if self.peek() is None or self.peek().kind in (")", "OR", "AND"):  # type: ignore[union-attr]
                    raise self.fail("AND needs a term after it", token.start)
            items.append(self.unary())
        return items[0] if len(items) == 1 else And(tuple(items))

    def unary(self) -> Node:
        token = self.peek()
        if token is None:
            raise self.fail("the filter ends too early", len(self.text))
        if token.kind == "NOT":
            self.i += 1
            if self.peek() is None:
                raise self.fail(f"{token.text!r} needs a term after it", token.start)
            return Not(self._nested(self.unary, token))
        if token.kind == "negterm":
            self.i += 1
            return Not(self._count(token))
        return self.primary()

    def primary(self) -> Node:
        token = self.peek()
        assert token is not None
        if token.kind == "(":
            self.i += 1
            if (inner := self.peek()) is not None and inner.kind == ")":
                raise self.fail("empty parentheses", token.start)
            node = self._nested(self.or_, token)
            closing = self.peek()
            if closing is None or closing.kind != ")":
                raise self.fail("this '(' is never closed", token.start)
            self.i += 1
            return node
        if token.kind == "term":
            self.i += 1
            return self._count(token)
        if token.kind == ")":
            raise self.fail("')' without a matching '('", token.start)
        if token.kind in ("OR", "AND"):
            raise self.fail(f"{token.text} needs a term before it", token.start)
        if token.problem is not None:
            raise token.problem
        if token.kind == "quoted":
            raise self.fail('a quoted value needs a field: field:"two words"', token.start)
        raise self.fail(
            f"{token.text!r} is not a filter term: use field:value"
            + _for_example("", self.examples),
            token.start,
        )

    def _nested(self, parse: Callable[[], Node], token: _Token) -> Node:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.fail(f"nested more than {MAX_DEPTH} deep", token.start)
        try:
            return parse()
        finally:
            self.depth -= 1

    def _count(self, token: _Token) -> Term | Has:
        self.terms += 1
        if self.terms > MAX_TERMS:
            raise self.fail(f"more than {MAX_TERMS} terms", token.start)
        assert token.term is not None
        return token.term


def parse_filter(
    text: str,
    *,
    today: date | None = None,
    where: str = "filter",
    examples: ExampleOf | None = None,
) -> Node:
    """The syntax tree of a filter; raises `FilterError` with the offending position (its
    message's examples from `examples`, the index's, when given)."""
    tokens = _tokens(text, where, today or date.today(), examples)
    return _Parser(tokens, text, where, examples).parse()


# --- filters typed inline in a query ------------------------------------------------------------


@dataclass(frozen=True)
class SplitQuery:
    text: str  # the words to search for
    filter: Node | None  # the filter typed among them
    words: tuple[tuple[int, int], ...] = ()  # where each word of `text` is in the query


def split_query(
    query: str,
    known: Callable[[str], bool] | Iterable[str] = (),
    *,
    today: date | None = None,
    examples: ExampleOf | None = None,
) -> SplitQuery:
    """Separate the filter typed in a query from its words (see the module docstring).

    `known` says which fields (besides the built-in ones) count as filter fields.
    Raises `FilterError` (positions in the query) for a filter term that is malformed,
    such as `modified>2026-13-01`.
    """
    is_known: Callable[[str], bool]
    if callable(known):
        is_known = known
    else:
        names = {k.lower() for k in known}
        is_known = names.__contains__
    try:
        tokens = _tokens(query, "query", today or date.today(), examples)
    except FilterError:
        return SplitQuery(query.strip(), None)  # an unclosed quote: all text

    def filter_field(token: _Token) -> bool:
        term = token.term
        if term is None:
            return False
        return term.field in BUILTIN_FIELDS or is_known(term.field)

    def is_filter_item(token: _Token) -> bool:
        if token.kind in ("term", "negterm"):
            return filter_field(token)
        return False

    def bad_filter_word(token: _Token) -> FilterError | None:
        """A malformed term whose field is a filter field (`modified>2026-13-01`)."""
        if token.problem is None:
            return None
        body = token.text.removeprefix("-")
        match = _FIELD.match(body)
        if match is None:
            return None
        field = FIELD_ALIASES.get(match.group().lower(), match.group().lower())
        if field in BUILTIN_FIELDS or is_known(field):
            return token.problem
        return None

    # Mark, for each token, whether it belongs to the filter.
    chosen = [False] * len(tokens)
    i = 0
    while i < len(tokens):
        token = tokens[i]
        problem = bad_filter_word(token)
        if problem is not None:
            raise problem
        if is_filter_item(token):
            chosen[i] = True
        elif token.kind == "(":
            close = _matching(tokens, i)
            if close is None and any(is_filter_item(t) for t in tokens[i + 1 :]):
                # `payments (tag:x`: a group of the filter left open, not a word "(".
                raise FilterError("'(' without a matching ')'", token.start, query, "query")
            inner = tokens[i + 1 : close] if close is not None else []
            if close is not None and inner and _all_filter(inner, is_filter_item):
                for j in range(i, close + 1):
                    chosen[j] = True
                i = close + 1
                continue
        i += 1
    # NOT before a filter item, OR/AND between two, belong to the filter.
    for i, token in enumerate(tokens):
        if token.kind == "NOT" and i + 1 < len(tokens) and chosen[i + 1]:
            chosen[i] = True
        if token.kind in ("OR", "AND") and 0 < i < len(tokens) - 1:
            after = i + 1
            while after < len(tokens) and tokens[after].kind == "NOT":
                after += 1
            if chosen[i - 1] and after < len(tokens) and chosen[after]:
                chosen[i] = True
                for j in range(i + 1, after):
                    chosen[j] = True
    picked = [t for t, keep in zip(tokens, chosen, strict=True) if keep]
    words = [t for t, keep in zip(tokens, chosen, strict=True) if not keep]
    text = " ".join(query[t.start : t.end] for t in words)
    node = _Parser(picked, query, "query", examples).parse() if picked else None
    return SplitQuery(text, node, tuple((t.start, t.end) for t in words))


def _matching(tokens: Sequence[_Token], open_index: int) -> int | None:
    depth = 0
    for j in range(open_index, len(tokens)):
        if tokens[j].kind == "(":
            depth += 1
        elif tokens[j].kind == ")":
            depth -= 1
            if depth == 0:
                return j
    return None


def _all_filter(tokens: Sequence[_Token], is_item: Callable[[_Token], bool]) -> bool:
    return all(t.kind in ("(", ")", "OR", "AND", "NOT") or is_item(t) for t in tokens) and any(
        is_item(t) for t in tokens
    )
