"""The rules that turn a text setting as typed into its value, without pydantic.

`config.py`'s validators call these; so does the quick path of `kb status`
(`runtime/quick.py`), which reads the few settings it needs (the storage folder, the
configured model) without loading pydantic — the same rules, one copy.
A rule raises `ValueError` with the message a person reads for a value it refuses.
"""

from __future__ import annotations

import re
from typing import Any

# Chroma's rule for a collection's name (its server says the same when it refuses one).
_COLLECTION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{1,510}[A-Za-z0-9]$")


def blank_is_unset(value: Any) -> Any:
    """An empty text box in the settings editor means "not set"."""
    if isinstance(value, str) and not value.strip():
        return None
    return value


def ollama_host(value: str) -> str:
    """`localhost:11434/` → `http://localhost:11434`."""
    value = value.strip().rstrip("/")
    if not value:
        raise ValueError("must be a URL such as http://127.0.0.1:11434")
    if "://" not in value:
        value = "http://" + value
    return value


def base_url(value: str | None) -> str | None:
    """A server's URL: stripped, no trailing slash, `http://` when no scheme is given."""
    if value is None:
        return None
    value = value.strip().rstrip("/")
    return value if "://" in value else "http://" + value


def model_name(value: str | None) -> str | None:
    return value.strip() if value else None


def chroma_collection(value: str | None) -> str | None:
    """A team index's collection name: Chroma's rule, checked here so that a bad name is
    a settings message, not a failed sync."""
    if value is None:
        return None
    value = value.strip()
    if not _COLLECTION.match(value) or ".." in value:
        raise ValueError(
            "must be 3–512 letters, digits, `.`, `_` or `-`, starting and ending with a "
            "letter or digit (Chroma's rule for a collection's name)"
        )
    return value
