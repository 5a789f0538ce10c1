"""Where links resolve, and the incoming anchor texts on the note cards kept current by
re-resolving only the links a change can re-target.

Links resolve by name (`links.Resolver`), so a file that appears, disappears, is renamed
or changes its aliases can re-target links in files that did not change. The store keeps,
beside the links as written (`file_links`):

* `link_targets(path, target, credit)`: where each link of `path` resolves and the text
  it credits the target with (`Resolver.resolve`), for the links that resolve;
* `link_names(name, path)`: the keys (`links.name_key`) the links of `path` look files
  up by; `file_names(name, path)`: the keys `path` answers to (its path, its aliases);
* `anchors_due(path, named)`: what the next refresh redoes — written in the transaction
  that writes or removes a file (`forget`), so a refresh a crash skipped is still due:
  `named` 1 for the file itself (its names changed), 0 for a note its old links credited.

A refresh (`refresh_due`) re-resolves the links of the files due, of the files whose links
look up a key a due file answers to now, and of the files whose links resolved to a due
file; then rewrites the anchors of every note whose credits changed. That is the same
answer as resolving every link again (`refresh_all`, after a whole sync): a file's
disappearing (or losing an alias) only re-targets the links that resolved to it, and its
appearing (or gaining one) only the links that look up one of its keys.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterable, Sequence

from kb_lsp.engine.metadata import cards
from kb_lsp.engine.metadata.links import (
    Resolver,
    StoredLink,
    file_names,
    lookup_names,
    name_key,
    rank_anchors,
)

Credit = tuple[str, str]  # (target, text credited)


def forget(db: sqlite3.Connection, path: str) -> None:
    """Before `path`'s links and names are replaced or removed: the notes its links
    credited, and the file itself, are due for the next refresh."""
    db.execute(
        "INSERT OR IGNORE INTO anchors_due(path, named) "
        "SELECT DISTINCT target, 0 FROM link_targets WHERE path = ?",
        (path,),
    )
    db.execute("INSERT OR REPLACE INTO anchors_due(path, named) VALUES (?, 1)", (path,))
    for table in ("link_targets", "link_names", "file_names"):
        db.execute(f"DELETE FROM {table} WHERE path = ?", (path,))


def remember(
    db: sqlite3.Connection, path: str, links: Iterable[StoredLink], aliases: Iterable[str]
) -> None:
    """The keys `path`'s links look up and the keys it answers to (after `forget`)."""
    looked_up = {name for link in links for name in lookup_names(link)}
    db.executemany(
        "INSERT INTO link_names(name, path) VALUES (?, ?)", [(n, path) for n in looked_up]
    )
    db.executemany(
        "INSERT INTO file_names(name, path) VALUES (?, ?)",
        [(n, path) for n in file_names(path, aliases)],
    )


def any_due(db: sqlite3.Connection) -> bool:
    return db.execute("SELECT 1 FROM anchors_due LIMIT 1").fetchone() is not None


def refresh_all(db: sqlite3.Connection) -> int:
    """Resolve every link again and rewrite the cards whose anchor texts changed;
    returns how many changed. Runs inside the caller's write transaction."""
    paths = [str(row[0]) for row in db.execute("SELECT path FROM files")]
    resolver = _resolver(db, paths)
    credits = _credits(resolver, _links(db, "SELECT path, kind, target, text FROM file_links"))
    db.execute("DELETE FROM link_targets")
    db.execute("DELETE FROM anchors_due")
    _keep(db, credits)
    return _write_anchors(db, paths)


def refresh_due(db: sqlite3.Connection) -> int:
    """Re-resolve the links the files due can re-target (the module doc) and rewrite the
    cards whose anchor texts changed; returns how many changed. Runs inside the caller's
    write transaction."""
    due = {
        str(path): bool(named) for path, named in db.execute("SELECT path, named FROM anchors_due")
    }
    if not due:
        return 0
    named = [path for path, is_named in due.items() if is_named]
    keys = {name_key(path) for path in named}
    keys.update(str(row[0]) for row in _in(db, "SELECT name FROM file_names WHERE path", named))
    sources = {str(r[0]) for r in _in(db, "SELECT path FROM files WHERE path", named)}
    sources.update(str(r[0]) for r in _in(db, "SELECT path FROM link_names WHERE name", keys))
    sources.update(str(r[0]) for r in _in(db, "SELECT path FROM link_targets WHERE target", named))
    links = _links(db, "SELECT path, kind, target, text FROM file_links WHERE path", sources)
    wanted = {name for link in links for name in lookup_names(link)}
    candidates = [str(r[0]) for r in _in(db, "SELECT path FROM file_names WHERE name", wanted)]
    new = _credits(_resolver(db, candidates), links)
    old: dict[str, list[Credit]] = {}
    for path, target, credit in _in(
        db, "SELECT path, target, credit FROM link_targets WHERE path", sources
    ):
        old.setdefault(str(path), []).append((str(target), str(credit)))
    targets = set(due)
    moved = {s for s in sources if Counter(old.get(s, ())) != Counter(new.get(s, ()))}
    for source in moved:
        targets.update(target for target, _ in (*old.get(source, ()), *new.get(source, ())))
    db.executemany("DELETE FROM link_targets WHERE path = ?", [(s,) for s in moved])
    _keep(db, {s: new[s] for s in moved if s in new})
    db.execute("DELETE FROM anchors_due")
    present = [str(r[0]) for r in _in(db, "SELECT path FROM files WHERE path", targets)]
    return _write_anchors(db, present)


def _resolver(db: sqlite3.Connection, paths: Sequence[str]) -> Resolver:
    aliases = {
        str(path): [a for a in str(names).split("\n") if a]
        for path, names in _in(db, "SELECT path, aliases FROM note_cards WHERE path", paths)
    }
    return Resolver(paths, aliases)


def _links(
    db: sqlite3.Connection, sql: str, paths: Iterable[str] | None = None
) -> list[StoredLink]:
    rows = db.execute(sql) if paths is None else _in(db, sql, paths)
    return [StoredLink(str(s), str(kind), str(target), str(text)) for s, kind, target, text in rows]


def _credits(resolver: Resolver, links: Iterable[StoredLink]) -> dict[str, list[Credit]]:
    """linking file -> (target, text credited) of each of its links that resolves."""
    out: dict[str, list[Credit]] = {}
    for link in links:
        target, text = resolver.resolve(link)
        if target is not None:
            out.setdefault(link.source, []).append((target, text))
    return out


def _keep(db: sqlite3.Connection, credits: dict[str, list[Credit]]) -> None:
    db.executemany(
        "INSERT INTO link_targets(path, target, credit) VALUES (?, ?, ?)",
        [(source, target, text) for source, pairs in credits.items() for target, text in pairs],
    )


def _write_anchors(db: sqlite3.Connection, paths: Sequence[str]) -> int:
    """Rewrite the anchor texts of `paths`' cards from `link_targets`; how many changed."""
    if not paths:
        return 0
    cards_now: Iterable[tuple[object, ...]]
    if len(paths) > 400:  # a whole refresh: one pass over the table beats many lookups
        rows = list(db.execute("SELECT path, target, credit FROM link_targets"))
        cards_now = db.execute("SELECT path, anchors FROM note_cards")
    else:
        rows = list(_in(db, "SELECT path, target, credit FROM link_targets WHERE target", paths))
        cards_now = _in(db, "SELECT path, anchors FROM note_cards WHERE path", paths)
    current = {str(path): str(anchors) for path, anchors in cards_now}
    ranked = rank_anchors((str(s), str(t), str(c)) for s, t, c in rows)
    return sum(
        cards.set_anchors(db, path, "\n".join(ranked.get(path, ())), current.get(path))
        for path in paths
    )


def _in(db: sqlite3.Connection, sql: str, values: Iterable[str]) -> Iterable[tuple[object, ...]]:
    """Rows of `sql` ending in a column to match, for each of `values` (`IN`, in batches
    below SQLite's limit on bound parameters)."""
    unique = list(dict.fromkeys(values))
    for start in range(0, len(unique), 400):
        part = unique[start : start + 400]
        yield from db.execute(f"{sql} IN ({','.join('?' * len(part))})", part)
