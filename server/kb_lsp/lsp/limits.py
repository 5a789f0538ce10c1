"""The size limits of a JSON-RPC message, apart from `framing.py` (which loads asyncio) so
that the `kb` command line can name them in its help without loading it."""

MIB = 1024 * 1024
DEFAULT_MAX_MESSAGE_BYTES = 64 * MIB
MIN_MESSAGE_BYTES = 1024  # below this an `initialize` would not fit
