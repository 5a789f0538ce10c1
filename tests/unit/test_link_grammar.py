"""The one link grammar (`metadata/links.py`): hand-picked cases and properties."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kb_lsp.engine.metadata.links import (
    bare_paths,
    is_external,
    markdown_links,
    wiki_display,
    wiki_links,
)


def test_wiki_links_and_embeds() -> None:
    found = list(wiki_links("See [[Pop-out windows#Usage|pop-outs]] and ![[diagram.png]]."))
    assert [(m.embed, m.target, m.text, m.heading) for m in found] == [
        (False, "Pop-out windows", "pop-outs", "Usage"),
        (True, "diagram.png", "", ""),
    ]
    assert wiki_display("See [[a/Target#h|the text]] or [[Other]].") == ("See the text or Other.")


def test_markdown_links_titles_angles_and_nesting() -> None:
    line = 'A [close [guide]](../runbooks/close.md "Close") and ![img](<a b.png>).'
    found = list(markdown_links(line))
    assert [(m.embed, m.target, m.text) for m in found] == [
        (False, "../runbooks/close.md", "close [guide]"),
        (True, "a b.png", "img"),
    ]
    assert line[found[0].start : found[0].end] == '[close [guide]](../runbooks/close.md "Close")'


def test_what_is_not_a_workspace_link() -> None:
    assert is_external("https://example.com/a.md")
    assert is_external("mailto:someone@example.com")
    assert is_external("//cdn.example.com/a.md")
    assert is_external("#heading")
    assert not is_external("notes/a.md")
    assert not is_external("../a.md#heading")


def test_bare_paths_in_prose() -> None:
    line = "Read notes/other.md, then [x](y.md) or file.markdown."
    assert [m.target for m in bare_paths(line)] == ["notes/other.md", "file.markdown"]
    # A web address's path is found as written, and the caller sees it is external.
    assert [m.target for m in bare_paths("at https://h/a.md")] == ["//h/a.md"]
    assert is_external("//h/a.md")


@given(st.text(alphabet=st.sampled_from(list("[]()!#|<> \"'abc./:\n")), max_size=80))
def test_every_match_spans_its_own_syntax(line: str) -> None:
    for match in wiki_links(line):
        written = line[match.start : match.end]
        assert written.startswith(("[[", "![[")) and written.endswith("]]")
        assert match.embed == written.startswith("!")
    for match in markdown_links(line):
        written = line[match.start : match.end]
        assert written.startswith(("[", "![")) and written.endswith(")")
    assert "\n" not in "".join(m.target for m in wiki_links(line))
    # Replacing wiki links by what they show never leaves a matched link behind.
    assert not list(wiki_links(wiki_display(line))) or "[[" in wiki_display(line)
