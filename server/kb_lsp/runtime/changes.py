"""What new settings change, so that the runtime does no more than they need.

Most settings apply at once: search limit, threshold and mode, the model server, model,
timeout, context and keep-alive, the agent's steps, the log level (and any later `llm.*`
setting). The watcher's settings restart the watcher. Only what decides what is in the
index, or where it lives, reopens the knowledge base: storage, the embedder, chunking,
which files belong (include, exclude, .gitignore, size limit), the Chroma server. A
setting this module does not know reopens too: the safe choice for whatever comes later.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel

from kb_lsp.config import Settings

# Sections whose every setting applies without reopening.
LIVE_SECTIONS = frozenset({"search", "ollama", "agent", "log", "llm"})
WATCHER_FIELDS = frozenset({"debounce_ms", "reconcile_seconds"})
CHUNKING_FIELDS = frozenset({"chunk_size", "chunk_overlap"})
# What the Ollama embedder takes from the `ollama` section: with it, these reopen.
EMBEDDER_USES = frozenset({"ollama.host", "ollama.timeout"})


@dataclass
class SettingsChange:
    """The settings that differ, by what applying them takes (`kb.` names)."""

    live: list[str] = field(default_factory=list)
    watcher: list[str] = field(default_factory=list)
    reopen: list[str] = field(default_factory=list)
    rechunk: bool = False  # every file must be chunked again

    @property
    def empty(self) -> bool:
        return not (self.live or self.watcher or self.reopen)


def _differences(old: BaseModel, new: BaseModel, path: str, name: str) -> list[tuple[str, str]]:
    """(field path, setting name) of every leaf that differs."""
    out: list[tuple[str, str]] = []
    for key, info in type(old).model_fields.items():
        before, after = getattr(old, key), getattr(new, key)
        if before == after:
            continue
        key_path = f"{path}{key}"
        key_name = f"{name}{info.alias or key}"
        extra = info.json_schema_extra
        if isinstance(extra, dict) and extra.get("clientOnly"):
            continue  # read by the editor extension (the interpreter), not the server
        if isinstance(before, BaseModel) and type(before) is type(after):
            out += _differences(before, after, key_path + ".", key_name + ".")
        else:
            out.append((key_path, key_name))
    return out


def settings_change(old: Settings, new: Settings) -> SettingsChange:
    change = SettingsChange()
    ollama_embedder = "ollama" in (old.embedder.provider, new.embedder.provider)
    for path, name in _differences(old, new, "", "kb."):
        section = path.split(".", 1)[0]
        if path in EMBEDDER_USES and ollama_embedder:
            change.reopen.append(name)
        elif section in LIVE_SECTIONS:
            change.live.append(name)
        elif section in WATCHER_FIELDS:
            change.watcher.append(name)
        else:
            change.reopen.append(name)
            change.rechunk = change.rechunk or section in CHUNKING_FIELDS
    return change
