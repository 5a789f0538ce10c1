"""Metadata extraction: front matter (safely, on nasty inputs), inline tags, links."""

from __future__ import annotations

from kb_lsp.engine.markdown.document import parse_markdown
from kb_lsp.engine.metadata.extract import FileMetadata, extract_metadata
from kb_lsp.engine.metadata.frontmatter import MAX_ALIASES
from kb_lsp.engine.metadata.values import Value


def meta(text: str, path: str = "notes/a.md") -> FileMetadata:
    return extract_metadata(parse_markdown(text, file_name=path.rsplit("/", 1)[-1]), path)


def values(m: FileMetadata, field: str) -> list[str]:
    return [v.text for v in m.fields.get(field, [])]


def test_typed_front_matter_fields() -> None:
    m = meta(
        "---\n"
        "title: Mexico payments\n"
        "status: draft\n"
        "owner: Ana López\n"
        "priority: 2\n"
        "ratio: 0.5\n"
        "date: 2026-10-14\n"
        "updated: 2026-10-14T09:30:00\n"
        "quoted_date: '2026-11-01'\n"
        "published: true\n"
        "aliases: [MX payments, SPEI]\n"
        "author:\n  name: Ana\n  team: treasury\n"
        "empty:\n"
        "---\n# Body\n"
    )
    assert m.title == "Mexico payments"
    assert m.fields["status"] == [Value("string", "draft")]
    assert m.fields["owner"] == [Value("string", "Ana López")]
    assert m.fields["priority"] == [Value("number", "2", 2.0)]
    assert m.fields["ratio"] == [Value("number", "0.5", 0.5)]
    assert m.fields["date"] == [Value("date", "2026-10-14")]
    assert m.fields["updated"] == [Value("date", "2026-10-14T09:30:00")]
    assert m.fields["quoted_date"] == [Value("date", "2026-11-01")]
    assert m.fields["published"] == [Value("bool", "true")]
    assert values(m, "aliases") == ["MX payments", "SPEI"]
    assert {v.kind for v in m.fields["aliases"]} == {"list"}
    assert values(m, "author.name") == ["Ana"]
    assert "empty" not in m.fields
    assert "title" not in m.fields  # the manifest's title
    assert values(m, "folder") == ["notes"]
    assert m.problems == ()


def test_tags_from_front_matter_and_body_obsidian_rules() -> None:
    m = meta(
        "---\ntags: [Payments, '#area/treasury']\n---\n"
        "# Heading #intitle\n"
        "Body with #inline and #nested/tag, again #INLINE.\n"
        "Not tags: C#, a#b, #1984, `#code`, [x](#anchor), http://x.org/#frag, \\#esc\n"
        "```\n#fenced\n```\n"
        "    #indented-code\n"
        "\n"
        "#start-of-line and #2026-q4\n"
    )
    assert list(m.tags) == [
        "Payments",
        "area/treasury",
        "intitle",
        "inline",
        "nested/tag",
        "start-of-line",
        "2026-q4",
    ]


def test_tags_as_a_string_and_tag_key() -> None:
    assert list(meta("---\ntags: a, b c\n---\n").tags) == ["a", "b", "c"]
    assert list(meta("---\ntag: solo\n---\n").tags) == ["solo"]


def test_links_wiki_embeds_and_markdown() -> None:
    m = meta(
        "See [[Pop-out windows|open it in a new window]] and [[Canvas#Cards]].\n"
        "![[diagram.png]] ![[Embedded note]]\n"
        "A [relative link](../other/note.md#part) and [angled](<my note.md>).\n"
        "Web [site](https://example.org) and [anchor](#here) and [mail](mailto:a@b.c).\n"
        "```\n[[in code]]\n```\n"
    )
    got = [(k.kind, k.target, k.text, k.heading, k.line) for k in m.links]
    assert got == [
        ("wiki", "Pop-out windows", "open it in a new window", "", 0),
        ("wiki", "Canvas", "", "Cards", 0),
        ("embed", "diagram.png", "", "", 1),
        ("embed", "Embedded note", "", "", 1),
        ("markdown", "../other/note.md", "relative link", "part", 2),
        ("markdown", "my note.md", "angled", "", 2),
    ]


def test_word_count_leaves_out_code_and_front_matter() -> None:
    m = meta("---\ntitle: x y z\n---\none two three\n\n```\nnot counted here\n```\nfour\n")
    assert values(m, "words") == ["4"]


def test_malformed_front_matter_is_a_problem_with_its_line_and_the_file_is_kept() -> None:
    text = "---\ntitle: ok\nstatus: [unclosed\nowner: x\n---\n# Still indexed\n\nBody.\n"
    doc = parse_markdown(text, file_name="a.md")
    m = extract_metadata(doc, "a.md")
    assert doc.chunks and "Body." in doc.chunks[-1].text
    assert len(m.problems) == 1
    assert m.problems[0].line in (2, 3)  # the flow sequence that never closes
    assert "not valid YAML" in m.problems[0].message
    assert m.fields.get("status") is None


def test_tabs_in_front_matter() -> None:
    m = meta("---\ntitle: x\n\towner: y\n---\nbody\n")
    assert m.problems and m.problems[0].line == 2
    assert "tab" in m.problems[0].message.lower() or "YAML" in m.problems[0].message


def test_duplicate_keys_keep_the_last_value_and_are_reported() -> None:
    m = meta("---\nstatus: draft\nowner: a\nstatus: done\n---\n")
    assert values(m, "status") == ["done"]
    assert [(p.line, "duplicate key 'status'" in p.message) for p in m.problems] == [(3, True)]


def test_alias_bomb_is_refused_quickly() -> None:
    lines = ["---", "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, 10):
        refs = ", ".join([f"*a{i - 1}"] * 9)
        lines.append(f"a{i}: &a{i} [{refs}]")
    lines += ["status: draft", "---", "# Title", "", "body"]
    m = meta("\n".join(lines) + "\n")
    # Refused while composing, at the first reference over the limit — before anything is
    # expanded: a1..a7 hold 63 references, a8 the 64th and the 65th (file line 9).
    assert [(p.line, p.message) for p in m.problems] == [
        (9, f"more than {MAX_ALIASES} YAML aliases (*name); the fields are ignored")
    ]
    assert m.fields.get("status") is None


def test_a_few_aliases_are_fine() -> None:
    m = meta("---\nbase: &b draft\nstatus: *b\n---\n")
    assert values(m, "status") == ["draft"]
    assert m.problems == ()


def test_front_matter_that_is_not_a_mapping() -> None:
    m = meta("---\n- a\n- b\n---\nbody\n")
    assert m.problems and "not a list of fields" in m.problems[0].message


def test_python_tags_are_refused_by_the_safe_loader() -> None:
    m = meta("---\nx: !!python/object/apply:os.system ['echo pwned']\n---\n")
    assert m.problems and "not valid YAML" in m.problems[0].message


def test_dashes_inside_a_code_block_are_not_front_matter() -> None:
    m = meta("```yaml\n---\nstatus: draft\n---\n```\n\ntext #real\n")
    assert "status" not in m.fields
    assert list(m.tags) == ["real"]


def test_bom_and_crlf() -> None:
    m = meta("\ufeff---\r\nstatus: draft\r\ntags: [a]\r\n---\r\nbody #b\r\n")
    assert values(m, "status") == ["draft"]
    assert list(m.tags) == ["a", "b"]


def test_one_megabyte_front_matter_is_not_parsed() -> None:
    block = "".join(f"k{i}: {'x' * 90}\n" for i in range(11_000))
    big = f"---\n{block}---\n# T\n\nbody\n"
    assert len(big) > 1_000_000
    doc = parse_markdown(big, file_name="big.md")
    m = extract_metadata(doc, "big.md")
    # Not parsed at all: refused on its size, before YAML sees it.
    refused = f"front matter of {len(block) // 1024} KB is over the 64 KB read"
    assert [(p.line, p.message) for p in m.problems] == [(1, f"{refused}; its fields are ignored")]
    assert [k for k in m.fields if k.startswith("k")] == []
    assert doc.chunks and doc.chunks[-1].text.endswith("body")


def test_unclosed_front_matter_is_body() -> None:
    m = meta("---\nstatus: draft\n\n# Title\n")
    assert "status" not in m.fields
    assert m.problems == ()


def test_many_values_are_capped() -> None:
    many = "---\nlist: [" + ", ".join(str(i) for i in range(5000)) + "]\n---\n"
    m = meta(many)
    assert 0 < len(m.fields["list"]) <= 2000
