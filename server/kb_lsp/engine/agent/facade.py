"""The question-answering agent over one knowledge base: `kb/ask` (its stages are in
`ask.py`) and `kb/summarize`."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from kb_lsp.config import Settings
from kb_lsp.engine.agent import sampling
from kb_lsp.engine.agent.ask import run as run_request
from kb_lsp.engine.agent.conversations import Conversations
from kb_lsp.engine.agent.errors import InvalidInput
from kb_lsp.engine.agent.focus import no_list
from kb_lsp.engine.agent.request import AskOutcome, Request, cut_off_note
from kb_lsp.engine.agent.summarize import Summarizer
from kb_lsp.engine.agent.tools import Toolbox, ToolError
from kb_lsp.engine.knowledge import FileInfo, KnowledgeBase
from kb_lsp.engine.llm import ChatModel, ModelUnavailable, create_llm
from kb_lsp.engine.workspace.files import UnreadableFile
from kb_lsp.protocol import AskParams, SearchHit, Step, SummarizeResponse

log = logging.getLogger(__name__)


class Agent:
    """Answers questions over one `KnowledgeBase` with the configured model
    (`kb.llm.*`, else `kb.ollama.*`: `create_llm`).

    Thread-safe: requests share only the conversation memory (locked) and the knowledge
    base (whose readers may run concurrently).
    """

    def __init__(
        self,
        kb: KnowledgeBase,
        settings: Settings,
        llm: ChatModel | None = None,
        *,
        conversations: Conversations | None = None,
    ) -> None:
        self.kb = kb
        self.settings = settings
        # Made on first use: the HTTP clients take longer to import than a one-shot
        # command's search, which never talks to the model.
        self._llm = llm
        self._summarizer: Summarizer | None = None
        self._made = threading.RLock()
        self.conversations = conversations or Conversations()

    @property
    def llm(self) -> ChatModel:
        with self._made:
            if self._llm is None:
                self._llm = create_llm(self.settings)
            return self._llm

    @property
    def has_llm(self) -> bool:
        """Whether the model's client is made yet."""
        return self._llm is not None

    @property
    def summarizer(self) -> Summarizer:
        with self._made:
            if self._summarizer is None:
                self._summarizer = Summarizer(self.kb, self.llm)
            return self._summarizer

    # --- kb/ask --------------------------------------------------------------------------

    def ask(
        self,
        params: AskParams,
        *,
        numbered: list[SearchHit] | None = None,
        numbered_query: str | None = None,
        on_event: Callable[[Step], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> AskOutcome:
        """Answer `params.question`; "file N" is entry N of `numbered` (the client's last
        list, made for `numbered_query`). Never raises for what can go wrong in a request
        (bad references, tool errors, no model, cancellation): those end in `stop`."""
        request = Request(self, params, numbered, on_event, cancel or threading.Event())
        request.numbered_query = numbered_query
        try:
            return run_request(request)
        finally:
            request.stream.abandon()  # its thread ends with the request, whatever happened

    # --- kb/summarize ----------------------------------------------------------------------

    def target(self, file: str | None, n: int | None, numbered: list[SearchHit] | None) -> FileInfo:
        """The file `kb/summarize {file?, n?}` means; `InvalidInput` when there is none."""
        if file:
            try:
                return Toolbox(self.kb, self.summarizer).file(file)
            except ToolError as err:
                raise InvalidInput(str(err)) from err
        if n is not None:
            if not numbered or n > len(numbered) or n < 1:
                raise InvalidInput(no_list(f"result {n}", numbered))
            info = self.kb.file_info(numbered[n - 1].path)
            if info is None:
                raise InvalidInput(f"{numbered[n - 1].path} is no longer in the knowledge base.")
            return info
        raise InvalidInput("Say which file to summarize: give `file` (a path) or `n`.")

    def summarize(
        self,
        file: str | None = None,
        n: int | None = None,
        *,
        numbered: list[SearchHit] | None = None,
        cancel: threading.Event | None = None,
    ) -> SummarizeResponse:
        """`kb/summarize`: the cached or a new model summary; an extractive one, marked
        `extractive`, when no model can answer. Raises `InvalidInput` for a bad target,
        `LlmCancelled` when cancelled, other `LlmError`s (timeout, HTTP 500, `EmptyAnswer`)
        as they are. A summary cut at the token limit says so at its end."""
        info = self.target(file, n, numbered)
        try:
            summary = self.summarizer.summarize(info, cancel=cancel or threading.Event())
        except ModelUnavailable as err:
            log.info("summary of %s is extractive: %s", info.path, err)
            summary = self.summarizer.extractive(info)
        except UnreadableFile as err:
            raise InvalidInput(f"{info.path} cannot be read now: {err.reason}.") from err
        text = summary.text
        if summary.truncated:
            text += "\n\n" + cut_off_note(self.llm, sampling.summary_max_tokens(self.llm))
        return SummarizeResponse(
            path=info.path,
            summary=text,
            cached=summary.cached,
            extractive=summary.extractive,
        )
