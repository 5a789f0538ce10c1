"""Which code built a cached benchmark artefact: a `--store` folder (a corpus copy and its
index, kept for the next run) or a `bench scaling` store. A stamp is written into the
folder when a run starts filling it; a later run that reuses the folder prints the stamp
and keeps it in its JSON, so a figure measured on a reused index says which commit
built that index — and, where the code base differs (`--old`), gets an index of its own.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
STAMP = "built-by.json"
# Every folder this run stamped or reused, for its JSON (`report.write_json`).
SEEN: dict[str, dict[str, Any]] = {}


def _git(*args: str, cwd: Path) -> str | None:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    except OSError:
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def content_hash(server: Path) -> str:
    """The hash of a code base's Python files (paths and bytes): the same tree, however
    it was checked out or archived, has the same hash."""
    digest = hashlib.sha256()
    for path in sorted(server.rglob("*.py")):
        digest.update(path.relative_to(server).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def code_of(server: Path | None = None) -> dict[str, str]:
    """The code base in `server` (default: this checkout's): the commit of the checkout
    that holds it ("+changes" when its files there differ from that commit; none for a
    `git archive` tree), and the hash of its Python files."""
    server = (server or REPO / "server").resolve()
    code = {"server": str(server), "content": content_hash(server)}
    commit = _git("rev-parse", "--short", "HEAD", cwd=server)
    if commit and _git("rev-parse", "--show-toplevel", cwd=server) == str(server.parent):
        dirty = _git("status", "--porcelain", "--", ".", cwd=server)
        code["commit"] = commit + ("+changes" if dirty else "")
    return code


def describe(stamp: dict[str, Any]) -> str:
    code = stamp.get("code", {})
    which = code.get("commit") or f"a tree without git, Python files {code.get('content', '?')}"
    return f"built by {which} at {stamp.get('when', '?')}"


def ensure(folder: Path, server: Path | None = None) -> dict[str, Any]:
    """The stamp of `folder`: the one it holds when a run filled it before (said on
    stdout: the run reuses it), else this code's, written now — call it before building
    into the folder. A folder with content but no stamp was filled before stamps."""
    key = str(folder.resolve())
    if key not in SEEN:
        SEEN[key] = _ensure(folder, server)
    return SEEN[key]


def fresh(folder: Path, server: Path | None = None) -> dict[str, Any]:
    """`ensure` for a folder the run has just emptied to build into it again."""
    (folder / STAMP).unlink(missing_ok=True)
    SEEN.pop(str(folder.resolve()), None)
    return ensure(folder, server)


def _ensure(folder: Path, server: Path | None) -> dict[str, Any]:
    stamp_file = folder / STAMP
    if stamp_file.exists():
        stamp: dict[str, Any] = json.loads(stamp_file.read_text(encoding="utf-8"))
        print(f"reusing {folder}: {describe(stamp)}", flush=True)
        return {**stamp, "reused": True}
    if folder.exists() and any(folder.iterdir()):
        print(f"reusing {folder}: no stamp (filled before stamps), its builder unknown")
        return {"reused": True, "code": None}
    folder.mkdir(parents=True, exist_ok=True)
    stamp = {"code": code_of(server), "when": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
    stamp_file.write_text(json.dumps(stamp, indent=2) + "\n", encoding="utf-8")
    return {**stamp, "reused": False}
