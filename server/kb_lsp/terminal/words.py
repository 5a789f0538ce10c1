"""Messages in a terminal user's words.

The engine's messages name settings as an editor shows them (`set kb.ollama.host to where
it runs`). At a terminal a setting is an environment variable or a flag, so each setting a
message names is followed by how to set it from here: `kb.ollama.host (KB_OLLAMA_HOST)`,
`kb.llm.model (--model or KB_LLM_MODEL)`, `kb.llm.maxTokens (--settings)`. The names
come from `config.py` (through the generated `quick_defaults.py`), so a new variable
shows up here by itself. A wire method a message names (`kb/schema`) becomes the
command that does the same (`kb schema`).
"""

from __future__ import annotations

import re
from collections.abc import Collection

from kb_lsp.runtime import quick_defaults
from kb_lsp.runtime.quick_defaults import ENV, NAMES

# Settings with a flag of their own on the commands that use them.
FLAGS = {"llm.model": "--model", "storage": "--storage"}
# Settings the command line has no way to set (the editor's own).
EDITOR_ONLY = frozenset({"server.python"})

_SETTING = re.compile(r"(?<![\w.-])kb\.([a-zA-Z]+(?:\.[a-zA-Z]+)*)")

# The engine's messages may name a wire method (`kb/schema`), which a terminal user never
# sees: the command that does the same (from the table of operations), longest first.
COMMANDS = {
    f"{quick_defaults.COMMANDS['index']} full": "kb index --full",
    **{method: f"kb {command}" for command, method in quick_defaults.COMMANDS.items()},
}
_NAMES = "|".join(map(re.escape, COMMANDS))
_WIRE = re.compile(rf"(?<![\w/.])(?:{_NAMES})(?![\w/]|\.\w)")  # not in a path
_TWICE = re.compile(r"(kb [a-z]+(?: --[a-z]+)?), \1(?![\w-])")  # "kb schema, kb schema"


def _variables() -> dict[str, str]:
    """Each setting's environment variable (`KB_*` first: `OLLAMA_HOST` is honoured too)."""
    out: dict[str, str] = {}
    for variable, key in sorted(ENV.items(), key=lambda item: not item[0].startswith("KB_")):
        out.setdefault(key, variable)
    return out


VARIABLES = _variables()


def how_to_set(key: str, flags: Collection[str] = ()) -> str | None:
    """`--model or KB_LLM_MODEL` for `llm.model` (given the command's `flags`); None for a
    setting the command cannot set. `--settings`, where the command has it, takes any."""
    if key not in NAMES or key in EDITOR_ONLY:
        return None
    flag = FLAGS.get(key)
    ways = [way for way in (flag if flag in flags else None, VARIABLES.get(key)) if way]
    if not ways and "--settings" in flags:
        ways.append("--settings")
    return " or ".join(ways) if ways else None


def in_terminal_words(text: str, flags: Collection[str] = ()) -> str:
    """`text` with each setting it names followed by how to set it at a terminal with
    this command (`flags`: its options), once per setting, and not when the message
    already names its variable."""
    done: set[str] = set()

    def annotate(match: re.Match[str]) -> str:
        key = match.group(1)
        how = how_to_set(key, flags)
        variable = VARIABLES.get(key)
        if how is None or key in done or (variable is not None and variable in text):
            return match.group(0)
        done.add(key)
        return f"{match.group(0)} ({how})"

    commands = _TWICE.sub(r"\1", _WIRE.sub(lambda match: COMMANDS[match.group(0)], text))
    return _SETTING.sub(annotate, commands)


def from_server(text: str, flags: Collection[str] = ()) -> str:
    """A message the engine addressed as `kb-lsp: …`, as the command says it (without
    the prefix: the command adds its own `kb: `)."""
    return in_terminal_words(text.removeprefix("kb-lsp: "), flags)
