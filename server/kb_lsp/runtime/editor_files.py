"""The files open in the editor (the LSP front end follows didOpen and didClose): each
sync embeds them before the rest, so that during a long first index the note in front
of the user is searchable by meaning first. Kept by the session, across reopenings of
the knowledge base."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from pathlib import Path


class EditorFiles:
    def __init__(self) -> None:
        self._paths: frozenset[Path] = frozenset()
        self._lock = threading.Lock()

    def set(self, paths: Iterable[Path]) -> None:
        with self._lock:
            self._paths = frozenset(paths)

    @property
    def paths(self) -> frozenset[Path]:
        with self._lock:
            return self._paths
