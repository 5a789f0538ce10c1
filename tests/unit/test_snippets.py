"""Snippets read as plain text: no markup, no directives, whole sentences, honest marks."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from kb_lsp.engine.markdown.rendered import rendered_text
from kb_lsp.engine.search import make_snippet, query_terms, snippet_marks
from kb_lsp.engine.snippets import Block, _plain_inline, inline_text, readable_blocks

REPO = Path(__file__).resolve().parents[2]


def test_inline_markup_becomes_its_text() -> None:
    source = (
        'Use an <abbr title="Object-Relational Mapper">ORM</abbr> with **care**, see '
        "[the guide](../guide.md) and ![a diagram](d.png); `query_params` stays, "
        "snake_case_words stay, &amp; entities decode. <!-- a comment -->"
    )
    assert inline_text(source) == (
        "Use an ORM with care, see the guide and a diagram; query_params stays, "
        "snake_case_words stay, & entities decode."
    )


def test_myst_roles_wiki_links_and_attribute_lists() -> None:
    assert inline_text("See {ref}`the setup <setup>` and [[runbooks/close|the close]].") == (
        "See the setup <setup> and the close."
    )
    assert inline_text("Install it { #install }") == "Install it"


@pytest.mark.parametrize(
    "line",
    [
        "Plain words, numbers 1.5 and punctuation: #tags, a-b, {{placeholders}}, x > y!",
        "Run `scrot --select` then `ls`.",
        "a` b `c and `` a ` b `` and ` ` and `  two  `",
        "`unmatched and ``also`",
        "code `x < y and *not emphasis*` here",
        "*emphasis*",
        "snake_case",
        "a <b>tag</b>",
        "<https://example.com>",
        "> More information: <https://example.com/a_b?x=1#y>.",
        "<https://example.com/%41> <https://xn--bcher-kva.example/> <mailto:a@b.c>",
        "&amp;",
        "an \\*escape",
        "[link](x.md)",
        "![image](y.png)",
        "before `code` after <https://example.com/`x`>",
        "`code` then [a `link`](z.md)",
    ],
)
def test_lines_without_markup_skip_the_parser_with_the_same_text(line: str) -> None:
    # `_plain_inline` answers for lines whose only markup is code spans and web
    # autolinks, and gives up (None) on any other markup: where it answers, it must
    # equal the parser's text.
    plain = _plain_inline(line)
    assert plain is None or plain == rendered_text(line)
    if not any(mark in line for mark in "<*_&\\["):
        assert plain is not None


def test_the_parser_shortcut_equals_the_parser_on_real_and_random_lines() -> None:
    lines = [
        line
        for path in [REPO / "README.md", *sorted((REPO / "bench" / "data").rglob("*.md"))]
        for line in path.read_text(encoding="utf-8").splitlines()
    ]
    rng = random.Random(15)
    alphabet = "ab `` ` \t!]{}#-:<*_&[\\\u00a0.\r>%"
    lines += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 16))) for _ in range(5000)]
    pieces = ["<https://", "<http://", "<HTTP://", "x.org", "/a", "%41", "xn--b", "@", "[", "]"]
    pieces += ["`", "``", " ", ">", "<", "*", "&amp;", "\\", "(", ")", ".", "ä", "mailto:", "a"]
    lines += ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 10))) for _ in range(5000)]
    answered = 0
    for line in lines:
        plain = _plain_inline(line)
        if plain is not None:
            answered += 1
            assert plain == rendered_text(line), line
    assert answered > len(lines) // 4  # the shortcut is taken, not only given up


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        # pymdown blocks: the marker lines go, a title after `|` stays.
        ("/// tip | Good to know\n\nUse the CLI.\n\n///", ["Good to know", "Use the CLI."]),
        ("/// warning\n\nCareful here.\n\n///", ["Careful here."]),
        # mkdocs admonitions.
        ('!!! note "Heads up"\n    Indented body.', ["Heads up", "Indented body."]),
        # mkdocstrings: the target stays, its indented options go.
        (
            "::: fastapi.WebSocket\n    options:\n        members:\n            - scope\n\nNext.",
            ["fastapi.WebSocket", "Next."],
        ),
        # MyST colon fences and directive options.
        (":::{note} Title here\n:class: tip\nBody text.\n:::", ["Title here", "Body text."]),
        # MyST fenced directives are prose, other fences are code (one block a line).
        ("```{note}\nProse *inside*.\n```", ["Prose inside."]),
        ("```python\nx = 1\ny = 2\n```", ["x = 1", "y = 2"]),
        # HTML-only lines vanish, tables read as rows.
        ('<div class="termy">\n\n</div>\n\nText.', ["Text."]),
        ("| a | b |\n|---|---|\n| 1 | **2** |", ["a · b", "1 · 2"]),
        # Headings are shown apart from the snippet.
        ("# Title\n\n## Section\n\nBody.", ["Body."]),
        # A hard-wrapped paragraph is one block; list items are blocks of their own.
        (
            "First line\nof one paragraph.\n\n- item one\n- item two",
            [
                "First line of one paragraph.",
                "item one",
                "item two",
            ],
        ),
    ],
)
def test_readable_blocks(markdown: str, expected: list[str]) -> None:
    assert [block.text for block in readable_blocks(markdown)] == expected


def test_a_chunk_that_starts_inside_a_code_block() -> None:
    # Chunks are cut between blocks, so one may begin with the closing fence of a block.
    text = "print('end of code')\n```\n\nThen `AsyncClient` runs [the app](x.md).\n"
    blocks = readable_blocks(text)
    assert blocks == [
        Block("print('end of code')", code=True),
        Block("Then AsyncClient runs the app."),
    ]


def test_snippet_starts_at_the_sentence_with_the_query() -> None:
    text = (
        "Intro text that wraps\nacross lines. The SPEI cut-off is 14:30\nin Mexico City. "
        "Later text.\n"
    )
    snippet = make_snippet(text, query_terms("SPEI cut-off"), None)
    assert snippet.startswith("The SPEI cut-off is 14:30 in Mexico City.")


def test_snippet_prefers_distinctive_words_and_cuts_at_a_word() -> None:
    text = "Add it to the app. Configure CORS with the middleware. " + "word " * 80
    terms = query_terms("how do I add CORS")
    snippet = make_snippet(text, terms, None, distinctive=["cor"])
    assert snippet.startswith("Configure CORS")
    assert snippet.endswith("…") and len(snippet) <= 221
    assert not snippet[:-1].endswith(" ")


def test_snippet_has_no_markup_on_a_real_docs_page() -> None:
    text = (
        "# WebSockets\n\nWhen defining WebSockets, you declare a parameter of type `WebSocket`.\n\n"
        "/// tip\n\nUse an `HTTPConnection` for both.\n\n///\n\n"
        "::: fastapi.WebSocket\n    options:\n        members:\n            - scope\n"
    )
    snippet = make_snippet(text, query_terms("websocket parameter"), None)
    assert snippet.startswith("When defining WebSockets")
    for markup in ("`", "///", ":::", "options:", "#", "<"):
        assert markup not in snippet


def test_list_items_and_rows_are_visibly_separated() -> None:
    snippet = make_snippet("- first item\n- second item", ["item"], None)
    assert snippet == "first item — second item"


def test_marks_are_words_of_the_snippet_without_stopwords() -> None:
    snippet = "How to add Payments: every payment is checked in the payments service."
    terms = query_terms("how do I add payments in the service")
    assert "how" not in terms and "in" not in terms
    assert snippet_marks(snippet, ["payment"]) == ["Payments", "payment", "payments"]
    assert snippet_marks(snippet, []) == []
