"""The requests the editor panel adds, over the real server: kb/related (and its
`kb.related` command)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from .conftest import KbClient


async def test_related_notes_over_lsp(kb: KbClient, workspace: Path) -> None:
    response = await kb.request("kb/related", {"path": "payments/mexico-payments.md"})
    assert response["path"] == "payments/mexico-payments.md"
    hits = response["results"]
    assert hits and all(hit["label"] == "related" for hit in hits)
    assert [hit["n"] for hit in hits] == list(range(1, len(hits) + 1))
    assert "payments/mexico-payments.md" not in [hit["path"] for hit in hits]
    assert response["index"]["state"] == "ready"
    # Numbered like a search: result 1 opens the first related note.
    opened = await kb.request("kb/openResult", {"n": 1})
    assert opened["uri"] == hits[0]["uri"]

    # By URI, through workspace/executeCommand, and without replacing the list.
    uri = (workspace / "payments" / "brazil-payments.md").resolve().as_uri()
    by_command = await kb.request(
        types.WORKSPACE_EXECUTE_COMMAND,
        types.ExecuteCommandParams(
            command="kb.related", arguments=[{"uri": uri, "numbered": False}]
        ),
    )
    assert by_command["path"] == "payments/brazil-payments.md"
    assert (await kb.request("kb/openResult", {"n": 1}))["uri"] == hits[0]["uri"]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({}, "give the file as `uri` or `path`"),
        ({"path": "nothing/here.md"}, "nothing/here.md is not in the knowledge base"),
        ({"path": "../../etc/passwd"}, "outside the workspace"),
        ({"uri": "file:///etc/passwd"}, "is not inside the workspace"),
        ({"path": "glossary.md", "limit": 0}, "limit"),
        ({"path": "glossary.md", "numbered": "yes"}, "numbered"),
    ],
)
async def test_related_bad_input(kb: KbClient, params: dict[str, Any], message: str) -> None:
    with pytest.raises(JsonRpcException) as err:
        await kb.request("kb/related", params)
    assert err.value.code == -32602
    assert message in str(err.value)
    assert (await kb.status())["state"] == "ready", "the server keeps serving"
