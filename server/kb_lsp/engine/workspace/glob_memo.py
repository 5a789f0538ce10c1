"""pathspec's translations of a workspace's globs, kept with its store, so that a one-shot
process whose patterns were all translated before never imports pathspec (the memo of
`globs.py`).

A sync of the whole workspace saves, as one row of the store's `meta` table
(`StoreWriter.save_glob_memo`), the translations of the rules its scan used — `kb.include`,
`kb.exclude`, every ignore file it read (`WorkspaceRoot.patterns`). A one-shot keyword
search or schema loads the row before its scan (`runtime/quick_search.py`) and never
writes it. A pattern the row lacks (a `.gitignore` line added since) is asked of pathspec,
which is imported then, as before.

The row is used only with the pathspec that wrote it. It is keyed by `FORMAT` (what the
row holds), the interpreter (`sys.implementation.cache_tag`: pathspec builds its regular
expressions with `re.escape`) and pathspec's installed version, read without running it
(importing it costs 39 modules, `importlib.metadata` more): the name of the
`pathspec-<version>.dist-info` folder beside the package that the import system would
load (`importlib.util.find_spec` finds it without executing it). An installer writes the
package and that folder into the same folder, one per installed version, and removes
both when it replaces the version, so the name is the version that would run. Where there
is not exactly one such folder beside the package (an editable or vendored pathspec, a
half-finished uninstall), no version is known, and nothing is saved or trusted; where
pathspec is loaded anyway (a writer), its `__version__` must be the folder's too. A row
of any other key or shape is ignored whole: pathspec answers, as without one.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import sys
from collections.abc import Iterable
from typing import Any

from kb_lsp import globs

log = logging.getLogger(__name__)

FORMAT = 1
_PREFIX, _SUFFIX = "pathspec-", ".dist-info"


def installed() -> str | None:
    """What a row is keyed by: this process's pathspec (its installed version) and
    interpreter; None when the version cannot be told (the module's docstring)."""
    try:
        spec = importlib.util.find_spec("pathspec")
    except (ImportError, ValueError):
        return None
    folders = list(spec.submodule_search_locations or ()) if spec is not None else []
    if len(folders) != 1:
        return None
    try:
        names = os.listdir(os.path.dirname(folders[0]))
    except OSError:
        return None
    versions = [
        name[len(_PREFIX) : -len(_SUFFIX)]
        for name in names
        if name.startswith(_PREFIX) and name.endswith(_SUFFIX)
    ]
    if len(versions) != 1:
        return None
    loaded = sys.modules.get("pathspec")
    if loaded is not None and getattr(loaded, "__version__", None) != versions[0]:
        return None
    return f"pathspec {versions[0]}, {sys.implementation.cache_tag}"


def saved(patterns: Iterable[str]) -> str | None:
    """The row that keeps pathspec's translations of `patterns` (those `globs.py` would
    ask it for); None when the version cannot be told."""
    wanted = sorted({pattern for pattern in patterns if len(pattern) <= globs.MAX_GLOB_CHARS})
    translations = {pattern: globs.translate(pattern) for pattern in wanted}
    key = installed()  # after translating: a pathspec loaded by it must agree
    if key is None:
        return None
    row = {"format": FORMAT, "pathspec": key, "translations": translations}
    return json.dumps(row, separators=(",", ":"))


def load(row: str | None) -> bool:
    """Remember the translations of a store's row when they are this pathspec's; False,
    remembering nothing, for no row, another key, or a row not of this shape."""
    if row is None:
        return False
    try:
        data = json.loads(row)
    except (ValueError, RecursionError):
        log.debug("the saved glob translations are not JSON: ignored")
        return False
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return False
    entries = data.get("translations")
    key = installed()
    if key is None or data.get("pathspec") != key or not isinstance(entries, dict):
        log.debug("the saved glob translations are not this pathspec's: ignored")
        return False
    translations: dict[str, globs.Translation] = {}
    for pattern, value in entries.items():
        answer = _answer(value)
        if answer is None:
            log.debug("a saved glob translation is malformed: all ignored")
            return False
        translations[pattern] = answer
    globs.remember(translations)
    return True


def _answer(value: Any) -> globs.Translation | None:
    """A translation as `globs.translate` gives it, from its JSON; None if it is not one."""
    if isinstance(value, str):
        return value  # pathspec's refusal
    if isinstance(value, list) and len(value) == 2:
        regex, include = value
        if regex is None and include is None:
            return (None, None)
        if isinstance(regex, str) and isinstance(include, bool):
            return (regex, include)
    return None
