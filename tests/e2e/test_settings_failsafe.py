"""Bad settings over the real server fail safe: a wrong value is reported once and the
value of the next source down stays in force, so the index never moves.

(Each source's fallback, value by value, is unit-tested in tests/unit/test_config.py.)
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from lsprotocol import types
from pytest_lsp import client_capabilities

from .conftest import DEADLINE, KbClient, running_server, wait_for

OFF_TOPIC = "how to bake sourdough bread"


def push(kb: KbClient, settings: Any) -> None:
    """`workspace/didChangeConfiguration` with the settings in it, as pushing clients do."""
    kb.lsp.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=settings))


async def told(kb: KbClient, text: str) -> str:
    async def found() -> str | None:
        return next((message for message in kb.shown() if text in message), None)

    return await wait_for(found, f"a message about {text!r}")


def default_store(storage: Path) -> Path:
    """Where the server would keep its index without a storage setting (see server_env)."""
    return storage / "xdg-cache" / "kb-lsp"


async def test_bad_storage_pushed_by_the_client_keeps_the_store(
    workspace: Path, storage: Path
) -> None:
    async with running_server([workspace], storage) as kb:
        before = await kb.status()
        assert (await kb.search(OFF_TOPIC))["results"] == []  # below the default threshold
        push(kb, {"kb": {"storage": 5, "search": {"threshold": 0}}})
        message = await told(kb, "kb.storage = 5")
        assert str(storage) in message  # says which storage stays in force

        # The good value in the same change applies; the store stays where it was.
        async def unfiltered() -> bool:
            return bool((await kb.search(OFF_TOPIC))["results"])

        await wait_for(unfiltered, "the new search threshold")
        assert (await kb.status())["store"] == before["store"]
        assert not default_store(storage).exists()

        # The same bad value again is not a second message.
        push(kb, {"kb": {"storage": 5, "search": {"threshold": 0.99}}})

        async def filtered() -> bool:
            return not (await kb.search(OFF_TOPIC))["results"]

        await wait_for(filtered, "the next search threshold")
        assert sum("kb.storage = 5" in message for message in kb.shown()) == 1


async def test_settings_that_are_not_an_object_are_ignored_as_a_whole(
    workspace: Path, storage: Path
) -> None:
    async with running_server([workspace], storage) as kb:
        before = await kb.status()
        push(kb, {"kb": ["x"]})
        await told(kb, "must be an object")
        push(kb, {"kb": {"storage": {"path": str(storage / "elsewhere")}}})
        await told(kb, "kb.storage = {'path'")
        status = await kb.wait_until_ready()
        assert status["store"] == before["store"]
        assert not default_store(storage).exists()
        assert not (storage / "elsewhere").exists()


async def test_initialization_options_that_are_not_an_object(
    workspace: Path, storage: Path
) -> None:
    """`initializationOptions: ["x"]` is ignored with one message; `KB_STORAGE` applies."""
    from_env = storage / "from-env"
    async with running_server(
        [workspace], storage, initialize=False, env={"KB_STORAGE": str(from_env)}
    ) as kb:
        params = types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            workspace_folders=[types.WorkspaceFolder(uri=workspace.as_uri(), name="workspace")],
            initialization_options=["x"],
        )
        await asyncio.wait_for(kb.lsp.initialize_session(params), DEADLINE)
        await told(kb, "initializationOptions must be an object")
        status = await kb.wait_until_ready()
        assert Path(status["store"]) == from_env
        assert not default_store(storage).exists()


async def test_bad_storage_in_the_editors_settings_keeps_the_store(
    workspace: Path, storage: Path
) -> None:
    """The answer to `workspace/configuration` (VS Code's settings) is the top layer: its
    bad value is reported once, the good one beside it applies, the store stays."""
    async with running_server([workspace], storage) as kb:
        before = await kb.status()
        kb.lsp.set_configuration({"storage": 5, "search": {"threshold": 0}}, section="kb")
        kb.lsp.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
        message = await told(kb, "kb.storage = 5 in the editor's settings")
        assert str(storage) in message

        async def unfiltered() -> bool:
            return bool((await kb.search(OFF_TOPIC))["results"])

        await wait_for(unfiltered, "the new search threshold")
        assert (await kb.status())["store"] == before["store"]
        assert not default_store(storage).exists()
        assert sum("kb.storage = 5" in message for message in kb.shown()) == 1


async def test_a_bad_environment_variable_is_reported_and_the_default_applies(
    workspace: Path, storage: Path
) -> None:
    """`KB_SEARCH_THRESHOLD=lots` is one message; the default threshold applies and the
    store is the one `KB_STORAGE` names (a bad variable does not drop the good one)."""
    from_env = storage / "from-env"
    env = {"KB_STORAGE": str(from_env), "KB_SEARCH_THRESHOLD": "lots"}
    async with running_server([workspace], storage, initialize=False, env=env) as kb:
        params = types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            workspace_folders=[types.WorkspaceFolder(uri=workspace.as_uri(), name="workspace")],
        )
        await asyncio.wait_for(kb.lsp.initialize_session(params), DEADLINE)
        message = await told(kb, "kb.search.threshold = 'lots' in the environment")
        status = await kb.wait_until_ready()
        assert Path(status["store"]) == from_env
        assert not default_store(storage).exists()
        assert (await kb.search(OFF_TOPIC))["results"] == []  # the default threshold
        assert sum("kb.search.threshold" in shown for shown in kb.shown()) == 1
        assert "using" in message
