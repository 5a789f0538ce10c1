"""The model's answer text as it comes, in throttled pieces (`answer` events).

A model streams a few characters at a time; one event per delta would flood the editor's
webview and the MCP client. Pieces are gathered and sent at most about every `INTERVAL`
seconds, by a flusher thread that waits on a condition: what arrived is sent when its
time comes even if the model has gone silent since (a model that stalls mid-answer does
not hold back the text it already wrote), and nothing is sent while nothing arrived.

A piece is `Step(kind="answer", text=<new text>, args={"piece": True})`; with
`"replace": True` its text replaces the whole pending answer (the model went back to its
tools after all, or the final answer was cleaned up); `become` sends the final pending
answer as more text when it only adds to what was shown (a grounded answer's unverified
label), so a replacement is sent only when something shown changes. The final answer
still comes whole at the end, as an `answer` event without `piece`, so a client that
ignores pieces loses nothing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

INTERVAL = 0.1  # seconds between two pieces at most about once

Send = Callable[[str, bool], None]  # (text, replace)


class AnswerStream:
    """Throttles answer text into pieces for `send`; see the module docstring.

    `send` runs on the flusher thread only, so pieces keep their order; `close` and
    `abandon` join that thread, so nothing is sent after they return.
    """

    def __init__(self, send: Send, *, interval: float = INTERVAL) -> None:
        self._send = send
        self._interval = interval
        self._cond = threading.Condition()
        self._pending = ""
        self._replace = False
        self._before = ""  # text that came before a replacement, still to be sent first
        self._closed = False
        self._dropped = False
        self._sent_at = float("-inf")
        self._thread: threading.Thread | None = None
        self.shown = ""  # the pending answer as the client has it once all is flushed
        self._opening = True  # the next text opens the answer or a paragraph

    def paragraph(self, text: str) -> None:
        """`text` as a paragraph of its own (the evidence lead, before the model's text):
        what is fed next starts the next paragraph."""
        self.feed(text + "\n\n")
        with self._cond:
            self._opening = not self._closed

    def feed(self, text: str) -> None:
        """More answer text. Blanks that would open the answer, or the paragraph after
        `paragraph` (a model's leading space or newline), are not sent."""
        with self._cond:
            if self._opening:
                text = text.lstrip()
            if self._closed or not text:
                return
            self._opening = False
            self._pending += text
            self.shown += text
            self._wake()

    def replace(self, text: str) -> None:
        """`text` is the whole pending answer from now on (only sent when it differs)."""
        with self._cond:
            self._replace_locked(text)

    def become(self, text: str) -> None:
        """`text` is the whole pending answer from now on: what it adds is sent as more
        text when it continues what was shown (the client keeps what it has), else it is
        sent as a replacement."""
        with self._cond:
            if self._closed or text == self.shown:
                return
            if text.startswith(self.shown):
                self._pending += text[len(self.shown) :]
                self.shown = text
                self._wake()
            else:
                self._replace_locked(text)

    def _replace_locked(self, text: str) -> None:
        # Called with the condition held.
        if self._closed or text == self.shown:
            return
        if text and not self._replace:
            # What the model wrote is sent before the text that replaces it: a client
            # that cannot take text back (a terminal) has then shown it whole, not cut
            # off mid-word. A restart ("") drops it: it was not the answer.
            self._before += self._pending
        self._pending = text
        self._replace = True
        self.shown = text
        self._opening = not text
        self._wake()

    def restart(self) -> None:
        """What came was not the answer (the model called tools): clear it on the client."""
        self.replace("")

    def close(self) -> None:
        """Send what is pending now, then stop."""
        self._stop(drop=False)

    def abandon(self) -> None:
        """Stop without sending what is pending (the request was cancelled)."""
        self._stop(drop=True)

    def _stop(self, *, drop: bool) -> None:
        with self._cond:
            self._closed = True
            self._dropped = self._dropped or drop
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join()

    def _wake(self) -> None:
        # Called with the condition held.
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="kb-answer-stream", daemon=True)
            self._thread.start()
        self._cond.notify_all()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not (self._pending or self._replace or self._before) and not self._closed:
                    self._cond.wait()
                # The next piece waits for its turn, unless the stream is closing.
                while not self._closed:
                    left = self._sent_at + self._interval - time.monotonic()
                    if left <= 0:
                        break
                    self._cond.wait(left)
                if self._dropped:
                    return
                before, text, replace = self._before, self._pending, self._replace
                self._before, self._pending, self._replace = "", "", False
                closed = self._closed
            if before:
                self._send(before, False)
            if text or replace:
                self._send(text, replace)
                self._sent_at = time.monotonic()
            if closed:
                with self._cond:
                    if not (self._pending or self._replace or self._before) or self._dropped:
                        return
