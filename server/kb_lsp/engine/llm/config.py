"""The model settings resolved into one `LlmConfig`: `kb.llm.*` over `kb.ollama.*`.

`kb.llm.*` is provider-neutral and wins where it is set; the older `kb.ollama.*` settings
keep working as the defaults (host, model, timeout, context window), so an existing
configuration behaves as before. The API key is read here, once, from the environment
variable named in `kb.llm.apiKeyEnv`: it is never a setting.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # `kb status` names the model from light settings, without pydantic
    from kb_lsp.config import LlmProviderName, Settings

log = logging.getLogger(__name__)

DEFAULT_OPENAI_BASE_URL = "http://127.0.0.1:8080/v1"
# How a status names the model when the settings name none (an OpenAI-compatible server
# serves its first one).
UNNAMED_MODEL = "(the server's model)"


@dataclass(frozen=True)
class LlmConfig:
    provider: LlmProviderName
    base_url: str  # Ollama: the host; OpenAI-compatible: the URL ending in /v1
    model: str | None  # None: the server's first model (OpenAI-compatible only)
    timeout: float
    num_ctx: int | None  # None: what the server reports, else `default_num_ctx`
    default_num_ctx: int
    max_tokens: int | None
    keep_alive: str
    mode: str  # "auto" | "agent" | "grounded"
    api_key: str | None = None
    api_key_env: str | None = None
    # The setting names a message should point at, as the user configured them.
    base_url_setting: str = "kb.ollama.host"
    timeout_setting: str = "kb.ollama.timeout"
    num_ctx_setting: str = "kb.ollama.numCtx"

    @classmethod
    def from_settings(
        cls, settings: Settings, environ: Mapping[str, str] | None = None
    ) -> LlmConfig:
        environ = os.environ if environ is None else environ
        llm, ollama = settings.llm, settings.ollama
        if llm.provider == "openai":
            base_url = llm.base_url or DEFAULT_OPENAI_BASE_URL
            model = llm.model
            base_setting = "kb.llm.baseUrl"
        else:
            base_url = llm.base_url or ollama.host
            model = llm.model or ollama.model
            base_setting = "kb.llm.baseUrl" if llm.base_url else "kb.ollama.host"
        api_key = None
        if llm.api_key_env:
            api_key = environ.get(llm.api_key_env) or None
            if api_key is None:
                log.warning(
                    "kb.llm.apiKeyEnv names %s, which is not set in the environment",
                    llm.api_key_env,
                )
        # Ollama takes the context size per request, so it always has one; an
        # OpenAI-compatible server has its own, which is asked for unless it is set.
        if llm.context_size:
            num_ctx: int | None = llm.context_size
            ctx_setting = "kb.llm.contextSize"
        elif llm.provider == "ollama":
            num_ctx, ctx_setting = ollama.num_ctx, "kb.ollama.numCtx"
        else:
            num_ctx, ctx_setting = None, "kb.llm.contextSize"
        return cls(
            provider=llm.provider,
            base_url=base_url.rstrip("/"),
            model=model,
            timeout=llm.timeout or ollama.timeout,
            num_ctx=num_ctx,
            default_num_ctx=ollama.num_ctx,
            max_tokens=llm.max_tokens or None,
            keep_alive=ollama.keep_alive,
            mode=llm.mode,
            api_key=api_key,
            api_key_env=llm.api_key_env,
            base_url_setting=base_setting,
            timeout_setting="kb.llm.timeout" if llm.timeout else "kb.ollama.timeout",
            num_ctx_setting=ctx_setting,
        )
