"""A model's reply bounded on our side: tokens, bytes and time.

The token limit is sent with every request (`num_predict`, `max_tokens`), but a server
may not honour it: one that streams for ever once held `kb index --extract` for good and
grew an Ask's memory until it was cancelled, and a 50 MB stream became a 105 MB answer.
So `chat_stream` counts what arrives and ends the reply as cut (`done_reason`
"length", as a server's own cut reads) at the first bound it passes:

* pieces (one a token, as Ollama and llama-server stream them): twice the token limit,
  and a few for the chunks that carry no token (the role, the usage, the end);
* bytes of text, thinking and tool-call arguments: `BYTES_PER_TOKEN` a token, at least
  `MIN_BYTES` — far above what a tokenizer makes of a token;
* time: the silence timeout plus `SECONDS_PER_TOKEN` a token — a model slower than one
  token a second is not answering, and the silence timeout alone never ends a stream
  that trickles.

A piece that would pass a bound is not used: what was shown before it is the reply.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from kb_lsp.engine.llm.stream import Piece

PIECES_PER_TOKEN = 2
EXTRA_PIECES = 16
BYTES_PER_TOKEN = 64
MIN_BYTES = 64 * 1024
SECONDS_PER_TOKEN = 1.0


def piece_bytes(piece: Piece) -> int:
    """The bytes of text a piece adds to the reply (about: characters of each part)."""
    size = len(piece.content) + len(piece.thinking)
    size += sum(len(arguments) + len(name) for _, _, name, arguments in piece.fragments)
    size += sum(len(call.name) + len(repr(call.arguments)) for call in piece.calls)
    return size


@dataclass
class ReplyBounds:
    """The bounds of one reply of at most `tokens` tokens, with a silence timeout of
    `timeout` seconds; `clock` is a test's seam."""

    tokens: int
    timeout: float
    clock: Callable[[], float] = time.monotonic
    pieces: int = 0
    bytes: int = 0
    started: float = field(init=False)

    def __post_init__(self) -> None:
        self.started = self.clock()

    @property
    def max_pieces(self) -> int:
        return self.tokens * PIECES_PER_TOKEN + EXTRA_PIECES

    @property
    def max_bytes(self) -> int:
        return max(MIN_BYTES, self.tokens * BYTES_PER_TOKEN)

    @property
    def max_seconds(self) -> float:
        return self.timeout + self.tokens * SECONDS_PER_TOKEN

    def passed(self, piece: Piece) -> str | None:
        """The bound `piece` would pass (counted when it passes none), in words for
        the log; None when it fits."""
        if self.pieces + 1 > self.max_pieces:
            return f"{self.max_pieces:,} pieces ({self.tokens:,} tokens were asked for)"
        size = piece_bytes(piece)
        if self.bytes + size > self.max_bytes:
            return f"{self.max_bytes:,} bytes"
        if self.clock() - self.started > self.max_seconds:
            return f"{self.max_seconds:,.0f} seconds"
        self.pieces += 1
        self.bytes += size
        return None
