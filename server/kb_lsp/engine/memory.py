"""Giving freed memory back to the operating system.

After a sync the process has freed most of what it allocated (chunk texts, token ids,
activations), but glibc keeps freed blocks in its arenas — one per thread that ever
allocated — so the resident size stays at the peak. `malloc_trim(0)` returns the free
pages of every arena. Elsewhere (macOS, Windows, musl) this is a no-op.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import sys
from functools import cache
from typing import Any

log = logging.getLogger(__name__)


@cache
def _libc() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim  # noqa: B018 - glibc only; musl has no malloc_trim
    except (OSError, AttributeError):
        return None
    return libc


def release_free_memory() -> None:
    """Return the heap's free pages to the OS (glibc `malloc_trim`); cheap, never fails."""
    libc = _libc()
    if libc is not None:
        try:
            libc.malloc_trim(0)
        except OSError as err:  # pragma: no cover - defensive
            log.debug("malloc_trim failed: %s", err)
