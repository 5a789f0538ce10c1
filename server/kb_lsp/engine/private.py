"""The index is its user's alone: store folders 0700, their files 0600.

`kb.sqlite3` holds the text of every chunk, `chroma/` its vectors; under the usual umask
(022) SQLite and Chroma create them readable by every local user. A store folder is
created 0700, and opening a store tightens what is in it (a store made by an older
version, or copied in with loose modes), once, with one log line saying so. New files
land in a folder nobody else can enter, and the command-line entry points also run with
umask 077 (`OWNER_ONLY_UMASK`) so they are created 0600 in the first place.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

log = logging.getLogger(__name__)

FOLDER_MODE = 0o700
FILE_MODE = 0o600
OWNER_ONLY_UMASK = 0o077


def private_folder(path: Path) -> None:
    """`path` (and missing parents) created 0700; an existing `path` tightened to it."""
    path.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
    _tighten_one(path, os.lstat(path))


def _tighten_one(path: Path, st: os.stat_result) -> bool:
    """True when `path` was looser than owner-only and is now tightened."""
    if stat.S_ISLNK(st.st_mode) or st.st_uid != os.geteuid():
        return False  # not ours to change (a link's mode is its target's)
    wanted = FOLDER_MODE if stat.S_ISDIR(st.st_mode) else FILE_MODE
    mode = stat.S_IMODE(st.st_mode)
    if not mode & 0o077:
        return False
    try:
        os.chmod(path, mode & wanted)
    except OSError as err:
        log.warning("cannot make %s private: %s", path, err.strerror)
        return False
    return True


def tighten(folder: Path, *, say: bool = True) -> int:
    """Every folder and file under `folder` (itself included) made owner-only; the number
    that were readable or writable by others, said once in the log when not 0 and `say`
    (a store just created is not news)."""
    changed = 0
    for current, dirs, files in os.walk(folder):
        base = Path(current)
        for name in [".", *dirs, *files]:
            path = base if name == "." else base / name
            try:
                st = os.lstat(path)
            except OSError:
                continue  # gone meanwhile
            changed += _tighten_one(path, st)
    if changed and say:
        log.warning(
            "The index at %s was readable by other users: %d files and folders are now "
            "private to you (0600/0700).",
            folder,
            changed,
        )
    return changed


def owner_only_umask() -> None:
    """Files this process creates are its user's only (the store, logs, caches)."""
    os.umask(OWNER_ONLY_UMASK)
