"""`kb mcp` end to end, part 1: the tools and resources, through one long-lived server per
transport — the real `kb mcp` as a subprocess, driven by the official MCP Python client
(`mcp.ClientSession`) over stdio and over Streamable HTTP, on a copy of
examples/workspace (with a file outside it and links leading out, made before it starts).
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from jsonschema import Draft7Validator
from tests.conftest import copy_example_workspace

from kb_lsp.protocol import AskResponse, FileLines, SearchResponse

from .mcp_harness import Background, Kb, structured, text_of, wait_for

MEXICO = "payments/mexico-payments.md"
TOOLS = {
    "search",
    "open_result",
    "read_file",
    "list_files",
    "summarize_file",
    "ask",
    "status",
    "schema",
}
LABELS = {"filename match", "context match"}

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(240)]


class Setup:
    def __init__(self, workspace: Path, outside: Path) -> None:
        self.workspace = workspace
        self.outside = outside


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Setup:
    base = tmp_path_factory.mktemp("mcp-tools")
    workspace = copy_example_workspace(base / "workspace")
    outside = base / "outside.md"
    outside.write_text("# Secret\n\nnot part of the workspace\n", encoding="utf-8")
    (workspace / "linked.md").symlink_to(outside)
    (workspace / "runbooks" / "linked-dir").symlink_to(base, target_is_directory=True)
    (base / "storage").mkdir()
    return Setup(workspace, outside)


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=["stdio", "http"])
async def kb(request: pytest.FixtureRequest, setup: Setup) -> AsyncIterator[Kb]:
    session = Background(str(request.param), [setup.workspace], setup.workspace.parent / "storage")
    client = await session.start()
    try:
        await client.wait_ready()
        yield client
    finally:
        await session.close()


def lines_of(path: Path, first: int, last: int) -> str:
    """Lines `first..last` (1-based, inclusive) of a file, as read_file returns them."""
    return "\n".join(path.read_text(encoding="utf-8").splitlines()[first - 1 : last])


def markdown_files(workspace: Path) -> list[str]:
    """The workspace's own Markdown files (links leading out are not part of it)."""
    return sorted(
        p.relative_to(workspace).as_posix()
        for p in workspace.rglob("*.md")
        if not p.is_symlink() and p.resolve().is_relative_to(workspace)
    )


# --- the tool list ---------------------------------------------------------------------------


async def test_tools_have_descriptions_and_schemas(kb: Kb, setup: Setup) -> None:
    listed = (await kb.session.list_tools()).tools
    tools = {tool.name: tool for tool in listed}
    assert set(tools) == TOOLS
    for tool in listed:
        assert tool.description and len(tool.description) > 80, tool.name
        assert tool.input_schema["type"] == "object"
        assert tool.output_schema is not None and tool.output_schema["type"] == "object"
        for name, schema in tool.input_schema.get("properties", {}).items():
            assert schema.get("description"), f"{tool.name}.{name} has no description"
        assert tool.annotations is not None and tool.annotations.read_only_hint

    search = tools["search"].input_schema
    assert search["required"] == ["query"]
    assert search["properties"]["mode"]["enum"] == ["hybrid", "semantic", "keyword"]
    assert search["properties"]["limit"]["maximum"] == 100
    assert tools["open_result"].input_schema["properties"]["n"]["minimum"] == 1
    assert tools["read_file"].input_schema["required"] == ["path"]
    # The structured results are the LSP contract's shapes, field for field.
    for name, model in [
        ("search", SearchResponse),
        ("open_result", FileLines),
        ("ask", AskResponse),
    ]:
        output = tools[name].output_schema
        assert output is not None
        wire = model.model_json_schema(by_alias=True)["properties"]
        assert set(output["properties"]) == set(wire), name


async def test_schemas_are_self_contained_draft_07(kb: Kb, setup: Setup) -> None:
    """VS Code validates each input schema against the JSON Schema meta-schema and drops
    the tool when that needs a download it cannot make: every schema names the draft-07
    meta-schema VS Code bundles, is a valid draft-07 schema, and refers only inside itself."""
    for tool in (await kb.session.list_tools()).tools:
        for schema in (tool.input_schema, tool.output_schema):
            assert schema is not None
            assert schema["$schema"] == "http://json-schema.org/draft-07/schema#", tool.name
            Draft7Validator.check_schema(schema)
            refs = re.findall(r'"\$ref": "([^"]*)"', json.dumps(schema))
            assert all(ref.startswith("#/") for ref in refs), (tool.name, refs)
    # The SDK's own client validates structured results against these schemas: it accepts them.
    assert not (await kb.call("status")).is_error


# --- search and open_result -----------------------------------------------------------------


async def test_search_gives_the_numbered_list_with_labels(kb: Kb, setup: Setup) -> None:
    result = await kb.ok("search", query="mexico payments")
    data = structured(result)
    hits = data["results"]
    assert [hit["n"] for hit in hits] == list(range(1, len(hits) + 1))
    assert len(hits) >= 2
    assert hits[0]["path"] == MEXICO and hits[0]["label"] == "filename match"
    assert all(hit["label"] in LABELS for hit in hits)
    assert data["index"]["state"] == "ready"

    text = text_of(result)
    assert text.startswith(f"1, {MEXICO} (filename match)\n")
    for hit in hits:
        assert f"{hit['n']}, {hit['path']} ({hit['label']})" in text
        first = hit["range"]["start"]["line"] + 1
        assert f"L{first}-" in text
    assert "open_result" in text  # what to call next


async def test_search_says_what_looks_mistyped_and_what_finds_files(kb: Kb, setup: Setup) -> None:
    slip = await kb.ok("search", query="ownr:priya")
    [warning] = structured(slip)["warnings"]
    assert warning["suggestion"] == 'owner:"Priya Raman"'
    assert "query, character 1: no indexed file has the field 'ownr'" in text_of(slip)
    assert "Search 'owner:\"Priya Raman\"' instead?" in text_of(slip)
    typo = await kb.ok("search", query="incidnet respnse")
    assert structured(typo)["didYouMean"] == "incident response"
    assert "Did you mean 'incident response'? It finds files." in text_of(typo)


async def test_open_result_2_returns_result_2s_lines(kb: Kb, setup: Setup) -> None:
    workspace = setup.workspace
    hits = structured(await kb.ok("search", query="payment cut-off times"))["results"]
    second = hits[1]

    opened = await kb.ok("open_result", n=2)
    page = structured(opened)
    assert (page["path"], page["uri"], page["n"]) == (second["path"], second["uri"], 2)
    assert page["range"]["start"] == second["range"]["start"]
    first = second["range"]["start"]["line"] + 1
    last = max(first, second["range"]["end"]["line"])
    assert (page["startLine"], page["endLine"]) == (first, last)
    expected = lines_of(workspace / second["path"], first, last)
    assert page["text"] == expected
    text = text_of(opened)
    assert text.startswith(f"Result 2: {second['path']} lines {first}-{last} of ")
    assert f"{first} | {expected.splitlines()[0]}" in text

    # A number the list does not have, and no list at all, are tool errors that say why.
    message = await kb.error("open_result", n=len(hits) + 5)
    assert f"the last search returned {len(hits)} results" in message


# --- read_file ----------------------------------------------------------------------------


async def test_read_file_pages_with_line_numbers(kb: Kb, setup: Setup) -> None:
    workspace = setup.workspace
    result = await kb.ok("read_file", path=MEXICO, start_line=3, end_line=6)
    page = structured(result)
    assert (page["startLine"], page["endLine"]) == (3, 6)
    assert page["text"] == lines_of(workspace / MEXICO, 3, 6)
    total = len((workspace / MEXICO).read_text(encoding="utf-8").splitlines())
    assert page["totalLines"] == total
    assert page["nextStartLine"] == 7
    assert "read_file(path='payments/mexico-payments.md', start_line=7)" in text_of(result)

    whole = structured(await kb.ok("read_file", path=MEXICO))
    assert whole["endLine"] == total and whole["nextStartLine"] is None

    past = await kb.error("read_file", path=MEXICO, start_line=total + 10)
    assert f"has {total} lines" in past
    missing = await kb.error("read_file", path="payments/mexico.md")
    assert "not a file of the knowledge base" in missing and MEXICO in missing


async def test_read_file_refuses_paths_leading_out(kb: Kb, setup: Setup) -> None:
    outside = setup.outside
    link = " (it is a link to a place outside it)."
    for path, why in [
        ("../outside.md", "."),
        ("payments/../../outside.md", "."),
        (str(outside), ": give a path relative to the workspace folder"),
        ("linked.md", link),
        ("runbooks/linked-dir/outside.md", link),
    ]:
        message = await kb.error("read_file", path=path)
        assert "Secret" not in message
        assert f"Refused: {path!r} is outside the workspace{why}" in message, message


# --- list_files -------------------------------------------------------------------------------


async def test_list_files_hashes_are_sha256_of_the_files(kb: Kb, setup: Setup) -> None:
    workspace = setup.workspace
    result = await kb.ok("list_files")
    listing = structured(result)
    on_disk = markdown_files(workspace)
    assert [entry["path"] for entry in listing["files"]] == on_disk
    for entry in listing["files"]:
        data = (workspace / entry["path"]).read_bytes()
        assert entry["sha256"] == hashlib.sha256(data).hexdigest()
        assert entry["size"] == len(data)
        assert entry["chunks"] >= 1
        assert entry["modified"].endswith("Z")
        assert f"{entry['path']}  {entry['size']}  " in text_of(result)

    payments = structured(await kb.ok("list_files", glob="payments/**"))["files"]
    assert {e["path"] for e in payments} == {p for p in on_disk if p.startswith("payments/")}
    assert structured(await kb.ok("list_files", changed_since="2999-01-01"))["files"] == []
    recent = structured(await kb.ok("list_files", changed_since="2000-01-01T00:00:00Z"))
    assert len(recent["files"]) == len(on_disk)
    message = await kb.error("list_files", changed_since="last tuesday")
    assert "ISO 8601" in message


async def test_summarize_file_is_extractive_without_a_model(kb: Kb, setup: Setup) -> None:
    result = await kb.ok("summarize_file", path=MEXICO)
    data = structured(result)
    assert data["extractive"] and not data["cached"]
    assert "Mexico payments" in data["summary"]
    assert "extractive summary (no model reachable" in text_of(result)

    assert "exactly one of path" in await kb.error("summarize_file")
    assert "result 99" in await kb.error("summarize_file", n=99)


# --- bad arguments, resources, status -----------------------------------------------------------


# The SDK's own message for arguments its input schema refuses (pydantic's, on the model it
# makes of the tool's signature): a crash inside a tool reads "Error executing tool X: …"
# too, so the test asserts the model, the field and pydantic's kind of error.
_REFUSED = re.compile(r"1 validation error for (\w+)Arguments\n(\w+)\n .*\[type=(\w+),")


async def test_bad_arguments_are_rejected_by_the_schema(kb: Kb, setup: Setup) -> None:
    for tool, arguments, field, kind in [
        ("search", {}, "query", "missing"),
        ("search", {"query": ""}, "query", "string_too_short"),
        ("search", {"query": "x", "limit": 0}, "limit", "greater_than_equal"),
        ("search", {"query": "x", "mode": "fuzzy"}, "mode", "literal_error"),
        ("open_result", {"n": 0}, "n", "greater_than_equal"),
        ("open_result", {"n": "two"}, "n", "int_parsing"),
        ("read_file", {"path": MEXICO, "start_line": -1}, "start_line", "greater_than_equal"),
    ]:
        message = await kb.error(tool, **arguments)
        refused = _REFUSED.search(message)
        assert refused, message
        assert refused.groups() == (tool, field, kind), message
    assert await kb.error("nope") == "Unknown tool: nope"
    # The server still answers, with every file indexed.
    assert (await kb.status())["files"] == len(markdown_files(setup.workspace))


async def test_files_are_resources(kb: Kb, setup: Setup) -> None:
    workspace = setup.workspace
    resources = (await kb.session.list_resources()).resources
    by_name = {resource.name: resource for resource in resources}
    assert sorted(by_name) == markdown_files(workspace)
    mexico = by_name[MEXICO]
    assert str(mexico.uri) == f"kb://{workspace.name}/{MEXICO}"
    assert mexico.mime_type == "text/markdown" and mexico.title == "Mexico payments"
    read = await kb.session.read_resource(mexico.uri)
    assert read.contents[0].text == (workspace / MEXICO).read_text(encoding="utf-8")

    with pytest.raises(Exception, match="No indexed file"):
        await kb.session.read_resource(f"kb://{workspace.name}/nope.md")


async def test_schema_lists_the_fields_a_filter_can_use(kb: Kb, setup: Setup) -> None:
    result = await kb.ok("schema")
    schema = structured(result)
    fields = {field["name"]: field for field in schema["fields"]}
    assert "folder" in fields and schema["files"] == len(markdown_files(setup.workspace))
    folder = fields["folder"]
    assert "payments" in {value["value"] for value in folder["top"]}
    types = "/".join(folder["types"])
    assert f"\nfolder: {types}, {folder['files']} files; " in text_of(result)
    # The filter keeps only matching files, before ranking.
    hits = structured(await kb.ok("search", query="payments", filter="folder:runbooks"))["results"]
    assert hits and all(hit["path"].startswith("runbooks/") for hit in hits)


async def test_status_says_who_writes_the_index(kb: Kb, setup: Setup) -> None:
    workspace = setup.workspace
    status = await kb.status()
    assert not status["readOnly"]
    assert status["roots"] == [str(workspace)]
    text = text_of(await kb.ok("status"))
    assert "index: writer" in text and f"{status['files']} files" in text


# --- live: the watcher ------------------------------------------------------------------------


async def test_a_file_written_after_start_is_found(kb: Kb, setup: Setup) -> None:
    # A word of its own per run: the other transport's server shares this workspace.
    word = f"quokka{uuid.uuid4().hex[:8]}"
    (setup.workspace / "runbooks" / f"{word}.md").write_text(
        f"# {word} rotation\n\nThe {word} rotation runs every Thursday.\n", encoding="utf-8"
    )

    async def found() -> dict[str, Any] | None:
        hits = structured(await kb.ok("search", query=f"{word} rotation"))["results"]
        return next((h for h in hits if h["path"] == f"runbooks/{word}.md"), None)

    hit = await wait_for(found, "the new file in the results")
    assert hit["title"] == f"{word} rotation"
    assert f"The {word} rotation runs every Thursday." in hit["snippet"], hit
