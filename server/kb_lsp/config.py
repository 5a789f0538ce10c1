"""Every setting of kb-lsp, with its default, in one pydantic model.

Settings arrive from several places — LSP `initializationOptions`, `workspace/configuration`
(section `kb`), CLI flags and `KB_*` environment variables — as nested dicts whose keys
are the VS Code setting names without the `kb.` prefix (`chunkSize`, `ollama.host`).
`load_settings` merges them (later sources win) and validates. A value that is wrong does
not stop anything: it is dropped, the default is used, and one message per problem says
which setting, what was wrong and what is used instead.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

DEFAULT_INCLUDE = ["**/*.md", "**/*.markdown"]
MIB = 1024 * 1024


class _Section(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="ignore", frozen=True)


class EmbedderSettings(_Section):
    # "minilm": all-MiniLM-L6-v2 in-process on onnxruntime (default, needs nothing running).
    # "ollama": Ollama's /api/embed with `model`.
    provider: Literal["minilm", "ollama"] = "minilm"
    model: str = "nomic-embed-text"
    # A user's own ONNX sentence-transformer: a folder with model.onnx + tokenizer.json.
    model_path: str | None = Field(default=None, alias="modelPath")
    batch_size: int = Field(default=32, ge=1, le=512, alias="batchSize")


class SearchSettings(_Section):
    limit: int = Field(default=10, ge=1, le=100)
    # Minimum fused relevance for a file to be listed; chosen by bench/quality (README).
    threshold: float = Field(default=0.3, ge=0.0, le=1.0)
    mode: Literal["hybrid", "semantic", "keyword"] = "hybrid"


class OllamaSettings(_Section):
    host: str = "http://127.0.0.1:11434"
    model: str = "qwen2.5:7b"
    timeout: float = Field(default=120.0, gt=0, le=3600)
    num_ctx: int = Field(default=8192, ge=512, le=262144, alias="numCtx")
    keep_alive: str = Field(default="10m", alias="keepAlive")

    @field_validator("host")
    @classmethod
    def _host_is_url(cls, value: str) -> str:
        value = value.strip().rstrip("/")
        if not value:
            raise ValueError("must be a URL such as http://127.0.0.1:11434")
        if "://" not in value:
            value = "http://" + value
        return value


class AgentSettings(_Section):
    max_steps: int = Field(default=7, ge=1, le=50, alias="maxSteps")


class ChromaSettings(_Section):
    # A Chroma server (`chromadb.HttpClient`) instead of the local persistent store.
    url: str | None = None


class Settings(_Section):
    include: list[str] = Field(default_factory=lambda: list(DEFAULT_INCLUDE))
    exclude: list[str] = Field(default_factory=list)
    respect_gitignore: bool = Field(default=True, alias="respectGitignore")
    max_file_size: int = Field(default=2 * MIB, ge=1, alias="maxFileSize")
    chunk_size: int = Field(default=800, ge=100, le=20000, alias="chunkSize")
    chunk_overlap: int = Field(default=200, ge=0, le=10000, alias="chunkOverlap")
    storage: str | None = None
    reconcile_seconds: float = Field(default=300.0, ge=5, alias="reconcileSeconds")
    debounce_ms: int = Field(default=300, ge=0, le=10000, alias="debounceMs")
    embedder: EmbedderSettings = Field(default_factory=EmbedderSettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    ollama: OllamaSettings = Field(default_factory=OllamaSettings)
    agent: AgentSettings = Field(default_factory=AgentSettings)
    chroma: ChromaSettings = Field(default_factory=ChromaSettings)

    @field_validator("include", "exclude")
    @classmethod
    def _globs_are_strings(cls, value: list[str]) -> list[str]:
        return [glob.strip() for glob in value if glob.strip()]


@dataclass
class LoadedSettings:
    settings: Settings
    problems: list[str] = field(default_factory=list)

    @property
    def message(self) -> str | None:
        """One message for the user covering every problem, or None."""
        if not self.problems:
            return None
        return "kb-lsp: some settings are invalid, defaults used: " + "; ".join(self.problems)


def _merge(base: dict[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in update.items():
        if value is None:
            continue
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _expand_dotted(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Accept both `{"ollama": {"host": …}}` and `{"ollama.host": …}` (and a `kb.` prefix)."""
    out: dict[str, Any] = {}
    for key, value in raw.items():
        key = key.removeprefix("kb.")
        node = out
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                break
        else:
            leaf = _expand_dotted(value) if isinstance(value, Mapping) else value
            if isinstance(leaf, dict) and isinstance(node.get(parts[-1]), dict):
                node[parts[-1]] = _merge(node[parts[-1]], leaf)
            else:
                node[parts[-1]] = leaf
    return out


def _drop(data: dict[str, Any], loc: tuple[int | str, ...]) -> None:
    node: Any = data
    for part in loc[:-1]:
        if isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        elif not isinstance(node, dict) or part not in node:
            return
        else:
            node = node[part]
    last = loc[-1] if loc else None
    if isinstance(node, dict) and last in node:
        del node[last]
    elif isinstance(node, list) and isinstance(last, int) and last < len(node):
        # One bad glob in a list: drop the whole list, the user sees which setting.
        _drop(data, loc[:-1])


def _setting_name(loc: tuple[int | str, ...]) -> str:
    return "kb." + ".".join(str(part) for part in loc if not isinstance(part, int))


def env_settings(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Settings from `KB_*` variables: `KB_STORAGE`, `KB_OLLAMA_HOST`, `KB_CHROMA_URL`, …"""
    environ = os.environ if environ is None else environ
    names = {
        "KB_STORAGE": "storage",
        "KB_CHROMA_URL": "chroma.url",
        "KB_OLLAMA_HOST": "ollama.host",
        "KB_OLLAMA_MODEL": "ollama.model",
        "KB_EMBEDDER": "embedder.provider",
        "KB_EMBEDDER_MODEL_PATH": "embedder.modelPath",
        "KB_SEARCH_THRESHOLD": "search.threshold",
        "KB_AGENT_MAX_STEPS": "agent.maxSteps",
    }
    raw: dict[str, Any] = {}
    # Ollama's own variable is honoured, below kb's own one.
    if environ.get("OLLAMA_HOST"):
        raw["ollama.host"] = environ["OLLAMA_HOST"]
    for var, key in names.items():
        if environ.get(var):
            raw[key] = environ[var]
    return _expand_dotted(raw)


def load_settings(*sources: Mapping[str, Any] | None) -> LoadedSettings:
    """Merge `sources` (later wins) into `Settings`; invalid values fall back to defaults."""
    merged: dict[str, Any] = {}
    for source in sources:
        if source is None:
            continue
        if not isinstance(source, Mapping):
            return LoadedSettings(
                Settings(),
                [f"settings must be an object, got {type(source).__name__}"],
            )
        merged = _merge(merged, _expand_dotted(source))

    problems: list[str] = []
    for _ in range(50):
        try:
            return LoadedSettings(Settings.model_validate(merged), problems)
        except ValidationError as err:
            for error in err.errors():
                loc = tuple(error["loc"])
                given = error.get("input")
                problems.append(f"{_setting_name(loc)} = {given!r}: {error['msg']}")
                if loc:
                    _drop(merged, loc)
                else:
                    merged = {}
    return LoadedSettings(Settings(), [*problems, "too many invalid settings"])
