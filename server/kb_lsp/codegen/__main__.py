"""`python -m kb_lsp.codegen [--check] [--root DIR]`: write (or check) the generated files."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kb_lsp.codegen import COMMAND, generate, repo_root, stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kb_lsp.codegen", description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail when a file is stale")
    parser.add_argument(
        "--root", type=Path, default=None, help="the repository (default: this checkout)"
    )
    args = parser.parse_args(argv)
    root = (args.root or repo_root()).resolve()
    if args.check:
        outdated = stale(root)
        for path in outdated:
            sys.stderr.write(f"stale: {path.relative_to(root)} (run {COMMAND})\n")
        return 1 if outdated else 0
    for path, text in generate(root).items():
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            sys.stderr.write(f"wrote {path.relative_to(root)}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
