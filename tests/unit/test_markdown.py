"""markdown.py: chunk boundaries, heading paths and line ranges on tricky Markdown.

Every test checks the central promise through `check`: a chunk's text is exactly the
original file's lines `start_line..end_line`, so an editor can show and select it, or a
piece of one line too long for a chunk; no chunk is longer than the chunk size.
"""

from __future__ import annotations

import itertools
import random
import re

import pytest

from kb_lsp.engine.markdown.document import Chunk, ParsedDocument, parse_markdown


def file_lines(source: str) -> list[str]:
    """Lines as an editor counts them (LF, CRLF and CR all end a line)."""
    return re.split(r"\r\n|\r|\n", source.removeprefix("\ufeff"))


def check(source: str, doc: ParsedDocument, chunk_size: int = 800) -> list[str]:
    lines = file_lines(source)
    assert [c.index for c in doc.chunks] == list(range(len(doc.chunks)))
    piece_at = (-1, 0)  # (line, offset) of the last piece of an overlong line
    for chunk in doc.chunks:
        assert 0 <= chunk.start_line <= chunk.end_line < len(lines)
        assert len(chunk.text) <= chunk_size
        line = lines[chunk.start_line]
        if chunk.start_line == chunk.end_line and len(line) > chunk_size:
            # A piece of a line too long for one chunk, after the previous piece.
            start = piece_at[1] if piece_at[0] == chunk.start_line else 0
            found = line.find(chunk.text, start, start + 2 * chunk_size + len(chunk.text))
            assert found >= 0
            piece_at = (chunk.start_line, found)
        else:
            assert chunk.text == "\n".join(lines[chunk.start_line : chunk.end_line + 1])
        assert chunk.text.strip(), "blank chunk emitted"
        assert lines[chunk.start_line].strip() and lines[chunk.end_line].strip()
    return lines


def covered(doc: ParsedDocument) -> set[int]:
    return {n for c in doc.chunks for n in range(c.start_line, c.end_line + 1)}


def nonblank(source: str) -> set[int]:
    return {n for n, line in enumerate(file_lines(source)) if line.strip()}


def parse(source: str, **kwargs: int) -> ParsedDocument:
    doc = parse_markdown(source, file_name="note.md", **kwargs)
    check(source, doc, kwargs.get("chunk_size", 800))
    return doc


# --- titles ------------------------------------------------------------------------------


def test_title_from_front_matter_and_front_matter_kept_out_of_chunks() -> None:
    source = (
        '---\ntitle: "Mexico payments: the monthly run"\ntags: [treasury]\n---\n\n# H1\nBody.\n'
    )
    doc = parse(source)
    assert doc.title == "Mexico payments: the monthly run"
    assert doc.chunks[0].start_line == 5
    assert all("tags:" not in c.text for c in doc.chunks)


def test_title_falls_back_to_first_h1_then_file_name() -> None:
    assert parse("---\nowner: ana\n---\nIntro.\n\n# The *real* title\n").title == "The real title"
    assert parse_markdown("## Only h2\ntext", file_name="policy_brief.md").title == "Policy brief"
    assert (
        parse_markdown("text", file_name="2026-10-14-payments-sync.md").title
        == "2026 10 14 payments sync"
    )


def test_empty_and_blank_files_have_no_chunks() -> None:
    for source in ("", "\n\n", "   \n\t\n", "---\ntitle: Only front matter\n---\n"):
        doc = parse_markdown(source, file_name="empty-notes.md")
        assert doc.chunks == []
    assert parse_markdown("", file_name="empty-notes.md").title == "Empty notes"


def test_one_line_file() -> None:
    doc = parse("Just one line, no newline at the end")
    assert doc.chunks == [Chunk(0, "Just one line, no newline at the end", (), 0, 0)]


# --- sections and headings -------------------------------------------------------------------


NESTED = """\
Preamble before any heading.

# Payments

Overview of payments.

## Mexico

### Monthly wire run

Wire on the 14th.

## Brazil

PIX for everything.

# Glossary

Terms.
"""


def test_sections_follow_headings_with_their_heading_path() -> None:
    doc = parse(NESTED)
    got = [(c.heading_path, c.start_line, c.end_line) for c in doc.chunks]
    assert got == [
        ((), 0, 0),
        (("Payments",), 2, 4),
        # "## Mexico" has no body of its own: it is joined to its subsection.
        (("Payments", "Mexico", "Monthly wire run"), 6, 10),
        (("Payments", "Brazil"), 12, 14),
        (("Glossary",), 16, 18),
    ]


def test_heading_text_has_markup_stripped() -> None:
    source = "## The *fast* path with `code`, [a link](http://x) and ![alt text](i.png) ##\nx\n"
    (chunk,) = parse(source).chunks
    assert chunk.heading_path == ("The fast path with code, a link and alt text",)


def test_setext_headings() -> None:
    source = "Main title\n==========\n\nIntro.\n\nSub part\n--------\nDetails.\n"
    doc = parse(source)
    assert doc.title == "Main title"
    got = [(c.heading_path, c.start_line, c.end_line) for c in doc.chunks]
    assert got == [(("Main title",), 0, 3), (("Main title", "Sub part"), 5, 7)]


def test_headings_in_code_fences_lists_and_quotes_are_not_sections() -> None:
    source = (
        "# Deploy\n\n```bash\n# not a heading\nmake deploy\n```\n\n"
        "- step\n  # not a section either\n\n> # nor this\n"
    )
    doc = parse(source)
    assert [c.heading_path for c in doc.chunks] == [("Deploy",)]
    assert doc.chunks[0].end_line == 10


def test_heading_only_section_before_a_sibling_is_kept() -> None:
    doc = parse("# A\n# B\ntext\n")
    assert [(c.heading_path, c.text) for c in doc.chunks] == [
        (("A",), "# A"),
        (("B",), "# B\ntext"),
    ]


def test_no_headings_at_all() -> None:
    source = "\n".join(f"Paragraph {n} " + "words " * 30 + "\n" for n in range(20))
    doc = parse(source, chunk_size=400, chunk_overlap=0)
    assert len(doc.chunks) > 1
    assert {c.heading_path for c in doc.chunks} == {()}
    assert covered(doc) >= nonblank(source)


def test_link_reference_definitions_are_not_lost() -> None:
    source = "# Links\n\nSee [the bank][b].\n\n[b]: https://bank.example/portal\n"
    doc = parse(source)
    assert "https://bank.example/portal" in doc.chunks[-1].text


# --- line endings and encodings --------------------------------------------------------------


def test_crlf_and_cr_line_ends_keep_line_numbers() -> None:
    expected = [(c.heading_path, c.start_line, c.end_line, c.text) for c in parse(NESTED).chunks]
    for ending in ("\r\n", "\r"):
        doc = parse(NESTED.replace("\n", ending))
        assert [(c.heading_path, c.start_line, c.end_line, c.text) for c in doc.chunks] == expected


def test_bom_is_dropped() -> None:
    doc = parse("\ufeff# Title\nBody\n")
    assert doc.title == "Title"
    assert doc.chunks[0].text == "# Title\nBody"


# --- splitting -----------------------------------------------------------------------------


def paragraphs(count: int, words: int) -> list[str]:
    return [f"Para {n}: " + " ".join(f"w{n}x{k}" for k in range(words)) for n in range(count)]


def test_long_section_splits_at_paragraph_boundaries() -> None:
    paras = paragraphs(12, 12)  # each ~100 characters
    source = "# Long\n\n" + "\n\n".join(paras) + "\n"
    lines = file_lines(source)
    doc = parse(source, chunk_size=300, chunk_overlap=0)
    assert len(doc.chunks) >= 4
    for chunk in doc.chunks:
        assert chunk.heading_path == ("Long",)
        assert chunk.end_line + 1 == len(lines) or not lines[chunk.end_line + 1].strip()
    for first, second in zip(doc.chunks, doc.chunks[1:], strict=False):
        assert second.start_line > first.end_line


def test_overlap_repeats_whole_lines_within_a_section_only() -> None:
    body = "\n".join(f"line {n:03d} " + "x" * 40 for n in range(60))
    source = f"# One\n{body}\n\n# Two\n{body}\n"
    doc = parse(source, chunk_size=400, chunk_overlap=120)
    for first, second in zip(doc.chunks, doc.chunks[1:], strict=False):
        if first.heading_path != second.heading_path:
            assert second.start_line > first.end_line
            continue
        assert second.start_line <= first.end_line, "no overlap"
        shared = "\n".join(file_lines(source)[second.start_line : first.end_line + 1])
        assert 0 < len(shared) <= 120
        assert second.end_line > first.end_line


def test_big_code_fence_splits_between_lines() -> None:
    code = [f"    result_{n} = compute(value_{n}, factor={n})  # step {n}" for n in range(200)]
    source = "# Script\n\nRun this:\n\n```python\n" + "\n".join(code) + "\n```\n\nDone.\n"
    doc = parse(source, chunk_size=500, chunk_overlap=100)
    assert len(doc.chunks) > 10
    code_lines = set(code)
    for chunk in doc.chunks:
        for line in chunk.text.split("\n"):
            # whole lines only: every line of a chunk is a line of the file
            assert line in code_lines or line in {
                "# Script",
                "",
                "Run this:",
                "```python",
                "```",
                "Done.",
            }
    assert covered(doc) >= nonblank(source)


def test_big_table_splits_between_rows() -> None:
    rows = [f"| {n} | Banorte | MXN {n * 1000:,} | SPEI |" for n in range(150)]
    source = "# Limits\n\n| # | Bank | Amount | Rail |\n|---|---|---|---|\n" + "\n".join(rows)
    doc = parse(source, chunk_size=600, chunk_overlap=0)
    assert len(doc.chunks) > 5
    assert all(line.startswith("|") for c in doc.chunks[1:] for line in c.text.split("\n"))


def test_long_list_prefers_item_boundaries() -> None:
    items = [f"- item {n}\n  continued {n} " + "y" * 50 for n in range(30)]
    source = "# List\n\n" + "\n".join(items) + "\n"
    doc = parse(source, chunk_size=400, chunk_overlap=0)
    assert len(doc.chunks) > 3
    assert all(c.text.startswith(("# List", "- item")) for c in doc.chunks)


def test_a_line_longer_than_the_chunk_size_is_cut_at_word_boundaries() -> None:
    words = [f"w{i:03d}" for i in range(500)]
    long_line = " ".join(words)
    source = f"# Big\n\nshort before\n\n{long_line}\n\nshort after\n"
    doc = parse(source, chunk_size=200, chunk_overlap=50)
    check(source, doc, chunk_size=200)
    pieces = [c for c in doc.chunks if c.start_line == 4]
    assert len(pieces) > 10
    assert [(c.start_line, c.end_line) for c in doc.chunks if c.start_line != 4] == [
        (0, 2),
        (6, 6),
    ]
    for piece in pieces:
        assert set(piece.text.split()) <= set(words)  # no word cut in two
    assert all(len(piece.text) > 100 for piece in pieces[:-1])
    # Every word is in a piece, and consecutive pieces share up to 50 characters.
    assert {w for piece in pieces for w in piece.text.split()} == set(words)
    for before, after in itertools.pairwise(pieces):
        assert after.text.split()[0] in before.text.split()
        assert len(set(before.text.split()) & set(after.text.split())) * 5 <= 50


def test_a_line_without_spaces_is_cut_anyway() -> None:
    source = "a" * 2500 + "\n"
    doc = parse(source, chunk_size=800, chunk_overlap=200)
    check(source, doc)
    assert [len(c.text) for c in doc.chunks] == [800, 800, 800, 100]


def test_five_megabyte_one_line_file_has_bounded_chunks() -> None:
    rng = random.Random(5)
    words = ["ledger", "wire", "treasury", "close", "payment", "reconcile"]
    body = " ".join(rng.choices(words, k=800_000))
    source = body[: len(body) // 2] + " zanzibarite " + body[len(body) // 2 :]
    assert len(source) > 5_000_000
    doc = parse(source)
    check(source, doc)
    assert max(len(c.text) for c in doc.chunks) <= 800
    assert sum("zanzibarite" in c.text for c in doc.chunks) >= 1


def test_very_long_heading_is_cut() -> None:
    source = "# " + "headword " * 5000 + "\n\nBody text.\n"
    doc = parse(source)
    check(source, doc)
    assert len(doc.title) <= 200 and doc.title.endswith("…")
    assert all(len(part) <= 200 for c in doc.chunks for part in c.heading_path)


@pytest.mark.timeout(60)
def test_two_mib_file() -> None:
    rng = random.Random(7)
    words = [
        "treasury",
        "wire",
        "payment",
        "Banorte",
        "SPEI",
        "cut-off",
        "ledger",
        "close",
        "reconcile",
    ]
    parts: list[str] = []
    size = 0
    n = 0
    while size < 2 * 1024 * 1024:
        block = [f"{'#' * rng.randint(1, 4)} Section {n}", ""]
        for _ in range(rng.randint(1, 5)):
            block += [" ".join(rng.choices(words, k=rng.randint(5, 120))), ""]
        if n % 4 == 0:
            block += ["```text", *(f"# code {k}" for k in range(rng.randint(1, 80))), "```", ""]
        if n % 7 == 0:
            block += ["| a | b |", "|---|---|", *(f"| {k} | v |" for k in range(30)), ""]
        text = "\n".join(block)
        parts.append(text)
        size += len(text) + 1
        n += 1
    source = "\n".join(parts)
    doc = parse(source)
    assert len(doc.chunks) > 2000
    assert covered(doc) >= nonblank(source)
