"""`python -m kb_lsp`: the language server on stdio (`--tcp HOST:PORT` for debugging)."""

from __future__ import annotations

import argparse
import sys


def _address(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {value!r}")
    return host or "127.0.0.1", int(port)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m kb_lsp", description=__doc__)
    parser.add_argument("--stdio", action="store_true", help="serve on stdio (the default)")
    parser.add_argument("--tcp", type=_address, metavar="HOST:PORT", help="serve on TCP")
    args = parser.parse_args(argv)

    from kb_lsp.lsp.server import serve

    sys.exit(serve(args.tcp))  # on stdio, serve() ends the process itself


if __name__ == "__main__":
    main()
