"""The tables where links resolve and the names they look files up by (`anchors.py` keeps
them): their schema apart, so that a store opened to read them loads neither the link
resolver nor its patterns (a one-shot keyword search)."""

DDL = """
CREATE TABLE IF NOT EXISTS link_targets (
    path TEXT NOT NULL,
    target TEXT NOT NULL,
    credit TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS link_targets_path ON link_targets(path);
CREATE INDEX IF NOT EXISTS link_targets_target ON link_targets(target);
CREATE TABLE IF NOT EXISTS link_names (name TEXT NOT NULL, path TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS link_names_name ON link_names(name);
CREATE INDEX IF NOT EXISTS link_names_path ON link_names(path);
CREATE TABLE IF NOT EXISTS file_names (name TEXT NOT NULL, path TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS file_names_name ON file_names(name);
CREATE INDEX IF NOT EXISTS file_names_path ON file_names(path);
CREATE TABLE IF NOT EXISTS anchors_due (path TEXT PRIMARY KEY, named INTEGER NOT NULL);
"""

TABLES = ("link_targets", "link_names", "file_names", "anchors_due")
