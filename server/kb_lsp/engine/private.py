"""The index is its user's alone: store folders 0700, their files 0600.

`kb.sqlite3` holds the text of every chunk, `chroma/` its vectors; under the usual umask
(022) SQLite and Chroma create them readable by every local user. A store folder is
created 0700, and opening a store tightens what is in it (a store made by an older
version, or copied in with loose modes), once, with one log line saying so. New files
land in a folder nobody else can enter, and the command-line entry points also run with
umask 077 (`OWNER_ONLY_UMASK`) so they are created 0600 in the first place.

A store folder that is not its user's is refused, not used (`NotPrivate`, naming the
folder and what to do): one another user made first in a shared `KB_STORAGE` (a 1777
folder) would answer the victim's searches from the index they planted, and one reached
through a folder others may write (no sticky bit), or own, can be swapped at any time.
Root's folders and the user's own are trusted; a folder writable by the user's own group
is too when nobody else is in it (the user-private groups of umask 002 systems).
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

from kb_lsp.errors import Unavailable

log = logging.getLogger(__name__)

FOLDER_MODE = 0o700
FILE_MODE = 0o600
OWNER_ONLY_UMASK = 0o077


class NotPrivate(Unavailable):
    """A store folder this user cannot keep to themselves (module docstring)."""


def private_folder(path: Path) -> None:
    """`path` (and missing parents) created 0700; an existing `path` tightened to it.
    Raises `NotPrivate` when it is not this user's own (`refusal`)."""
    path.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
    why = refusal(path)
    if why is not None:
        raise NotPrivate(
            f"The index folder {path} is not yours alone: {why}. Another user could "
            "answer your searches from an index of theirs; remove it, or set kb.storage "
            "(KB_STORAGE) to a folder of your own."
        )
    _tighten_one(path, os.lstat(path))


def refusal(path: Path) -> str | None:
    """Why the existing folder `path` is not this user's alone (None when it is): it is a
    link, belongs to someone else, or a folder on its way may be written by others."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        return "it is a symbolic link"
    if st.st_uid != os.geteuid():
        return f"it belongs to {_owner(st.st_uid)}"
    real = Path(os.path.realpath(path))
    for folder in real.parents:
        up = os.stat(folder)
        if up.st_uid not in (0, os.geteuid()):
            return f"{folder} on its way belongs to {_owner(up.st_uid)}"
        if up.st_mode & stat.S_ISVTX:
            continue  # others may add entries, but never move or remove ours
        if up.st_mode & stat.S_IWOTH:
            return f"{folder} on its way may be written by every user"
        if up.st_mode & stat.S_IWGRP and not _own_group(up.st_gid):
            return f"{folder} on its way may be written by the group {_group(up.st_gid)}"
    return None


def _owner(uid: int) -> str:
    try:
        import pwd

        return f"the user {pwd.getpwuid(uid).pw_name} ({uid})"
    except (ImportError, KeyError):
        return f"the user {uid}"


def _group(gid: int) -> str:
    try:
        import grp

        return grp.getgrgid(gid).gr_name
    except (ImportError, KeyError):
        return str(gid)


def _own_group(gid: int) -> bool:
    """Whether `gid` is this user's group with nobody else in it (a user-private group)."""
    if gid != os.getegid():
        return False
    try:
        import grp
        import pwd

        me = pwd.getpwuid(os.geteuid()).pw_name
        others = {user.pw_name for user in pwd.getpwall() if user.pw_gid == gid}
        return (set(grp.getgrgid(gid).gr_mem) | others) <= {me}
    except (ImportError, KeyError):
        return False


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
