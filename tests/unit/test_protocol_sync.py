"""The files generated from `protocol.py`, the table of operations and `config.py` are up
to date, and say the same.

`protocol.ts`, the contract test's `shapes.ts`, the extension's settings contribution, the
settings table (docs/configuration.md) and the list of wire methods (docs/protocol.md) are
regenerated here and compared with what is checked in.
When this fails: run `.venv/bin/python -m kb_lsp.codegen` and commit the result.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from kb_lsp import codegen, config
from kb_lsp.codegen import __main__ as codegen_main
from kb_lsp.codegen.manifest import editor_settings

ROOT = codegen.repo_root()
MANIFEST = ROOT / "vscode-extension" / "package.json"


@pytest.mark.parametrize("relative", sorted(codegen.GENERATORS))
def test_generated_file_is_up_to_date(relative: str) -> None:
    path = ROOT / relative
    expected = codegen.generate(ROOT)[path]
    actual = path.read_text(encoding="utf-8")
    assert actual == expected, (
        f"{relative} is stale: it is generated from server/kb_lsp/protocol.py and config.py. "
        f"Run `{codegen.COMMAND}` and commit the result."
    )


def test_check_mode_names_the_stale_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for relative in codegen.GENERATORS:
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / relative, tmp_path / relative)
    assert codegen_main.main(["--check", "--root", str(tmp_path)]) == 0
    protocol_ts = tmp_path / "vscode-extension" / "src" / "protocol.ts"
    protocol_ts.write_text(protocol_ts.read_text().replace("kb/search", "kb/find"))
    assert codegen_main.main(["--check", "--root", str(tmp_path)]) == 1
    assert "stale: vscode-extension/src/protocol.ts" in capsys.readouterr().err
    assert codegen_main.main(["--root", str(tmp_path)]) == 0
    assert codegen_main.main(["--check", "--root", str(tmp_path)]) == 0
    assert "'kb/search'" in protocol_ts.read_text()


def _contributed() -> dict[str, dict[str, Any]]:
    manifest = json.loads(MANIFEST.read_text(encoding="utf-8"))
    out: dict[str, dict[str, Any]] = {}
    for category in manifest["contributes"]["configuration"]:
        out.update(category["properties"])
    return out


def test_every_setting_is_contributed_and_described() -> None:
    contributed = _contributed()
    assert sorted(contributed) == sorted("kb." + s.key for s in config.setting_fields())
    for key, spec in contributed.items():
        assert spec["markdownDescription"].strip(), key
        assert isinstance(spec["order"], int), key


def test_the_settings_editor_opens_with_interpreter_then_provider_url_and_model() -> None:
    first = [s.key for s in editor_settings()[:8]]
    assert first == [
        "server.python",
        "llm.provider",
        "llm.baseUrl",
        "llm.model",
        "llm.apiKeyEnv",
        "llm.mode",
        "ollama.host",
        "ollama.model",
    ]
    contributed = _contributed()
    for key in ("kb.ollama.host", "kb.ollama.model"):
        assert contributed[key]["markdownDescription"].startswith("Ollama only:"), key
    # The editor installs kb-lsp as the README says; that name on PyPI may be another's.
    assert "pip install kb-lsp" not in contributed["kb.server.python"]["markdownDescription"]


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("kb.llm.model", "kb.ollama.model"),
        ("kb.llm.model", "kb.embedder.model"),
        ("kb.llm.timeout", "kb.ollama.timeout"),
        ("kb.llm.contextSize", "kb.ollama.numCtx"),
    ],
)
def test_look_alike_settings_say_how_they_differ(one: str, other: str) -> None:
    """Each of a look-alike pair names the other, so the difference is said where it is read."""
    contributed = _contributed()
    assert f"`{other}`" in contributed[one]["markdownDescription"], one
    assert f"`{one}`" in contributed[other]["markdownDescription"], other


def test_vscode_defaults_are_the_server_defaults() -> None:
    """The whole `kb` section as VS Code sends it untouched loads as the server's defaults."""
    as_sent = {key.removeprefix("kb."): spec["default"] for key, spec in _contributed().items()}
    loaded = config.load_settings(config.Layer("workspace settings", as_sent))
    assert loaded.problems == []
    assert loaded.settings == config.Settings()


def test_settings_that_may_be_unset_are_text_boxes() -> None:
    contributed = _contributed()
    for key in ("kb.storage", "kb.chroma.url", "kb.embedder.modelPath", "kb.server.python"):
        assert contributed[key]["type"] == "string", key
        assert contributed[key]["default"] == "", key


def test_untrusted_workspaces_restrict_what_runs_or_receives_data() -> None:
    manifest = json.loads(MANIFEST.read_text(encoding="utf-8"))
    untrusted = manifest["capabilities"]["untrustedWorkspaces"]
    assert untrusted["supported"] == "limited"
    assert set(untrusted["restrictedConfigurations"]) >= {
        "kb.server.python",
        "kb.ollama.host",
        "kb.chroma.url",
        "kb.storage",
        "kb.embedder.modelPath",
    }
    for key in untrusted["restrictedConfigurations"]:
        assert key in untrusted["description"]


def test_a_setting_without_a_description_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from kb_lsp.codegen import manifest

    setting = next(s for s in config.setting_fields() if s.key == "chunkSize")
    bare = config.SettingField(setting.key, setting.path, type(setting.info)(annotation=int))
    with pytest.raises(ValueError, match=r"kb\.chunkSize has no Field"):
        manifest.setting_property(bare)
    monkeypatch.setattr(manifest, "setting_fields", lambda: [bare])
    with pytest.raises(ValueError, match=r"kb\.chunkSize has no place in the editor"):
        manifest.editor_settings()
