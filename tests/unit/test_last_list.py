"""One last list in the runtime's numbered lists: a follower (the editor) takes every list
set from another origin — the command line, an MCP session, the agent — and hears of
it; its own lists and those set without an origin are not echoed."""

from __future__ import annotations

from pathlib import Path

from kb_lsp.protocol import ListOrigin, Range, SearchHit
from kb_lsp.runtime.local_socket import CLI_CLIENT
from kb_lsp.runtime.numbered import NumberedLists, origin_of


def hit(n: int, path: str) -> SearchHit:
    return SearchHit(
        n=n,
        uri=f"file:///w/{path}",
        path=path,
        root="/w",
        title=path,
        label="context match",
        score=0.5,
        snippet="",
        heading="",
        range=Range.of_lines(0, 1),
    )


def test_origins_of_clients() -> None:
    assert origin_of(CLI_CLIENT) == "cli"
    assert origin_of("mcp") == "mcp" and origin_of("mcp-1a2b") == "mcp"
    assert origin_of("lsp") is None and origin_of("mcpx") is None


def test_the_follower_takes_lists_from_other_origins(tmp_path: Path) -> None:
    lists = NumberedLists(lambda: tmp_path, frozenset())
    heard: list[tuple[str, list[str], ListOrigin]] = []
    stop = lists.follow("lsp", lambda q, hits, o: heard.append((q, [h.path for h in hits], o)))

    lists.remember("lsp", "own search", [hit(1, "a.md")])  # the editor's own: no echo
    assert heard == []
    lists.remember("mcp-7", "from mcp", [hit(1, "b.md"), hit(2, "c.md")], origin="mcp")
    assert heard == [("from mcp", ["b.md", "c.md"], "mcp")]
    assert lists.get("lsp", 2).path == "c.md"  # "result 2" in the editor is MCP's
    assert lists.get("mcp-7", 1).path == "b.md"  # and the session keeps its own

    lists.remember("lsp", "asked", [hit(1, "d.md")], origin="agent")  # the editor's ask
    assert heard[-1] == ("asked", ["d.md"], "agent")

    stop()
    lists.remember(CLI_CLIENT, "after", [hit(1, "e.md")], origin="cli")
    assert len(heard) == 2 and lists.get("lsp", 1).path == "d.md"


def test_a_failing_listener_does_not_fail_the_search(tmp_path: Path) -> None:
    lists = NumberedLists(lambda: tmp_path, frozenset())

    def broken(query: str, hits: list[SearchHit], origin: ListOrigin) -> None:
        raise RuntimeError("the editor went away")

    lists.follow("lsp", broken)
    lists.remember(CLI_CLIENT, "q", [hit(1, "a.md")], origin="cli")
    assert lists.get(CLI_CLIENT, 1).path == "a.md" and lists.get("lsp", 1).path == "a.md"
