"""Tags mean what the author wrote: a list item is one tag, spaces and all; only a plain
string is split; heading attribute lists (`{ #id .class }`) are neither tags nor words
of the heading."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.embedder import HashingEmbedder

from kb_lsp.config import load_settings
from kb_lsp.engine.knowledge import KnowledgeBase
from kb_lsp.engine.markdown.document import parse_markdown
from kb_lsp.engine.metadata.extract import extract_metadata


def _tags(text: str) -> tuple[str, ...]:
    return extract_metadata(parse_markdown(text, file_name="a.md"), "a.md").tags


def test_list_items_are_whole_tags_and_a_plain_string_is_split() -> None:
    assert _tags("---\ntags: [type aliases, Generics]\n---\nbody\n") == ("type aliases", "Generics")
    assert _tags("---\ntags:\n  - type   aliases\n  - '#area/payments'\n---\n") == (
        "type aliases",
        "area/payments",
    )
    assert _tags("---\ntags: alpha, beta gamma\n---\n") == ("alpha", "beta", "gamma")
    assert _tags("---\nkeywords: [api design, REST]\n---\n") == ("api design", "REST")
    assert _tags("---\ntag: solo\n---\n") == ("solo",)


def test_attribute_lists_are_not_tags() -> None:
    text = (
        "# CORS { #cors }\n\n## Steps { #steps }\n\ntext\n\n### Use it {: #use-it .note }\n\n"
        "![diagram](d.png){ width=300 #fig-1 }\n\n"
        "A real #tag here, and { not an attribute list #inbraces }.\n"
    )
    assert _tags(text) == ("tag", "inbraces")
    doc = parse_markdown(text, file_name="cors.md")
    assert doc.title == "CORS"
    assert {chunk.heading_path for chunk in doc.chunks} >= {("CORS", "Steps")}
    assert all("{" not in heading for c in doc.chunks for heading in c.heading_path)


def test_tag_filter_matches_a_tag_with_spaces(workspace: Path, storage: Path) -> None:
    (workspace / "types.md").write_text(
        "---\ntags: [type aliases, Generics]\n---\n# Types\n\n## Steps { #steps }\n\n"
        "How type aliases name a long annotation.\n"
    )
    (workspace / "words.md").write_text(
        "---\ntags: type, aliases\n---\n# Words\n\nTwo tags from one string.\n"
    )
    settings = load_settings({"search": {"threshold": 0.0}}).settings
    kb = KnowledgeBase([workspace], settings, embedder=HashingEmbedder(), storage=storage)
    kb.sync()
    assert [hit.path for hit in kb.search('tag:"type aliases"')] == ["types.md"]
    assert [hit.path for hit in kb.search("tag:type")] == ["words.md"]
    assert [hit.path for hit in kb.search("tag:generics")] == ["types.md"]
    assert kb.search("tag:steps") == []
    meta = kb.file_reads.file_meta("types.md")
    assert meta is not None and meta.tags == ["type aliases", "Generics"]
    hit = kb.search("annotation", mode="keyword")[0]
    assert hit.path == "types.md"
    assert hit.heading == "Types > Steps"
    assert "{" not in hit.snippet and "#steps" not in hit.snippet
    kb.close()
