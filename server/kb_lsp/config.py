"""Every setting of kb-lsp, with its default and its description, in one pydantic model.

Settings arrive from several places — `KB_*` environment variables, LSP
`initializationOptions`, `workspace/configuration` (section `kb`) or
`workspace/didChangeConfiguration`, CLI flags — as nested dicts whose keys are the VS Code
setting names without the `kb.` prefix (`chunkSize`, `ollama.host`). `load_settings`
layers them (later sources win) and validates each layer on top of the ones below it: a
value that is wrong does not stop anything and does not wipe out a good value from a
lower source — it is dropped, the value below it is kept, and one message per problem
says which setting, what was wrong and what is used instead.

This module is also the truth for the editor: each setting's `Field(description=…)` and
`json_schema_extra=ui(…)` (order, group, scope, …) become the VS Code extension's
`contributes.configuration` and the settings table of docs/configuration.md
(`python -m kb_lsp.codegen`).
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    ValidationError,
    field_validator,
)
from pydantic.alias_generators import to_camel
from pydantic.fields import FieldInfo

from kb_lsp import setting_values

DEFAULT_INCLUDE = ["**/*.md", "**/*.markdown"]
MIB = 1024 * 1024

# --- what the editor needs to know about a setting ------------------------------------------

# VS Code's configuration scopes (where a value may be set).
Scope = Literal["application", "machine", "machine-overridable", "window", "resource"]

# The settings editor shows one section per group, in this order (`contributes.configuration`
# categories). A new setting joins the group a user would look in.
GROUPS: dict[str, str] = {
    "start": "Server and model",
    "search": "Search and questions",
    "files": "Files",
    "advanced": "Advanced",
}
Group = Literal["start", "search", "files", "advanced"]


def ui(
    order: int,
    group: Group,
    *,
    scope: Scope = "window",
    restricted: bool = False,
    env: str | None = None,
    enum_descriptions: Sequence[str] = (),
    client_only: bool = False,
) -> dict[str, JsonValue]:
    """A setting's place in the editor, for `Field(json_schema_extra=ui(…))`.

    `order`: position in the settings editor (unique; gaps left for new settings).
    `restricted`: in an untrusted workspace VS Code ignores the workspace's value (an
    executable, a host that receives documents, a folder written to).
    `env`: the `KB_*` variable that sets it too. `client_only`: read by the editor
    extension, not by the server.
    """
    meta: dict[str, JsonValue] = {"order": order, "group": group, "scope": scope}
    if restricted:
        meta["restricted"] = True
    if env:
        meta["env"] = env
    if enum_descriptions:
        meta["enumDescriptions"] = list(enum_descriptions)
    if client_only:
        meta["clientOnly"] = True
    return meta


# A text setting that may be unset: `None` on the server, an empty string in the editor.
OptionalText = Annotated[str | None, BeforeValidator(setting_values.blank_is_unset)]


# --- the settings ---------------------------------------------------------------------------


class _Section(BaseModel):
    # VS Code's settings are camelCase (`kb.embedder.modelPath`); Python uses snake_case.
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", frozen=True
    )


class EmbedderSettings(_Section):
    provider: Literal["minilm", "ollama"] = Field(
        default="minilm",
        description="What turns passages into vectors. Changing it rebuilds the vectors.",
        json_schema_extra=ui(
            320,
            "advanced",
            env="KB_EMBEDDER",
            enum_descriptions=(
                "all-MiniLM-L6-v2 in-process on onnxruntime: nothing to run or download.",
                "Ollama's embed API with `kb.embedder.model`.",
            ),
        ),
    )
    model: str = Field(
        default="nomic-embed-text",
        description=(
            "The model that turns passages into vectors, when `kb.embedder.provider` is "
            "`ollama` (not the chat model: that is `kb.llm.model`)."
        ),
        json_schema_extra=ui(330, "advanced"),
    )
    model_path: OptionalText = Field(
        default=None,
        description=(
            "A folder with your own ONNX sentence-transformer (`model.onnx` + "
            "`tokenizer.json`), used instead of the bundled MiniLM. Empty: the bundled model."
        ),
        json_schema_extra=ui(
            340,
            "advanced",
            scope="machine-overridable",
            restricted=True,
            env="KB_EMBEDDER_MODEL_PATH",
        ),
    )
    batch_size: int = Field(
        default=32,
        ge=1,
        le=512,
        description="Passages embedded per batch while indexing.",
        json_schema_extra=ui(350, "advanced"),
    )


class SearchSettings(_Section):
    mode: Literal["hybrid", "semantic", "keyword"] = Field(
        default="hybrid",
        description="How a search finds files.",
        json_schema_extra=ui(
            110,
            "search",
            enum_descriptions=(
                "Vectors and full text, fused: finds both the words and the meaning.",
                "Vectors only: the meaning, not the exact words.",
                "Full text only (SQLite FTS5): the exact words.",
            ),
        ),
    )
    limit: int = Field(
        default=10,
        ge=1,
        le=100,
        description="How many files a search lists at most.",
        json_schema_extra=ui(120, "search"),
    )
    # The default was chosen by bench/quality (docs/search.md).
    threshold: float = Field(
        default=0.3,
        ge=0.0,
        le=1.0,
        description=(
            "Minimum relevance (0–1) for a file to be listed. Lower lists more, "
            "less relevant files."
        ),
        json_schema_extra=ui(130, "search", env="KB_SEARCH_THRESHOLD"),
    )


class OllamaSettings(_Section):
    host: str = Field(
        default="http://127.0.0.1:11434",
        description=(
            "Ollama only: the Ollama server — for questions when `kb.llm.provider` is "
            "`ollama` and `kb.llm.baseUrl` is empty, for vectors when "
            "`kb.embedder.provider` is `ollama` (`OLLAMA_HOST` is honoured too)."
        ),
        json_schema_extra=ui(20, "start", restricted=True, env="KB_OLLAMA_HOST"),
    )
    model: str = Field(
        default="qwen2.5:7b",
        description=(
            "Ollama only: the chat model when `kb.llm.model` is empty (which wins for any "
            "provider); one that calls tools works best. Pull it with `ollama pull NAME`."
        ),
        json_schema_extra=ui(30, "start", env="KB_OLLAMA_MODEL"),
    )
    timeout: float = Field(
        default=120.0,
        gt=0,
        le=3600,
        description=(
            "Seconds of silence from the model before a request fails, for any provider "
            "while `kb.llm.timeout` is 0 (which wins when set)."
        ),
        json_schema_extra=ui(390, "advanced"),
    )
    num_ctx: int = Field(
        default=8192,
        ge=512,
        le=262144,
        description=(
            "The context window Ollama runs the model with, in tokens (sent as `num_ctx`); "
            "also the fallback size for an `openai` server that reports none. "
            "`kb.llm.contextSize` wins when set."
        ),
        json_schema_extra=ui(400, "advanced"),
    )
    keep_alive: str = Field(
        default="10m",
        description=(
            "How long Ollama keeps the model loaded after a request (Ollama's `keep_alive`, "
            "e.g. `10m`, `1h`, `0` to unload at once)."
        ),
        json_schema_extra=ui(410, "advanced"),
    )

    @field_validator("host")
    @classmethod
    def _host_is_url(cls, value: str) -> str:
        return setting_values.ollama_host(value)


LlmProviderName = Literal["ollama", "openai"]
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class LlmSettings(_Section):
    """The chat model, whichever local runtime serves it (docs/ask.md). `kb.llm.*` wins
    where it is set; `kb.ollama.*` stays the default of host, model, timeout and context."""

    provider: LlmProviderName = Field(
        default="ollama",
        description=(
            "Which API the chat model is served with: `ollama` (Ollama's own API) or "
            "`openai` (any OpenAI-compatible server: llama.cpp's llama-server, LM Studio, "
            "vLLM, LocalAI, Jan, llama-cpp-python, Ollama's /v1)."
        ),
        json_schema_extra=ui(
            11,
            "start",
            env="KB_LLM_PROVIDER",
            enum_descriptions=(
                "Ollama's own API (`kb.ollama.host`).",
                "Any OpenAI-compatible server at `kb.llm.baseUrl`.",
            ),
        ),
    )
    base_url: OptionalText = Field(
        default=None,
        description=(
            "Where the model server runs: for `openai` its URL ending in /v1 (empty: "
            "http://127.0.0.1:8080/v1, llama-server's); for `ollama` its host (empty: "
            "`kb.ollama.host`)."
        ),
        json_schema_extra=ui(12, "start", restricted=True, env="KB_LLM_BASE_URL"),
    )
    api_key_env: OptionalText = Field(
        default=None,
        description=(
            "The NAME of an environment variable holding the API key (`openai` only), "
            "e.g. `OPENAI_API_KEY`. The key itself is never a setting."
        ),
        json_schema_extra=ui(14, "start"),
    )
    model: OptionalText = Field(
        default=None,
        description=(
            "The chat model that answers questions, for any provider (not the embedding "
            "model, `kb.embedder.model`). Empty: `kb.ollama.model` for `ollama`; for "
            "`openai` the first model the server lists at /v1/models."
        ),
        json_schema_extra=ui(13, "start", env="KB_LLM_MODEL"),
    )
    mode: Literal["auto", "agent", "grounded"] = Field(
        default="auto",
        description=(
            "How questions are answered: `auto` asks the server whether the model calls "
            "tools; `agent` or `grounded` force one."
        ),
        json_schema_extra=ui(
            15,
            "start",
            env="KB_LLM_MODE",
            enum_descriptions=(
                "The model calls tools (agent) when the server says it can, else grounded.",
                "The model searches and reads the notes with tools.",
                "The best passages are searched, graded and given to the model, which "
                "answers citing them: for models without tool calling.",
            ),
        ),
    )
    max_tokens: int = Field(
        default=0,
        ge=0,
        le=32768,
        description=(
            "The most tokens one model reply may have; a reply cut there ends with stop "
            "`length`. 0: a quarter of the context (256 to 2048)."
        ),
        json_schema_extra=ui(395, "advanced"),
    )
    timeout: float = Field(
        default=0.0,
        ge=0,
        le=3600,
        description=(
            "Seconds of silence from the model before a request gives up, for any "
            "provider; wins over `kb.ollama.timeout`. 0: `kb.ollama.timeout`."
        ),
        json_schema_extra=ui(385, "advanced"),
    )
    context_size: int = Field(
        default=0,
        ge=0,
        le=1048576,
        description=(
            "The model's context window in tokens, for any provider; wins over "
            "`kb.ollama.numCtx`. 0: what an `openai` server reports (/props, /v1/models), "
            "else `kb.ollama.numCtx`."
        ),
        json_schema_extra=ui(405, "advanced"),
    )

    @field_validator("base_url")
    @classmethod
    def _base_url_is_url(cls, value: str | None) -> str | None:
        return setting_values.base_url(value)

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = value.strip()
        if not _ENV_NAME.match(value):
            raise ValueError(
                "must be the NAME of an environment variable (letters, digits, _), "
                "not the key itself"
            )
        return value

    @field_validator("model")
    @classmethod
    def _model(cls, value: str | None) -> str | None:
        return setting_values.model_name(value)


class AgentSettings(_Section):
    max_steps: int = Field(
        default=7,
        ge=1,
        le=50,
        description="The most tool-calling steps the model may take for one question.",
        json_schema_extra=ui(140, "search", env="KB_AGENT_MAX_STEPS"),
    )


class MetadataSettings(_Section):
    # `schemaFile`, not `schema`: pydantic's models have a `schema` attribute of their own.
    schema_file: OptionalText = Field(
        default=None,
        description=(
            "A JSON Schema file of the fields the model fills in from each note's text "
            "(relative to the workspace folder). Empty: `.kb/schema.json` when it exists."
        ),
        json_schema_extra=ui(250, "files"),
    )
    extract: bool = Field(
        default=True,
        description=(
            "With a schema, the local model extracts its fields from each note after the "
            "vectors (cached by content: unchanged notes are never asked again)."
        ),
        json_schema_extra=ui(260, "files"),
    )


class LogSettings(_Section):
    level: Literal["debug", "info", "warning", "error"] = Field(
        default="info",
        description=(
            "How much kb-lsp logs, to `kb-lsp.log` in the storage folder and to the "
            "editor's output. Applies at once."
        ),
        json_schema_extra=ui(
            440,
            "advanced",
            env="KB_LOG_LEVEL",
            enum_descriptions=(
                "Everything, for tracking a problem down.",
                "What it does: opening, syncs with their counts and rate, settings applied.",
                "Only what went wrong or may need you.",
                "Only errors.",
            ),
        ),
    )


class ChromaSettings(_Section):
    url: OptionalText = Field(
        default=None,
        description=(
            "A Chroma server (e.g. `http://chroma:8000`) that keeps the vectors instead of "
            "the local store; with `kb.chroma.collection`, an index a team shares. Empty: "
            "the local store."
        ),
        json_schema_extra=ui(380, "advanced", restricted=True, env="KB_CHROMA_URL"),
    )
    collection: OptionalText = Field(
        default=None,
        description=(
            "With `kb.chroma.url`: a collection on that server that every workstation "
            "with the same notes names (a team index). Vectors are stored there by the "
            "hash of their text, so a passage one member embedded is reused by the others; "
            "keyword search and the notes' text stay local (docs/team-index.md). Empty: "
            "this workspace's own collection."
        ),
        json_schema_extra=ui(381, "advanced", restricted=True, env="KB_CHROMA_COLLECTION"),
    )

    @field_validator("collection")
    @classmethod
    def _collection_name(cls, value: str | None) -> str | None:
        return setting_values.chroma_collection(value)


class ServerSettings(_Section):
    python: OptionalText = Field(
        default=None,
        description=(
            "Python interpreter that runs the server (`python -m kb_lsp`), with kb-lsp "
            "installed. Empty: the extension's own environment, which it sets up on first "
            "use with the server it carries (a Python 3.11+ it finds, a virtual environment "
            "in its storage, the Python packages from your package index). In a remote "
            "window (SSH, WSL, containers, code-server) set it in the *Remote* settings."
        ),
        json_schema_extra=ui(
            10, "start", scope="machine-overridable", restricted=True, client_only=True
        ),
    )


class Settings(_Section):
    include: list[str] = Field(
        default_factory=lambda: list(DEFAULT_INCLUDE),
        description=(
            "Glob patterns (gitignore style, relative to a workspace folder) of the files "
            "that belong to the knowledge base."
        ),
        json_schema_extra=ui(210, "files"),
    )
    exclude: list[str] = Field(
        default_factory=list,
        description=(
            "More glob patterns of files to leave out (`.git`, `node_modules`, virtual "
            "environments, build output and `.gitignore`d files always are)."
        ),
        json_schema_extra=ui(220, "files"),
    )
    respect_gitignore: bool = Field(
        default=True,
        description="Leave out the files that `.gitignore` ignores.",
        json_schema_extra=ui(230, "files"),
    )
    max_file_size: int = Field(
        default=2 * MIB,
        ge=1,
        description="Files larger than this many bytes are skipped (the reason is in the status).",
        json_schema_extra=ui(240, "files"),
    )
    chunk_size: int = Field(
        default=800,
        ge=100,
        le=20000,
        description="Target size of an indexed passage, in characters.",
        json_schema_extra=ui(360, "advanced"),
    )
    chunk_overlap: int = Field(
        default=200,
        ge=0,
        le=10000,
        description="Characters shared by neighbouring passages.",
        json_schema_extra=ui(370, "advanced"),
    )
    storage: OptionalText = Field(
        default=None,
        description=(
            "The folder where the index is kept. Empty: the editor's storage for this "
            "workspace (VS Code), else `$XDG_CACHE_HOME/kb-lsp` (`~/.cache/kb-lsp`)."
        ),
        json_schema_extra=ui(
            310, "advanced", scope="machine-overridable", restricted=True, env="KB_STORAGE"
        ),
    )
    reconcile_seconds: float = Field(
        default=300.0,
        ge=5,
        description=(
            "Seconds between full checks of the workspace against the index (catches "
            "changes the file watcher missed)."
        ),
        json_schema_extra=ui(430, "advanced"),
    )
    debounce_ms: int = Field(
        default=300,
        ge=0,
        le=10000,
        description="Milliseconds of quiet after a file changes on disk before it is reindexed.",
        json_schema_extra=ui(420, "advanced"),
    )
    embedder: EmbedderSettings = Field(default_factory=EmbedderSettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    ollama: OllamaSettings = Field(default_factory=OllamaSettings)
    llm: LlmSettings = Field(default_factory=LlmSettings)
    agent: AgentSettings = Field(default_factory=AgentSettings)
    metadata: MetadataSettings = Field(default_factory=MetadataSettings)
    chroma: ChromaSettings = Field(default_factory=ChromaSettings)
    server: ServerSettings = Field(default_factory=ServerSettings)
    log: LogSettings = Field(default_factory=LogSettings)

    @field_validator("include", "exclude")
    @classmethod
    def _globs_are_strings(cls, value: list[str]) -> list[str]:
        return [glob.strip() for glob in value if glob.strip()]


# --- walking the model ------------------------------------------------------------------------


@dataclass(frozen=True)
class SettingField:
    """One leaf setting: `key` is its dotted wire name without `kb.` (`ollama.numCtx`)."""

    key: str
    path: tuple[str, ...]  # the wire names, one per level
    info: FieldInfo

    @property
    def meta(self) -> dict[str, Any]:
        extra = self.info.json_schema_extra
        return dict(extra) if isinstance(extra, dict) else {}

    @property
    def default(self) -> Any:
        return self.info.get_default(call_default_factory=True)


def _wire_name(name: str, info: FieldInfo) -> str:
    return info.alias or name


def _section_model(info: FieldInfo) -> type[_Section] | None:
    annotation = info.annotation
    if isinstance(annotation, type) and issubclass(annotation, _Section):
        return annotation
    return None


def setting_fields(
    model: type[_Section] = Settings, prefix: tuple[str, ...] = ()
) -> Iterator[SettingField]:
    """Every leaf setting, depth first in declaration order."""
    for name, info in model.model_fields.items():
        path = (*prefix, _wire_name(name, info))
        section = _section_model(info)
        if section is not None:
            yield from setting_fields(section, path)
        else:
            yield SettingField(".".join(path), path, info)


def _setting_path(loc: tuple[int | str, ...]) -> tuple[str, ...]:
    """The part of a validation error's location that names a setting or a section."""
    model: type[_Section] | None = Settings
    path: list[str] = []
    for part in loc:
        if model is None or not isinstance(part, str):
            break
        fields = {_wire_name(n, i): i for n, i in model.model_fields.items()}
        fields.update(model.model_fields)  # python names are accepted too
        info = fields.get(part)
        if info is None:
            break
        path.append(part)
        model = _section_model(info)
    return tuple(path)


# --- loading ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Layer:
    """One source of settings, named for the messages ("workspace settings")."""

    name: str
    values: object


@dataclass
class LoadedSettings:
    settings: Settings
    problems: list[str] = field(default_factory=list)

    @property
    def message(self) -> str | None:
        """One message for the user covering every problem, or None."""
        if not self.problems:
            return None
        return "kb-lsp: some settings are invalid and were not applied: " + "; ".join(self.problems)


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
    """Accept `{"ollama": {"host": …}}`, `{"ollama.host": …}`, a `kb.` prefix and `{"kb": {…}}`.

    Unset values (null, an empty string) are left out, so a lower source's value stands.
    """
    out: dict[str, Any] = {}
    for key, value in raw.items():
        key = str(key).removeprefix("kb.")
        value = setting_values.blank_is_unset(value)
        if value is None:
            continue
        if key == "kb" and isinstance(value, Mapping):  # `{"kb": {…}}`, as pushed by clients
            out = _merge(out, _expand_dotted(value))
            continue
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


_MISSING = object()


def _get(data: Mapping[str, Any], path: Sequence[str]) -> Any:
    node: Any = data
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return _MISSING
        node = node[part]
    return node


def _restore(candidate: dict[str, Any], below: Mapping[str, Any], path: Sequence[str]) -> None:
    """Put back at `path` what the lower sources had there (or nothing)."""
    if not path:
        candidate.clear()
        candidate.update(copy.deepcopy(dict(below)))
        return
    node: Any = candidate
    for part in path[:-1]:
        if not isinstance(node, dict) or not isinstance(node.get(part), dict):
            return
        node = node[part]
    previous = _get(below, path)
    if previous is _MISSING:
        node.pop(path[-1], None)
    else:
        node[path[-1]] = copy.deepcopy(previous)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _value_in(settings: Settings, path: Sequence[str]) -> Any:
    node: Any = settings.model_dump(by_alias=True)
    for part in path:
        node = node.get(part) if isinstance(node, dict) else None
    return node


def load_settings(*sources: Mapping[str, Any] | Layer | None) -> LoadedSettings:
    """Layer `sources` (lowest first, later wins) into `Settings`.

    A non-object source is ignored as a whole. Within a source, an invalid value is
    dropped and the value below it (an earlier source's, else the default) is kept.
    """
    layers = [
        source if isinstance(source, Layer) else Layer("", source)
        for source in sources
        if source is not None
    ]
    problems: list[str] = []
    below: dict[str, Any] = {}
    for layer in layers:
        where = f" in {layer.name}" if layer.name else ""
        if layer.values is None:
            continue
        if not isinstance(layer.values, Mapping):
            problems.append(
                f"settings{where} must be an object, got {type(layer.values).__name__}: ignored"
            )
            continue
        candidate = _merge(below, _expand_dotted(layer.values))
        failed: dict[tuple[str, ...], str] = {}
        for _ in range(100):  # each round puts back at least one value from below
            try:
                kept = Settings.model_validate(candidate)
                break
            except ValidationError as err:
                round_failed: dict[tuple[str, ...], str] = {}
                for error in err.errors():
                    path = _setting_path(tuple(error["loc"]))
                    if path in round_failed:
                        continue
                    given = _get(candidate, path) if path else layer.values
                    name = "kb." + ".".join(path) if path else "settings"
                    round_failed[path] = f"{name} = {_shown(given)}{where} ({error['msg']})"
                for path in round_failed:
                    _restore(candidate, below, path)
                failed.update(round_failed)
        else:  # values that are only wrong together: refuse the whole layer
            failed[()] = f"settings{where} are inconsistent; ignored"
            candidate = copy.deepcopy(below)
            kept = Settings.model_validate(candidate)
        for path, problem in failed.items():
            used = _value_in(kept, path) if path else None
            if path and not isinstance(used, dict):
                problem += f": using {_shown(used)}"
            elif path:
                problem += ": ignored"
            problems.append(problem)
        below = candidate
    return LoadedSettings(Settings.model_validate(below), problems)


# Other programs' variables honoured too, below kb's own ones: Ollama's host.
FOREIGN_ENV = {"OLLAMA_HOST": "ollama.host"}


def env_settings(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Settings from `KB_*` variables (`ui(env=…)` of each setting): `KB_STORAGE`, …"""
    environ = os.environ if environ is None else environ
    raw: dict[str, Any] = {}
    for foreign, key in FOREIGN_ENV.items():
        if environ.get(foreign):
            raw[key] = environ[foreign]
    for setting in setting_fields():
        var = setting.meta.get("env")
        if isinstance(var, str) and environ.get(var):
            raw[setting.key] = environ[var]
    return _expand_dotted(raw)


def changed_settings(old: Settings, new: Settings) -> list[str]:
    """`kb.ollama.timeout: 120.0 → 7.0`, one line per setting that differs (for the log)."""
    before, after = old.model_dump(by_alias=True), new.model_dump(by_alias=True)
    out = []
    for setting in setting_fields():
        was, now = _get(before, setting.path), _get(after, setting.path)
        if was != now:
            out.append(f"kb.{setting.key}: {_shown(was)} → {_shown(now)}")
    return out
