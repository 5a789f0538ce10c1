"""Which files of a workspace folder belong to the knowledge base, and path confinement.

Rules, in the order they are applied:

* Directories that are never entered (nor watched): version-control metadata, dependency
  and virtualenv folders, caches and build output — see `ALWAYS_EXCLUDED_DIRS`, plus any
  `*.egg-info` folder and any folder holding a `pyvenv.cfg` (a virtualenv, whatever its
  name). `site/` and `docs/_site` style folders are *not* on the list: they may well be
  the documentation someone wants to search; exclude them with `kb.exclude` if not.
  `out/` is on the list (TypeScript, VS Code extensions and Next.js put generated files
  there); a wiki that keeps notes in a folder called `out` can re-check that choice.
* `kb.exclude` globs, then `.gitignore` files (when `kb.respectGitignore`), prune whole
  directories; a file is in the knowledge base when it matches a `kb.include` glob and
  is neither excluded nor ignored. All globs use gitignore syntax (pathspec's
  `GitIgnoreSpec` rules, matched without backtracking: `globs.py`), relative to the
  root: `**/*.md`, `drafts/`, `!keep.md`. A pattern over the glob limits (a cloned
  repository's `.gitignore` is not trusted to be reasonable) is left out with a warning
  naming it; the file's other patterns still count.
* `.gitignore` semantics follow git: patterns are relative to the folder of their file,
  a deeper file wins over a shallower one, negations work within what git can see (a
  file inside an ignored directory cannot be re-included), `.git/info/exclude` counts.
  When the root is a subfolder of a git repository, the `.gitignore` files between the
  repository's top and the root apply as well. `.gitignore` files are honoured even when
  there is no repository at all: people copy them around and expect them to count.
* Files larger than `kb.maxFileSize` are reported as `Skipped` with a reason; so are
  symbolic links (to files or folders) that point out of the root, and named pipes,
  sockets and devices. Binary and undecodable files are reported by `read`, which the
  indexer calls anyway (no point reading a file twice).
* Reading (`read`, `read_confined`) never trusts the scan: the file is opened once,
  without following a final link, and the open descriptor is what is checked (a regular
  file, inside the root, within the size limit) and read. A file swapped for a link to
  a file outside the workspace between the scan and the read is refused, not read.
* Symbolic links: a linked file is followed when its target is inside the root (its path
  is the link's path). A linked directory is followed when its target is inside the root
  and has not been walked already; real directories are walked first, so a link never
  hides the real path of a folder. This also makes link loops harmless.
* Nothing in `scan()` raises for the state of the disk: unreadable directories are
  reported as `Skipped`, files that vanish between listing and stat are left out.

Paths handed around are `/`-separated and relative to the root.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from kb_lsp.engine.workspace.names import NOT_TEXT, escaped, is_text
from kb_lsp.errors import Failed, InvalidInput
from kb_lsp.globs import GlobList, GlobRefused

if TYPE_CHECKING:
    from kb_lsp.config import Settings

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

ALWAYS_EXCLUDED_DIRS = frozenset(
    {
        # version control
        ".git",
        ".hg",
        ".svn",
        ".jj",
        # dependencies and virtualenvs
        "node_modules",
        "bower_components",
        ".venv",
        "venv",
        ".direnv",
        "site-packages",
        ".eggs",
        # caches and tool state
        "__pycache__",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".cache",
        ".gradle",
        ".terraform",
        ".idea",
        # build output
        "build",
        "dist",
        "out",
        "target",
        "_build",
        ".next",
        ".nuxt",
        ".vscode-test",
    }
)

_VENV_MARKER = "pyvenv.cfg"
_GITIGNORE = ".gitignore"
_MIB = 1024 * 1024
# A bigger ignore file is a mistake or an attack, not a list of patterns.
_GITIGNORE_MAX_SIZE = 4 * _MIB


class PathOutsideWorkspace(InvalidInput):
    """A path that does not stay inside the workspace root; the message says which."""


class UnreadableFile(Failed):
    """A file that cannot be indexed; `reason` is worded for a person. (Reading it was
    tried and failed: the contract's `Failed`; a caller who named it hears `InvalidInput`.)"""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class FileEntry:
    root: Path  # the resolved workspace root
    path: str  # relative to root, '/'-separated
    size: int
    mtime_ns: int

    @property
    def abs_path(self) -> Path:
        """root / path (through a symlink when the file is one); made when asked: a scan
        lists every file, and a one-shot search only compares their sizes and times."""
        return self.root / self.path


@dataclass(frozen=True)
class Skipped:
    path: str  # relative to root; a directory ends with '/'
    reason: str


@dataclass
class ScanResult:
    files: list[FileEntry] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


@dataclass(frozen=True)
class _Ignore:
    """One .gitignore file, placed relative to the root."""

    base: str  # the file's folder relative to the root ('' or 'sub/dir/')
    prefix: str  # for files above the root: the root's path relative to their folder + '/'
    spec: GlobList

    def decide(self, rel: str) -> bool | None:
        """True: ignored, False: re-included by a negation, None: no pattern matches."""
        if not rel.startswith(self.base):
            return None
        return self.spec.decide(self.prefix + rel[len(self.base) :])


_Chain = tuple[_Ignore, ...]


def _is_ignored(chain: _Chain, rel: str) -> bool:
    for ignore in reversed(chain):  # the deepest file with a matching pattern decides
        decision = ignore.decide(rel)
        if decision is not None:
            return decision
    return False


def _compile(patterns: Iterable[str], setting: str) -> GlobList:
    def refused(err: GlobRefused) -> None:
        log.warning("kb.%s: ignoring %s", setting, err)

    return GlobList(patterns, refused)


def _human_size(size: int) -> str:
    if size >= _MIB:
        return f"{size / _MIB:.1f}".removesuffix(".0") + " MiB"
    if size >= 1024:
        return f"{size / 1024:.1f}".removesuffix(".0") + " KiB"
    return f"{size} bytes"


def _too_large(limit: int, size: int) -> str:
    return f"larger than the {_human_size(limit)} size limit ({_human_size(size)})"


def _real(path: str | Path) -> str:
    """`os.path.realpath`, which raises when a link is swapped while it is resolved
    (readlink of what just stopped being a link): then "", which is inside nothing."""
    try:
        return os.path.realpath(path)
    except OSError:
        return ""


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


class WorkspaceRoot:
    """One workspace folder: its file rules (module docstring) and path confinement."""

    def __init__(self, root: Path, settings: Settings) -> None:
        self._given_root = Path(os.path.abspath(root))
        self.root = Path(root).resolve()
        self._root_str = str(self.root)
        self.settings = settings
        self._include = _compile(settings.include, "include")
        self._exclude = _compile(settings.exclude, "exclude")
        # .gitignore specs by folder, with the (mtime_ns, size) they were read at.
        self._gitignores: dict[Path, tuple[int, int, GlobList | None]] = {}
        self._outer = self._outer_ignores() if settings.respect_gitignore else ()

    def patterns(self) -> set[str]:
        """Every glob of these rules: the settings' and each ignore file's read so far
        (what a sync keeps translated for a one-shot scan: `glob_memo.py`)."""
        lists = [self._include, self._exclude]
        lists += [spec for _, _, spec in self._gitignores.values() if spec is not None]
        return {pattern for globs in lists for pattern in globs.patterns}

    # --- the walk -------------------------------------------------------------------------

    def scan(self) -> ScanResult:
        """Every file of the knowledge base under the root, and what was skipped and why."""
        result = ScanResult()
        visited: set[tuple[int, int]] = set()
        try:
            root_stat = os.stat(self.root)
        except OSError as err:
            result.skipped.append(Skipped("./", f"workspace folder not readable ({err})"))
            return result
        visited.add((root_stat.st_dev, root_stat.st_ino))
        # Real folders first, linked folders once nothing else is left (module docstring).
        stack: list[tuple[Path, str, _Chain]] = [(self.root, "", self._outer)]
        linked: list[tuple[Path, str, _Chain]] = []
        while stack or linked:
            abs_dir, rel_dir, chain = stack.pop() if stack else linked.pop(0)
            if rel_dir and not self._enter(abs_dir, visited):
                continue
            self._scan_dir(abs_dir, rel_dir, chain, result, stack, linked)
        result.files.sort(key=lambda entry: entry.path)
        return result

    def _enter(self, abs_dir: Path, visited: set[tuple[int, int]]) -> bool:
        try:
            st = os.stat(abs_dir)
        except OSError:
            return False
        key = (st.st_dev, st.st_ino)
        if key in visited:
            return False
        visited.add(key)
        return True

    def _scan_dir(
        self,
        abs_dir: Path,
        rel_dir: str,
        chain: _Chain,
        result: ScanResult,
        stack: list[tuple[Path, str, _Chain]],
        linked: list[tuple[Path, str, _Chain]],
    ) -> None:
        shown = escaped(rel_dir or ".") + "/"
        try:
            with os.scandir(abs_dir) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except (FileNotFoundError, NotADirectoryError):
            return
        except PermissionError:
            result.skipped.append(Skipped(shown, "folder not readable (permission denied)"))
            return
        except OSError as err:
            result.skipped.append(Skipped(shown, f"folder not readable ({err.strerror})"))
            return
        names = {entry.name for entry in entries}
        if rel_dir and _VENV_MARKER in names:
            return
        if self.settings.respect_gitignore and _GITIGNORE in names:
            chain = self._with_gitignore(chain, abs_dir, rel_dir)
        subdirs: list[tuple[Path, str, _Chain]] = []
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                is_dir = entry.is_dir()
                is_link = entry.is_symlink()
            except OSError:
                continue
            if is_dir:
                if self._dir_excluded(entry.name, rel, chain):
                    continue
                if not is_link:
                    subdirs.append((Path(entry.path), rel, chain))
                elif _inside(_real(entry.path), self._root_str):
                    linked.append((Path(entry.path), rel, chain))
                else:
                    result.skipped.append(
                        Skipped(rel + "/", "symbolic link to a folder outside the workspace")
                    )
                continue
            found = self._file(entry.path, rel, chain, is_link)
            if isinstance(found, FileEntry):
                result.files.append(found)
            elif found is not None:
                result.skipped.append(found)
        stack.extend(reversed(subdirs))

    def _dir_excluded(self, name: str, rel: str, chain: _Chain) -> bool:
        rel = escaped(rel)  # globs read a name that is not UTF-8 as `names.py` writes it
        if name in ALWAYS_EXCLUDED_DIRS or name.endswith(".egg-info"):
            return True
        if self._exclude.matches(rel + "/"):
            return True
        return self.settings.respect_gitignore and _is_ignored(chain, rel + "/")

    def _file(
        self, abs_path: str, rel: str, chain: _Chain, is_link: bool
    ) -> FileEntry | Skipped | None:
        text = is_text(rel)
        rel = escaped(rel)  # globs read a name that is not UTF-8 as `names.py` writes it
        if not self._include.matches(rel) or self._exclude.matches(rel):
            return None
        if self.settings.respect_gitignore and _is_ignored(chain, rel):
            return None
        if not text:
            return Skipped(rel, NOT_TEXT)
        if is_link and not _inside(_real(abs_path), self._root_str):
            return Skipped(rel, "symbolic link to a file outside the workspace")
        try:
            st = os.stat(abs_path)
        except FileNotFoundError:
            # Gone since it was listed, or a link to nothing.
            return Skipped(rel, "broken symbolic link") if is_link else None
        except PermissionError:
            return Skipped(rel, "permission denied")
        except OSError as err:
            return Skipped(rel, f"could not be read ({err.strerror})")
        reason = not_regular(st.st_mode)
        if reason is not None:
            return Skipped(rel, reason)
        limit = self.settings.max_file_size
        if st.st_size > limit:
            return Skipped(rel, _too_large(limit, st.st_size))
        return FileEntry(self.root, rel, st.st_size, st.st_mtime_ns)

    # --- .gitignore files -----------------------------------------------------------------

    def _gitignore(self, folder: Path, name: str = _GITIGNORE) -> GlobList | None:
        path = folder / name
        try:
            st = os.stat(path)
        except OSError:
            return None
        cached = self._gitignores.get(path)
        if cached and cached[:2] == (st.st_mtime_ns, st.st_size):
            return cached[2]
        try:
            # Read like a Markdown file (one descriptor, never blocking on a named pipe),
            # confined to its own folder: like git (2.32+), an ignore file that is a link
            # elsewhere is not used.
            data = read_confined(path, Path(os.path.realpath(folder)), _GITIGNORE_MAX_SIZE)
            lines = data.decode("utf-8", errors="replace").splitlines()
        except UnreadableFile as err:
            log.warning("%s is not used: %s", path, err.reason)
            spec: GlobList | None = None
        else:

            def refused(err: GlobRefused) -> None:
                log.warning("%s: ignoring %s", path, err)

            spec = GlobList(lines, refused)
        self._gitignores[path] = (st.st_mtime_ns, st.st_size, spec)
        return spec

    def _with_gitignore(self, chain: _Chain, abs_dir: Path, rel_dir: str) -> _Chain:
        spec = self._gitignore(abs_dir)
        if spec is None:
            return chain
        return (*chain, _Ignore(f"{rel_dir}/" if rel_dir else "", "", spec))

    def _outer_ignores(self) -> _Chain:
        """`.git/info/exclude` and the `.gitignore` files above the root, up to the top of
        the repository the root is in (nothing when it is in none)."""
        top = next((d for d in (self.root, *self.root.parents) if (d / ".git").exists()), None)
        if top is None:
            return ()

        def placed(folder: Path, spec: GlobList | None) -> list[_Ignore]:
            if spec is None:
                return []
            prefix = "" if folder == self.root else self.root.relative_to(folder).as_posix()
            return [_Ignore("", prefix + "/" if prefix else "", spec)]

        chain = placed(top, self._gitignore(top / ".git" / "info", "exclude"))
        above: list[Path] = []
        if top != self.root:
            for folder in self.root.parents:
                above.append(folder)
                if folder == top:
                    break
        for folder in reversed(above):  # shallowest first: deeper files win
            chain += placed(folder, self._gitignore(folder))
        return tuple(chain)

    # --- single paths (watcher events, lookups) -------------------------------------------

    def _chain_for(self, folders: list[str]) -> _Chain | None:
        """The ignore chain inside root-relative folder parts; None if one is excluded."""
        chain = self._outer
        abs_dir, rel_dir = self.root, ""
        if self.settings.respect_gitignore:
            chain = self._with_gitignore(chain, abs_dir, rel_dir)
        for part in folders:
            rel_dir = f"{rel_dir}/{part}" if rel_dir else part
            abs_dir = abs_dir / part
            if self._dir_excluded(part, rel_dir, chain):
                return None
            if os.path.exists(abs_dir / _VENV_MARKER):
                return None
            if self.settings.respect_gitignore:
                chain = self._with_gitignore(chain, abs_dir, rel_dir)
        return chain

    def entry(self, abs_path: Path) -> FileEntry | Skipped | None:
        """One file: None when it is not part of the knowledge base (excluded, not
        Markdown, missing, a directory, outside the root)."""
        rel = self.relative(abs_path)
        if not rel:
            return None
        parts = rel.split("/")
        chain = self._chain_for(parts[:-1])
        if chain is None:
            return None
        path = self.root / rel
        try:
            st = os.lstat(path)
        except OSError:
            return None
        if stat.S_ISDIR(st.st_mode):
            return None
        if not _inside(os.path.realpath(path.parent), self._root_str):
            return None  # reached through a linked folder leading out, which scan skips
        return self._file(str(path), rel, chain, stat.S_ISLNK(st.st_mode))

    def is_ignored_dir(self, abs_dir: Path) -> bool:
        """True for a folder whose contents are never part of the knowledge base (also
        for folders outside the root): the watcher does not need to watch it."""
        rel = self.relative(abs_dir)
        if rel is None:
            return True
        if not rel:
            return False
        return self._chain_for(rel.split("/")) is None

    def relative(self, abs_path: Path) -> str | None:
        """`abs_path` relative to the root, '/'-separated ('' for the root itself), or None
        when it is outside. The root may be given as written or as its real path."""
        path = Path(os.path.abspath(abs_path))
        for base in (self.root, self._given_root):
            if path.is_relative_to(base):
                rel = path.relative_to(base).as_posix()
                return "" if rel == "." else rel
        # A path reached through a linked parent folder (e.g. /tmp → /private/tmp).
        try:
            real = Path(os.path.realpath(path.parent)) / path.name
        except OSError:
            return None
        if real.is_relative_to(self.root):
            rel = real.relative_to(self.root).as_posix()
            return "" if rel == "." else rel
        return None

    # --- confinement ----------------------------------------------------------------------

    def read(self, rel: str) -> tuple[bytes, str]:
        """The bytes and text of the file at root-relative `rel`, read by `read_confined`:
        one descriptor, checked to be a regular file inside the root and within
        `kb.maxFileSize`. Raises `UnreadableFile` (and `PathOutsideWorkspace` for a path
        that leaves the root as written)."""
        joined = os.path.normpath(os.path.join(self._root_str, rel))
        if os.path.isabs(rel) or not _inside(joined, self._root_str):
            raise PathOutsideWorkspace(f"{rel!r} is outside the workspace")
        data = read_confined(Path(joined), self.root, self.settings.max_file_size)
        return data, decode_markdown(data)

    def resolve_inside(self, user_path: str) -> Path:
        """The real absolute path of a root-relative path (`payments/mexico.md`, `./a.md`;
        '' and '.' are the root itself). Raises `PathOutsideWorkspace` for an absolute
        path, a `..` that leaves the root, or a path whose real location (symbolic links
        resolved) is outside the root's real location. The path need not exist: whether
        it does is the caller's concern."""
        shown = user_path
        if "\x00" in user_path:
            raise PathOutsideWorkspace(f"{shown!r} is not a valid path (it contains a NUL)")
        if os.path.isabs(user_path) or PurePosixPath(user_path).is_absolute():
            raise PathOutsideWorkspace(
                f"{shown!r} is outside the workspace: give a path relative to the "
                f"workspace folder, such as 'notes/todo.md'"
            )
        joined = os.path.normpath(os.path.join(self._root_str, user_path))
        if not _inside(joined, self._root_str):
            raise PathOutsideWorkspace(f"{shown!r} is outside the workspace")
        real = os.path.realpath(joined)
        if not _inside(real, self._root_str):
            raise PathOutsideWorkspace(
                f"{shown!r} is outside the workspace (it is a link to a place outside it)"
            )
        return Path(real)


# O_NOFOLLOW refuses a link as the last component; O_NONBLOCK makes opening a FIFO return
# at once (it is then refused by fstat) instead of waiting for a writer.
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
# What opening a link with O_NOFOLLOW fails with (FreeBSD says EMLINK).
_ELOOP = {errno.ELOOP, errno.EMLINK}


def not_regular(mode: int) -> str | None:
    """Why a file of this mode cannot be indexed; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a folder, not a file"
    if stat.S_ISFIFO(mode):
        return "not a regular file (a named pipe)"
    if stat.S_ISSOCK(mode):
        return "not a regular file (a socket)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "not a regular file (a device)"
    return "not a regular file"


def _descriptor_path(fd: int) -> str | None:
    """Where the open file `fd` is, as the kernel sees it (None when it cannot say)."""
    proc = f"/proc/self/fd/{fd}"
    if os.path.islink(proc):
        try:
            return os.readlink(proc)
        except OSError:
            return None
    get_path = getattr(fcntl, "F_GETPATH", None) if fcntl is not None else None
    if get_path is not None:  # macOS
        try:
            raw = fcntl.fcntl(fd, get_path, b"\0" * 1024)
        except OSError:
            return None
        return os.fsdecode(raw.split(b"\0", 1)[0])
    return None


def _check_confined(fd: int, st: os.stat_result, path: Path, root: Path) -> None:
    """Raise `UnreadableFile` unless the open file `fd` is inside `root` (resolved).

    Checked on the descriptor, not on the path: whatever the path became between the
    scan and the open (a link, a linked folder), what was opened is what is judged."""
    where = _descriptor_path(fd)
    if where is not None:
        if where.endswith(" (deleted)"):
            raise UnreadableFile("deleted while reading")
        if not _inside(where, str(root)):
            raise UnreadableFile("symbolic link to a file outside the workspace")
        return
    # No way to ask the kernel: the file the path leads to now must be the one opened.
    real = _real(path)
    try:
        now = os.stat(real)
    except OSError:
        raise UnreadableFile("deleted while reading") from None
    if not _inside(real, str(root)) or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
        raise UnreadableFile("symbolic link to a file outside the workspace")


def _open_error(err: OSError) -> UnreadableFile:
    if isinstance(err, FileNotFoundError):
        return UnreadableFile("deleted while reading")
    if isinstance(err, PermissionError):
        return UnreadableFile("permission denied")
    if isinstance(err, IsADirectoryError):
        return UnreadableFile("a folder, not a file")
    return UnreadableFile(f"could not be read ({err.strerror or err})")


def read_confined(path: Path, root: Path, max_size: int) -> bytes:
    """The bytes of the regular file at `path`, which must be inside `root` (resolved).

    One descriptor is opened without following a final link (a link inside the root is
    opened at its target), checked with `fstat` (a regular file within `max_size`) and
    with the kernel's idea of where it is (inside `root`), and read: nothing a racing
    process does to the path in between changes what is read. Raises `UnreadableFile`.
    """
    try:
        try:
            fd = os.open(path, _OPEN_FLAGS)
        except OSError as err:
            if err.errno not in _ELOOP:
                raise
            # The path is a link: follow it only to a place inside the root.
            try:
                target = os.path.realpath(path)
            except OSError:
                raise UnreadableFile("changed while reading (a symbolic link)") from None
            if not _inside(target, str(root)):
                raise UnreadableFile("symbolic link to a file outside the workspace") from None
            fd = os.open(target, _OPEN_FLAGS)
    except UnreadableFile:
        raise
    except OSError as err:
        if err.errno in _ELOOP:  # still a link: it is being swapped under us
            raise UnreadableFile("changed while reading (a symbolic link)") from None
        raise _open_error(err) from None
    try:
        st = os.fstat(fd)
        reason = not_regular(st.st_mode)
        if reason is not None:
            raise UnreadableFile(reason)
        if st.st_size > max_size:
            raise UnreadableFile(_too_large(max_size, st.st_size))
        _check_confined(fd, st, path, root)
        chunks: list[bytes] = []
        size = 0
        while True:  # the file may grow after fstat: never read past the limit
            chunk = os.read(fd, min(_MIB, max_size + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > max_size:
                raise UnreadableFile(_too_large(max_size, size))
        return b"".join(chunks)
    except OSError as err:
        raise _open_error(err) from None
    finally:
        os.close(fd)


def decode_markdown(data: bytes) -> str:
    """The text of a Markdown file's bytes (UTF-8, an optional BOM dropped).

    Raises `UnreadableFile` with "binary file" or "not valid UTF-8 (…)"."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise UnreadableFile("not valid UTF-8 (it looks like UTF-16)")
    if b"\x00" in data:
        raise UnreadableFile("binary file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UnreadableFile("not valid UTF-8") from None


def read_markdown(
    abs_path: Path, root: Path | None = None, max_size: int | None = None
) -> tuple[bytes, str]:
    """The file's bytes and its text, read by `read_confined` (inside `root`, by default
    the file's own folder, and within `max_size`, by default no limit).

    Raises `UnreadableFile` with the reason "binary file", "not valid UTF-8",
    "permission denied", "deleted while reading", "not a regular file (…)", "symbolic
    link to a file outside the workspace" or another `could not be read (...)`.
    """
    if root is None:
        root = Path(os.path.realpath(Path(abs_path).parent))
    data = read_confined(Path(abs_path), root, sys.maxsize if max_size is None else max_size)
    return data, decode_markdown(data)
