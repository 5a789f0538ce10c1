"""A reindex answered with the status once its sync ended, its failures in the
contract's kinds (`kb/reindex`)."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable
from typing import TypeVar

from kb_lsp.engine.knowledge import ReadOnlyStore, SyncReport
from kb_lsp.errors import Failed, KbError, Unavailable
from kb_lsp.protocol import IndexStatus

T = TypeVar("T")


def status_after(
    sync: concurrent.futures.Future[SyncReport],
    read_status: Callable[[], concurrent.futures.Future[IndexStatus]],
) -> concurrent.futures.Future[IndexStatus]:
    """The status `read_status()` gives once `sync` ended; a read-only index is
    `Unavailable`, a sync that broke `Failed`."""
    answer: concurrent.futures.Future[IndexStatus] = concurrent.futures.Future()

    def done(ended: concurrent.futures.Future[SyncReport]) -> None:
        try:
            ended.result()
        except ReadOnlyStore as err:
            answer.set_exception(Unavailable(f"The index is read-only: {err}"))
        except (KbError, concurrent.futures.CancelledError) as err:
            answer.set_exception(err)
        except Exception as err:
            answer.set_exception(Failed(f"Reindexing failed: {err}"))
        else:
            read_status().add_done_callback(lambda read: _settle(answer, read))

    sync.add_done_callback(done)
    return answer


def _settle(answer: concurrent.futures.Future[T], done: concurrent.futures.Future[T]) -> None:
    """`answer` ends as `done` did."""
    error = done.exception()
    if error is not None:
        answer.set_exception(error)
    else:
        answer.set_result(done.result())
