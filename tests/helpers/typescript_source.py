"""TypeScript sources measured without a TypeScript parser, for the house size rule.

How functions are recognised (a plain brace-matching scan, not a parse): first the
insides of comments, string literals, template text and regex literals are blanked,
so only the code's own braces remain. Then a line starts a function when it holds
`function` (a declaration or an expression), ends in `=> {` (an arrow whose body is a
block), or opens with a name and `(` — modifiers allowed, control keywords excluded — and
ends its signature in `) {` or `): T {` (a method of a class or an object literal). The
function's body is the `{` ending that line (or, for a signature over several lines, the
first later line ending in `{`); it runs to the line of its matching `}`. An arrow with
an expression body (`=> x`) is not counted: it is one expression. Checked against the
TypeScript compiler's own list of function bodies on `vscode-extension/src`: the same
functions over 30 lines.
"""

from __future__ import annotations

import re
from pathlib import Path

GENERATED = re.compile(r"^ \* GENERATED from ", re.MULTILINE)


def is_generated(text: str) -> bool:
    """Written by `python -m kb_lsp.codegen` (its header says so in the first comment)."""
    return GENERATED.search(text[:2000]) is not None


def hand_written(root: Path) -> list[Path]:
    """Every `.ts` under `root` but the generated ones and declaration files."""
    return [
        p
        for p in sorted(root.rglob("*.ts"))
        if not p.name.endswith(".d.ts") and not is_generated(p.read_text(encoding="utf-8"))
    ]


_REGEX_BEFORE = set("(,=:[!&|?{};+-*%<>~^")
_AFTER_WORD = re.compile(r"\b(?:return|typeof|case|of|in|delete|void|throw)$")


def _code_only(text: str) -> str:
    """`text` with the insides of comments, strings, template text and regex literals
    blanked (newlines kept), so only the code's own braces and parentheses remain."""
    out = list(text)
    stack: list[int] = []  # brace depth at each `${` entered from a template
    depth = 0
    i, n = 0, len(text)

    def blank(a: int, b: int) -> None:
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    def template(start: int) -> int:
        """Blank template text from `start` (after a backtick or `}`) to its end or `${`."""
        j = start
        while j < n:
            if text[j] == "\\":
                j += 2
            elif text[j] == "`":
                blank(start, j)
                return j + 1
            elif text.startswith("${", j):
                blank(start, j)
                stack.append(depth)
                return j + 2
            else:
                j += 1
        blank(start, n)
        return n

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            blank(i, j)
            i = j
        elif c in "'\"":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            blank(i + 1, j)
            i = j + 1
        elif c == "`":
            i = template(i + 1)
        elif c == "/" and _regex_starts(text, i):
            j, in_class = i + 1, False
            while j < n and text[j] != "\n":
                if text[j] == "\\":
                    j += 2
                    continue
                if text[j] == "[":
                    in_class = True
                elif text[j] == "]":
                    in_class = False
                elif text[j] == "/" and not in_class:
                    break
                j += 1
            blank(i + 1, j)
            i = j + 1
        elif c == "{":
            depth += 1
            i += 1
        elif c == "}":
            if stack and stack[-1] == depth:
                stack.pop()
                i = template(i + 1)
            else:
                depth -= 1
                i += 1
        else:
            i += 1
    return "".join(out)


def _regex_starts(text: str, i: int) -> bool:
    """Whether the `/` at `i` opens a regex literal (not a division): by what precedes it."""
    before = text[:i].rstrip()
    if not before or before[-1] in _REGEX_BEFORE:
        return True
    return _AFTER_WORD.search(before) is not None


# A line that starts a function: `function` (declaration or expression), an arrow whose body
# is a block (`=> {` ending the line), or a method (`name(…) {` / `name(…): T {` in a class
# or an object literal, modifiers allowed; control keywords are not names).
_FUNCTION = re.compile(r"\bfunction\b")
_ARROW_BLOCK = re.compile(r"=>\s*\{\s*$")
_METHOD = re.compile(
    r"^\s*(?:(?:public|private|protected|static|async|override|get|set|readonly)\s+)*\*?"
    r"(?!(?:if|for|while|switch|catch|with|return|await|new|typeof|function)\b)[\w$#]+\s*(?:<[^>]*>)?\("
)
_NAME = re.compile(
    r"function\s*\*?\s*([\w$]+)|([\w$#]+)\s*(?:<[^>]*>)?\("
    r"|(?:const|let|var)\s+([\w$]+)|([\w$]+)\s*[:=]"
)


def functions(text: str) -> list[tuple[int, int, str]]:
    """(first line, lines, name) of each function in a TypeScript source: from the line
    that starts it to the line of the brace that closes its body."""
    lines = _code_only(text).split("\n")
    found = []
    for start, line in enumerate(lines):
        if not (_FUNCTION.search(line) or _ARROW_BLOCK.search(line) or _METHOD.match(line)):
            continue
        body = _body_line(lines, start)
        if body is None:
            continue
        end = _closing_line(lines, body)
        name = _NAME.search(line)
        label = next((g for g in name.groups() if g), "?") if name else "?"
        found.append((start + 1, end - start + 1, label))
    return found


def _body_line(lines: list[str], start: int) -> int | None:
    """The line whose last character opens the function's body: the start line's or, for a
    signature over several lines, the first later one ending in `{` before a `;`."""
    for k in range(start, min(start + 12, len(lines))):
        stripped = lines[k].rstrip()
        if stripped.endswith("{") and (k > start or _signature_ends(stripped)):
            return k
        if k > start and (stripped.endswith(";") or stripped.endswith("}")):
            return None
        if k == start and stripped.endswith(";"):
            return None
    return None


def _signature_ends(line: str) -> bool:
    """A one-line signature: `) {`, `): T {`, `=> {` or `function … {` (not an object literal
    passed as an argument)."""
    return bool(re.search(r"(\)|=>|\)\s*:.*)\s*\{$", line))


def _closing_line(lines: list[str], body: int) -> int:
    depth = 0
    for k in range(body, len(lines)):
        for ch in lines[k] if k > body else lines[k][lines[k].rstrip().rfind("{") :]:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    return k
    return len(lines) - 1
