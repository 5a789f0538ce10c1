"""Logs stay small whatever is logged: records are cut (`BoundedFormatter`) and the file
rotation then bounds the files, even when every record is a 10 MB query."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from kb_lsp.runtime import logs
from kb_lsp.runtime.logs import (
    LOG_BACKUPS,
    LOG_BYTES,
    MAX_MESSAGE_CHARS,
    MAX_TRACEBACK_CHARS,
    BoundedFormatter,
)

# One record at most: the message, a traceback and the line's prefix.
RECORD = MAX_MESSAGE_CHARS + MAX_TRACEBACK_CHARS + 1024


@pytest.fixture
def logger(tmp_path: Path) -> Iterator[logging.Logger]:
    """A logger writing only to the file handler `log_to_file` installs (not propagating:
    pytest's own capture would keep, and on failure print, every 10 MB record)."""
    path = logs.log_to_file(tmp_path)
    assert path == tmp_path / logs.LOG_FILE
    # The handler `log_to_file` put on the root logger (where the libraries' warnings go).
    (handler,) = [
        h
        for h in logging.getLogger().handlers
        if isinstance(h, logging.FileHandler) and h.baseFilename == str(path)
    ]
    logger = logging.Logger("kb_lsp.tests.bounds", logging.INFO)
    logger.addHandler(handler)
    yield logger
    logger.removeHandler(handler)


def test_ten_mb_records_leave_bounded_files(tmp_path: Path, logger: logging.Logger) -> None:
    query = "x" * 10_000_000
    for _ in range(5):
        logger.warning("rejected kb/search: %s", query)
    for _ in range(2000):  # 4 MB once cut: the file is rotated a few times
        logger.warning("rejected kb/search: %s", "z" * 100_000)
    logger.warning("rejected kb/search: %s", query)
    try:
        raise ValueError("y" * 1_000_000)
    except ValueError:
        logger.exception("internal error in kb/search")
    files = sorted(tmp_path.glob(f"{logs.LOG_FILE}*"))
    sizes = [path.stat().st_size for path in files]
    assert len(files) == LOG_BACKUPS + 1  # it was rotated, and old files are dropped
    assert max(sizes) <= LOG_BYTES + RECORD
    assert sum(sizes) <= (LOG_BACKUPS + 1) * (LOG_BYTES + RECORD)
    text = (tmp_path / logs.LOG_FILE).read_text(encoding="utf-8")
    assert f"[cut: {len('rejected kb/search: ') + len(query)} characters in all]" in text
    assert "Traceback" in text and "[cut:" in text.split("Traceback", 1)[1]


def test_short_records_are_left_alone() -> None:
    formatter = BoundedFormatter("%(message)s")
    record = logging.LogRecord("kb_lsp", logging.INFO, __file__, 1, "a %s", ("b",), None)
    assert formatter.format(record) == "a b"
    long = logging.LogRecord("kb_lsp", logging.INFO, __file__, 1, "q" * 5000, None, None)
    text = formatter.format(long)
    assert text.startswith("q" * MAX_MESSAGE_CHARS) and len(text) < MAX_MESSAGE_CHARS + 100
    assert long.getMessage() == "q" * 5000  # the record other handlers see is unchanged
