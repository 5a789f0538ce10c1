"""Messages for the user, each said once: logged, and shown through the front end."""

from __future__ import annotations

import logging
import threading

from kb_lsp.runtime.kind import Hooks, Severity

log = logging.getLogger("kb_lsp.runtime.runtime")


class OnceTold:
    def __init__(self, hooks: Hooks) -> None:
        self._hooks = hooks
        self._told: set[str] = set()
        self._lock = threading.Lock()

    def tell(self, message: str, severity: Severity = "warning") -> None:
        """Log `message` and show it through the front end, unless it was said already."""
        with self._lock:
            if message in self._told:
                return
            self._told.add(message)
        log.log(logging.ERROR if severity == "error" else logging.WARNING, message)
        self._hooks.tell(message, severity)
