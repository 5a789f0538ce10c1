"""The runtime's requests for the editor panel: related notes. In-process."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.helpers.runtime import editor_runtime

from kb_lsp.config import load_settings
from kb_lsp.contract.operations import OPEN_RESULT, RELATED, SEARCH, Call
from kb_lsp.protocol import IndexStatus, OpenResultParams, RelatedParams, SearchParams
from kb_lsp.runtime import InvalidInput, Runtime
from kb_lsp.runtime.dispatch import answer

HASHING = "tests.fakes.embedder:HashingEmbedder"
DEADLINE = 60.0


@pytest.fixture
def runtime(workspace: Path, storage: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Runtime]:
    monkeypatch.setenv("KB_EMBEDDER_FACTORY", HASHING)
    runtime = editor_runtime(watch=False, probe_llm=False, log_file=False, listen=False)
    runtime.open(
        [workspace], load_settings({"storage": str(storage)}).settings, index=False
    ).result()
    runtime.reindex().result()
    yield runtime
    runtime.close()


def wait_for_status(runtime: Runtime, ok: object, what: str) -> IndexStatus:
    """Poll the status until `ok(status)` holds (a deadline, never a fixed sleep)."""
    end = time.monotonic() + DEADLINE
    while True:
        status = runtime.status()
        if ok(status):  # type: ignore[operator]
            return status
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}: {status}")
        time.sleep(0.02)


def test_related_is_a_numbered_list_unless_asked_not_to(runtime: Runtime, workspace: Path) -> None:
    response = answer(
        runtime, RELATED, RelatedParams(path="payments/mexico-payments.md"), Call("a")
    )
    assert response.path == "payments/mexico-payments.md"
    paths = [hit.path for hit in response.results]
    assert paths and "payments/mexico-payments.md" not in paths
    assert [hit.n for hit in response.results] == list(range(1, len(paths) + 1))
    assert {hit.label for hit in response.results} == {"related"}
    assert response.index.state == "ready"
    # It is the client's numbered list now: "open result 1" is the first related note.
    assert answer(runtime, OPEN_RESULT, OpenResultParams(n=1), Call("a")).path == paths[0]

    # The panel's own refresh does not replace the user's list.
    search = answer(runtime, SEARCH, SearchParams(query="SPEI cut-off"), Call("b"))
    answer(runtime, RELATED, RelatedParams(path="glossary.md", numbered=False), Call("b"))
    assert (
        answer(runtime, OPEN_RESULT, OpenResultParams(n=1), Call("b")).path
        == search.results[0].path
    )

    # A file URI works too.
    uri = (workspace / "payments" / "brazil-payments.md").resolve().as_uri()
    assert (
        answer(runtime, RELATED, RelatedParams(uri=uri), Call("c")).path
        == "payments/brazil-payments.md"
    )


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (RelatedParams(), "give the file as `uri` or `path`"),
        (RelatedParams(path="nothing/here.md"), "nothing/here.md is not in the knowledge base"),
        (RelatedParams(path="../../etc/passwd"), "outside the workspace"),
        (RelatedParams(uri="https://example.com/a.md"), "only file: URIs"),
        (RelatedParams(uri="file:///etc/passwd"), "is not inside the workspace"),
    ],
)
def test_related_says_what_is_wrong(runtime: Runtime, params: RelatedParams, message: str) -> None:
    with pytest.raises(InvalidInput, match=message.replace(".", r"\.")):
        answer(runtime, RELATED, params)
