"""`kb.llm.provider = ollama`: Ollama's own API through the official `ollama` client.

Capabilities come from `/api/show` (`capabilities` lists `tools` for models that call
tools; older Ollama versions do not say, and then the agent is used as before; a
`template` that is only `{{ .Prompt }}` means the model has no chat template). A 404 is
told apart by asking `/api/tags`, which every Ollama answers: when it answers, the model is
missing (`ollama pull`); when it does not, the server is not Ollama at all (llama-server,
LM Studio, vLLM…), and the message says to set `kb.llm.provider` to `openai`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Iterator, Mapping
from typing import Any, ClassVar, cast

import httpx
import ollama

from kb_lsp.config import LlmProviderName
from kb_lsp.engine.llm.base import (
    CONNECT_TIMEOUT_SECONDS,
    HTTP_TIMEOUT_SLACK_SECONDS,
    ChatModel,
)
from kb_lsp.engine.llm.errors import (
    ContextTooLong,
    LlmError,
    LlmTimeout,
    LlmUnreachable,
    ModelNotFound,
    WrongApi,
)
from kb_lsp.engine.llm.shapes import Capabilities, Message, ToolCall
from kb_lsp.engine.llm.stream import Piece, Stream

log = logging.getLogger(__name__)

# `/api/show` templates of a model without a chat template: the prompt as it is.
_RAW_TEMPLATES = frozenset(["", "{{.Prompt}}", "{{.Prompt}}{{.Response}}"])


def unreachable_message(host: str, setting: str = "kb.ollama.host") -> str:
    return (
        f"Ollama is not reachable at {host}: start it with `ollama serve` "
        f"or set {setting} to where it runs."
    )


def model_missing_message(model: str, host: str) -> str:
    return f"The model {model} is not available in Ollama at {host}: run `ollama pull {model}`."


def wrong_api_message(host: str) -> str:
    return (
        f"The server at {host} answered HTTP 404 to Ollama's API: this server does not speak "
        "the Ollama API — set kb.llm.provider to openai (and kb.llm.baseUrl to its URL "
        "ending in /v1, e.g. http://127.0.0.1:8080/v1)."
    )


class OllamaChat(ChatModel):
    provider: ClassVar[LlmProviderName] = "ollama"
    label: ClassVar[str] = "Ollama"

    def _client(self, *, read_timeout: float | None = None) -> ollama.Client:
        timeout = (
            read_timeout if read_timeout is not None else self.timeout + HTTP_TIMEOUT_SLACK_SECONDS
        )
        return ollama.Client(
            host=self.host,
            timeout=httpx.Timeout(timeout, connect=min(CONNECT_TIMEOUT_SECONDS, timeout)),
        )

    # -- model checks --

    def list_models(self, *, timeout: float = 5.0) -> list[str]:
        """Names of the models pulled into the server (`/api/tags`)."""
        client = self._client(read_timeout=timeout)
        try:
            listing = client.list()
        except Exception as err:  # every failure becomes one typed error
            raise self._translate(err) from err
        finally:
            _close(client)
        return [model.model for model in listing.models if model.model]

    def has_model(self, name: str | None = None, *, timeout: float = 5.0) -> bool:
        """Whether `name` (default: the chat model) is pulled; `llama3` means `llama3:latest`."""
        wanted = _full_name(name or self.model)
        return any(_full_name(model) == wanted for model in self.list_models(timeout=timeout))

    def _probe(self, timeout: float) -> Capabilities:
        client = self._client(read_timeout=timeout)
        try:
            shown = client.show(self.model)
        except Exception as err:
            raise self._translate(err) from err
        finally:
            _close(client)
        listed = getattr(shown, "capabilities", None)
        tools = None if listed is None else "tools" in listed
        context = None
        for key, value in (getattr(shown, "modelinfo", None) or {}).items():
            if str(key).endswith(".context_length") and isinstance(value, int):
                context = value
        # Ollama runs the model with the num_ctx we send; the model's maximum is only
        # a ceiling for it.
        if context is not None and self.config.num_ctx is not None:
            context = min(context, self.config.num_ctx)
        template = getattr(shown, "template", None)
        own = None if template is None else "".join(str(template).split()) not in _RAW_TEMPLATES
        return Capabilities(tools=tools, context=context, model=self.model, chat_template=own)

    @property
    def num_ctx(self) -> int:
        # Sent with every request, so the setting is what the model runs with.
        return self.config.num_ctx or self.config.default_num_ctx

    # -- chat --

    def _open(
        self,
        messages: list[Message],
        tools: list[Mapping[str, Any]] | None,
        max_tokens: int,
        temperature: float | None,
        response_schema: Mapping[str, Any] | None = None,
    ) -> Stream:
        client = self._client()
        options: dict[str, Any] = {"num_ctx": self.num_ctx, "num_predict": max_tokens}
        if temperature is not None:
            options["temperature"] = temperature
        stream = client.chat(
            model=self.model,
            messages=[_message(m) for m in messages],
            tools=tools or None,
            stream=True,
            options=options,
            format=dict(response_schema) if response_schema is not None else None,
            keep_alive=self.config.keep_alive,
        )

        def pieces() -> Iterator[Piece]:
            for part in stream:
                message = part.message
                piece = Piece(content=message.content or "", thinking=message.thinking or "")
                for call in message.tool_calls or ():
                    piece.calls.append(
                        ToolCall(call.function.name, dict(call.function.arguments or {}))
                    )
                if part.done:
                    piece.prompt_tokens = part.prompt_eval_count or 0
                    piece.completion_tokens = part.eval_count or 0
                    piece.done_reason = part.done_reason
                yield piece

        def close() -> None:
            # Leaves the client's `with` block around the response, then drops the pool.
            cast("Generator[Any, None, None]", stream).close()
            _close(client)

        return Stream(pieces(), close, lambda: _close(client))

    # -- errors --

    def _translate(self, err: BaseException) -> LlmError:
        host, model = self.host, self.model
        if isinstance(err, LlmError):
            return err
        if isinstance(err, (httpx.ConnectError, httpx.ConnectTimeout, ConnectionError)):
            return LlmUnreachable(
                unreachable_message(host, self.config.base_url_setting), host=host, model=model
            )
        if isinstance(err, httpx.TimeoutException):
            return LlmTimeout(self.timeout_error().message, host=host, model=model)
        if isinstance(err, ollama.ResponseError):
            text = str(err.error)
            lowered = text.lower()
            if err.status_code == 404:
                if not self._speaks_ollama():
                    return WrongApi(wrong_api_message(host), host=host, model=model)
                return ModelNotFound(model_missing_message(model, host), host=host, model=model)
            if "not found" in lowered and "model" in lowered:
                return ModelNotFound(model_missing_message(model, host), host=host, model=model)
            if "context" in lowered and any(
                word in lowered for word in ("exceed", "too long", "length", "limit")
            ):
                return ContextTooLong(
                    f"The prompt is too long for the context of {model} "
                    f"({self.num_ctx} tokens): ask about one file, or raise "
                    f"{self.config.num_ctx_setting}. Ollama said: {text}",
                    host=host,
                    model=model,
                )
            status = f"HTTP {err.status_code}" if err.status_code > 0 else "an error"
            return LlmError(f"Ollama at {host} returned {status}: {text}", host=host, model=model)
        if isinstance(err, httpx.HTTPError):
            return LlmError(
                f"The connection to Ollama at {host} failed: {err}", host=host, model=model
            )
        return LlmError(f"Ollama at {host} failed: {err}", host=host, model=model)

    def _speaks_ollama(self) -> bool:
        """Whether the server answers Ollama's `/api/tags` (every Ollama does)."""
        try:
            response = httpx.get(f"{self.host}/api/tags", timeout=CONNECT_TIMEOUT_SECONDS)
            return response.status_code == 200 and "models" in response.json()
        except (httpx.HTTPError, ValueError):
            return False


def _message(message: Message) -> dict[str, Any]:
    """A neutral message in the shape the `ollama` client takes."""
    out: dict[str, Any] = {"role": message["role"], "content": message.get("content") or ""}
    if message.get("tool_calls"):
        out["tool_calls"] = [
            {"function": {"name": c["function"]["name"], "arguments": c["function"]["arguments"]}}
            for c in message["tool_calls"]
        ]
    if message["role"] == "tool" and message.get("tool_name"):
        out["tool_name"] = message["tool_name"]
    return out


def _close(client: ollama.Client) -> None:
    # `ollama.Client.close` carries no annotations; the cast keeps mypy strict happy.
    cast("Callable[[], None]", client.close)()


def _full_name(name: str) -> str:
    return name if ":" in name else name + ":latest"
