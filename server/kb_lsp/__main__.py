"""`python -m kb_lsp`: the language server on stdio (`--tcp HOST:PORT` for debugging)."""

from __future__ import annotations

import argparse
import sys

from kb_lsp.lsp.limits import DEFAULT_MAX_MESSAGE_BYTES, MIN_MESSAGE_BYTES


def _size(value: str) -> int:
    if not value.isdigit() or int(value) < MIN_MESSAGE_BYTES:
        raise argparse.ArgumentTypeError(
            f"expected a number of bytes of at least {MIN_MESSAGE_BYTES}, got {value!r}"
        )
    return int(value)


def _address(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {value!r}")
    return host or "127.0.0.1", int(port)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m kb_lsp", description=__doc__)
    parser.add_argument("--stdio", action="store_true", help="serve on stdio (the default)")
    parser.add_argument("--tcp", type=_address, metavar="HOST:PORT", help="serve on TCP")
    parser.add_argument(
        "--max-message-size",
        type=_size,
        default=DEFAULT_MAX_MESSAGE_BYTES,
        metavar="BYTES",
        help="the largest JSON-RPC message accepted, in bytes (default 64 MiB); larger "
        "ones are answered with a parse error and skipped",
    )
    args = parser.parse_args(argv)

    from kb_lsp.engine.private import owner_only_umask
    from kb_lsp.lsp.setup import serve

    owner_only_umask()  # the index, logs and caches are the user's alone (private.py)

    # On stdio, serve() ends the process itself.
    sys.exit(serve(args.tcp, args.max_message_size))


if __name__ == "__main__":
    main()
