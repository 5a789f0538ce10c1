"""What `kb status` needs, read without pydantic: a cold process answers in tens of
milliseconds instead of spending most of a second importing pydantic and building the
settings and wire models.

* `quick_settings(overrides)` — the settings a status reads (the storage folder and the
  configured model), from the environment and the command line over the defaults,
  through the rules `config.py` applies (`setting_values.py`), as a read-only tree with
  the attribute names of `config.Settings`. Everything else keeps its default. None
  when a value breaks a rule: the caller then loads the full settings, which say what
  is wrong and what is used instead.
* `wire(model, values)` — a status payload as it goes on the wire (`protocol.dump`),
  its fields in order and its defaults filled in.

The defaults, names and shapes come from `config.py` and `protocol.py` through the
generated `quick_defaults.py` (`python -m kb_lsp.codegen`; a test keeps it current).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, cast

from kb_lsp import setting_values
from kb_lsp.runtime import quick_defaults as generated

if TYPE_CHECKING:
    from kb_lsp.config import Settings


def _choice(key: str) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if value not in generated.CHOICES[key]:
            raise ValueError(f"not one of {generated.CHOICES[key]}")
        return value

    return check


def _optional_text(rule: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda value: rule(setting_values.blank_is_unset(value))


# The settings a status reads, each with the rules its field applies in `config.py`.
RULES: dict[str, Callable[[Any], Any]] = {
    "storage": setting_values.blank_is_unset,
    "ollama.host": setting_values.ollama_host,
    "ollama.model": str,
    "llm.provider": _choice("llm.provider"),
    "llm.baseUrl": _optional_text(setting_values.base_url),
    "llm.model": _optional_text(setting_values.model_name),
    "metadata.schemaFile": setting_values.blank_is_unset,
}


def _tree(values: Any) -> Any:
    if isinstance(values, dict):
        return SimpleNamespace(**{name: _tree(value) for name, value in values.items()})
    return values


def quick_settings(
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    *,
    strict: bool = False,
) -> Settings | None:
    """The settings a status reads (see the module's docstring); None: load them fully.
    `strict`: None too when any other setting is given (a one-shot keyword search reads
    more of them — the workspace's file rules, the threshold — and takes them at their
    defaults only)."""
    environ = os.environ if environ is None else environ
    layers = [
        {key: environ[var] for var, key in generated.ENV.items() if environ.get(var)},
        dict(overrides or {}),
    ]
    values = copy.deepcopy(generated.SETTINGS)
    for layer in layers:
        for key, raw in layer.items():
            rule = RULES.get(key)
            if rule is None:
                if strict:
                    return None
                continue  # not read by a status
            try:
                value = rule(raw)
            except (ValueError, TypeError, AttributeError):
                return None
            *sections, name = generated.NAMES[key]
            node = values
            for section in sections:
                node = node[section]
            node[name] = value
    # Duck-typed: it has every attribute of `Settings` a status reads.
    return cast("Settings", _tree(values))


def wire(model: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """`values` (wire names) as `model` goes on the wire: every field, in order."""
    fields = generated.WIRE[model]
    unknown = set(values) - {name for name, _ in fields}
    if unknown:
        raise KeyError(f"{model} has no field {sorted(unknown)}")
    out: dict[str, Any] = {}
    for name, default in fields:
        if name in values:
            out[name] = values[name]
        elif default == generated.REQUIRED:
            raise KeyError(f"{model}.{name} is required")
        else:
            out[name] = copy.deepcopy(default)
    return out


def quick_status(folder: Path, settings: Settings) -> dict[str, Any] | None:
    """`kb/status` as the wire has it, from the store alone; None when there is no index
    yet, or another process writes it now (the full path then says how far it got)."""
    from kb_lsp.runtime.stored_status import stored_values

    values = stored_values(folder, settings)
    if values is None or values["readOnly"]:
        return None
    values["llm"] = wire("LlmStatus", values["llm"])
    values["skipped"] = [wire("SkippedFile", item) for item in values["skipped"]]
    values["problems"] = [wire("FileProblem", item) for item in values["problems"]]
    if values["metadata"] is not None:
        values["metadata"] = wire("MetadataStatus", values["metadata"])
    return wire("IndexStatus", values)
