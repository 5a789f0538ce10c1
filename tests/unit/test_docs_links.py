"""The README stays a page a newcomer reads in ten minutes, and every link in it and in
the docs pages leads somewhere: the file exists and, for `#anchor`, the heading is there
(GitHub's anchors). Links are read by markdown-it, as a renderer reads them, so a link in
a table counts and one in a code block does not."""

from __future__ import annotations

import re
from itertools import pairwise
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
MAX_README_LINES = 300
PAGES = [README, *sorted((REPO / "docs").glob("*.md"))]

_parser = MarkdownIt("commonmark").enable("table")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text: lower case, punctuation dropped (letters,
    digits, `_`, `-` and spaces kept), each space a `-`."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of a Markdown file's headings; a repeated one gets `-1`, `-2`, …"""
    tokens = _parser.parse(path.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    out: set[str] = set()
    for opening, inline in pairwise(tokens):
        if opening.type != "heading_open":
            continue
        text = "".join(child.content for child in inline.children or [] if child.content)
        base = slug(text)
        count = seen.get(base, 0)
        seen[base] = count + 1
        out.add(base if count == 0 else f"{base}-{count}")
    return out


def links(path: Path) -> list[str]:
    """Every link and image target of a Markdown file, as written."""
    found: list[str] = []
    for token in _parser.parse(path.read_text(encoding="utf-8")):
        for child in token.children or []:
            target = child.attrGet("href") or child.attrGet("src")
            if isinstance(target, str):
                found.append(target)
    return found


def broken(path: Path, root: Path = REPO) -> list[str]:
    """The links of `path` into the repository at `root` whose file or anchor is not there."""
    out = []
    for target in links(path):
        parts = urlsplit(target)
        if parts.scheme or parts.netloc:
            continue  # the web: not this test's to reach
        where = (path.parent / unquote(parts.path)).resolve() if parts.path else path
        if not where.exists() or root not in [where, *where.parents]:
            out.append(f"{target} (no such file)")
        elif parts.fragment and where.suffix == ".md" and parts.fragment not in anchors(where):
            out.append(f"{target} (no such heading in {where.relative_to(root)})")
    return out


def test_the_readme_is_one_short_page() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines"


def test_the_readme_leads_into_every_docs_page() -> None:
    targets = {(REPO / urlsplit(t).path).resolve() for t in links(README) if t.startswith("docs/")}
    pages = {page.resolve() for page in PAGES[1:]}
    assert pages <= targets, sorted(p.name for p in pages - targets)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_link_resolves_anchors_too(page: Path) -> None:
    assert links(page), page
    assert broken(page) == []


def test_a_broken_link_or_anchor_is_found(tmp_path: Path) -> None:
    """The check itself: a missing file, a missing heading, a renamed one."""
    (tmp_path / "other.md").write_text("# Where it is\n\n## Storage: the `kb` store\n")
    page = tmp_path.resolve() / "page.md"
    page.write_text(
        "[ok](other.md#storage-the-kb-store) [top](#a-title) [gone](nothere.md)\n"
        "[moved](other.md#storage) | [self](#nope)\n\n# A title\n\n"
        "| a | b |\n| --- | --- |\n| [in a table](other.md#where-it-is-not) | x |\n\n"
        "```\n[in code](nowhere.md)\n```\n"
    )
    assert broken(page, tmp_path.resolve()) == [
        "nothere.md (no such file)",
        "other.md#storage (no such heading in other.md)",
        "#nope (no such heading in page.md)",
        "other.md#where-it-is-not (no such heading in other.md)",
    ]


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40))
def test_a_slug_has_no_space_or_punctuation_and_keeps_words(heading: str) -> None:
    anchor = slug(heading)
    assert " " not in anchor and anchor == anchor.lower()
    assert all(ch.isalnum() or ch in "-_" for ch in anchor)
    for word in re.findall(r"[^\W_]+", heading.lower()):
        assert word in anchor
