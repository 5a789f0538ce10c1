"""Where a client's kept numbered list lives on disk, and writing it: `numbered.py` keeps
the lists, and a one-shot keyword search (`quick_search.py`), which never loads the wire
models, writes its list here the same way."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def list_file(folder: Path, client: str) -> Path:
    return folder / f"numbered-{_UNSAFE.sub('_', client)}.json"


def save_list(path: Path, query: str, hits: Sequence[Mapping[str, Any]]) -> None:
    """`client`'s list (`hits` as the wire has them) at `path`, replaced in one step."""
    payload = {"query": query, "hits": list(hits)}
    try:
        temp = path.with_suffix(".tmp")
        temp.write_text(json.dumps(payload), encoding="utf-8")
        temp.replace(path)
    except OSError as err:
        log.debug("could not save the numbered list at %s: %s", path, err)
