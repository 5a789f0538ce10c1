"""Files generated from the one truth, `protocol.py` and `config.py`.

`python -m kb_lsp.codegen` writes them; `python -m kb_lsp.codegen --check` (and
tests/unit/test_protocol_sync.py) fails when one is stale:

* `vscode-extension/src/protocol.ts` — the wire contract for the extension;
* `vscode-extension/test/contract/shapes.ts` — the contract test's payload shapes;
* `vscode-extension/package.json` — `contributes.configuration` and
  `capabilities.untrustedWorkspaces` (the rest of the manifest is kept as it is);
* `docs/configuration.md` — the settings table between its marker comments;
* `docs/protocol.md` — the list of wire methods, from the table of operations
  (`contract/operations.py`), between its marker comments;
* `server/kb_lsp/runtime/quick_defaults.py` — settings defaults and status shapes for
  `kb status` without pydantic (`codegen/quick.py`).

A development tool: nothing in the server imports it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kb_lsp.codegen import manifest, quick, settings_page, typescript, wire

COMMAND = ".venv/bin/python -m kb_lsp.codegen"


def repo_root() -> Path:
    """The checkout this package was installed from (`pip install -e .`)."""
    return Path(__file__).resolve().parents[3]


# path in the repository → how its new text is made from its current text
GENERATORS: dict[str, Callable[[str], str]] = {
    "vscode-extension/src/protocol.ts": lambda _: typescript.protocol_ts(),
    "vscode-extension/test/contract/shapes.ts": lambda _: typescript.shapes_ts(),
    "vscode-extension/package.json": manifest.package_json,
    settings_page.PATH: settings_page.configuration_md,
    wire.PATH: wire.protocol_md,
    quick.PATH: lambda _: quick.quick_defaults_py(),
}


def generate(root: Path) -> dict[Path, str]:
    """Every generated file's path and the text it should have."""
    out: dict[Path, str] = {}
    for relative, make in GENERATORS.items():
        path = root / relative
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        out[path] = make(current)
    return out


def stale(root: Path) -> list[Path]:
    """The generated files whose text differs from what the generator makes."""
    return [
        path
        for path, text in generate(root).items()
        if not path.exists() or path.read_text(encoding="utf-8") != text
    ]
