"""A field's stored value, typed: what front matter, extraction and filters share.

Its own module so that reading stored values (the store's extracted rows, which a one-shot
keyword search opens) does not load the YAML reader of `frontmatter.py`.
"""

from __future__ import annotations

from dataclasses import dataclass

Kind = str  # "string" | "number" | "date" | "bool" | "list"


@dataclass(frozen=True)
class Value:
    """One stored value of a field: a list gives one `Value` per element."""

    kind: Kind
    text: str  # as shown: "draft", "2026-10-14", "3", "true"
    number: float | None = None
