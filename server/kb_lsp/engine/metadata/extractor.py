"""Asking the user's local model for one note's fields, constrained by their schema.

The request carries the schema as structured output (`ChatModel.chat(response_schema=…)`:
Ollama's `format`, the OpenAI API's `response_format: json_schema`), and the reply is
validated again (`reply.py`), then checked against the note (`verify.py`). The prompt
and the schema ask, per field, for `null` when the note does not say it, else the
note's words it is read from and the value: a made-up value in a filter is worse than
none, and a value without the words it came from cannot be checked.

An enum's options are shown in an order of the note's own (sorted, then shuffled with
the note's text as the seed), "none of these" last: a small model picks the first
option it is shown far more often than the note warrants, and the author's order must
not decide what every note becomes. The same note always gets the same order, so an
extraction is reproducible, and reordering the schema's options changes nothing.
"""

from __future__ import annotations

import hashlib
import random
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from kb_lsp.engine.metadata.claims import Extraction
from kb_lsp.engine.metadata.reply import read_reply
from kb_lsp.engine.metadata.user_schema import NONE_OF_THESE, FieldSpec, UserSchema
from kb_lsp.engine.metadata.verify import verify

if TYPE_CHECKING:
    from kb_lsp.engine.llm.base import ChatModel

# The note's text a model reads: enough for the facts of a runbook or a postmortem,
# small enough for a small model's context (about 2,500 tokens).
MAX_NOTE_CHARS = 10_000
MAX_REPLY_TOKENS = 768
# Reading facts is not writing: the most likely words, the same on every run.
TEMPERATURE = 0.0

_KIND_WORDS = {
    "string": "text",
    "list": "a list of short texts",
    "number": "a number (digits only, no units or thousands separators)",
    "date": "a date, YYYY-MM-DD",
    "enum": "one of",
}

SYSTEM = (
    "You read one note from a team's knowledge base and fill in metadata fields from "
    "what the note itself says. Answer with one JSON object that has exactly the keys "
    "listed, nothing else. For each field: null when the note does not say it; never "
    'guess. Otherwise {"evidence": the few words of the note that say it, copied '
    'exactly, "value": only the value itself, a name, a number or a date, never a '
    'sentence}. For a field with options, "' + NONE_OF_THESE + '" when the note fits '
    "none of them."
)


def shown_options(spec: FieldSpec, note: str) -> list[str]:
    """An enum's options in the order this note is shown them (see the module)."""
    seed = hashlib.sha256(f"{spec.name}\n{note}".encode()).hexdigest()
    options = sorted(spec.options)
    random.Random(seed).shuffle(options)
    return options


def field_lines(fields: Sequence[FieldSpec], note: str) -> str:
    lines = []
    for spec in fields:
        kind = _KIND_WORDS[spec.kind]
        if spec.kind == "enum":
            options = [*shown_options(spec, note), NONE_OF_THESE]
            kind += " " + ", ".join(f'"{o}"' for o in options)
        about = f": {spec.description}" if spec.description else ""
        lines.append(f"- {spec.name} ({kind}){about}")
    return "\n".join(lines)


def seen(text: str) -> str:
    """The part of a note's text the model reads (and its answer is checked against)."""
    return text[:MAX_NOTE_CHARS]


def prompt(schema: UserSchema, title: str, text: str) -> list[dict[str, str]]:
    note = text if len(text) <= MAX_NOTE_CHARS else seen(text) + "\n[…]"
    return [
        {"role": "system", "content": SYSTEM},
        {
            "role": "user",
            "content": f"Fields:\n{field_lines(schema.fields, seen(text))}\n\n"
            f"Note title: {title}\n\nNote:\n{note}",
        },
    ]


def response_schema(schema: UserSchema, text: str) -> dict[str, object]:
    """The structured output asked for this note (its enums in the note's order)."""
    return schema.json_schema(lambda spec: shown_options(spec, seen(text)))


def model_identity(model: ChatModel) -> str:
    """The model, as cached extractions, the status and hovers name it:
    `ollama/qwen2.5:7b`. Not the server's address (unlike summaries' `cache_identity`):
    the same model moved to another address must not re-ask a slow model about every note."""
    return f"{model.provider}/{model.model}"


class FieldExtractor:
    """One schema, one model. Thread-safe (the model is)."""

    def __init__(self, model: ChatModel, schema: UserSchema) -> None:
        self.model = model
        self.schema = schema

    @property
    def identity(self) -> str:
        return model_identity(self.model)

    def extract(self, title: str, text: str, cancel: threading.Event | None = None) -> Extraction:
        """The note's fields, each kept value with the span of the note it was read
        from and each rejected one with the reason. Raises the model's `LlmError`s
        (`LlmCancelled` on cancel); a reply that is not what the schema asks for is an
        `Extraction` saying why."""
        result = self.model.chat(
            prompt(self.schema, title, text),
            cancel=cancel,
            max_tokens=MAX_REPLY_TOKENS,
            temperature=TEMPERATURE,
            response_schema=response_schema(self.schema, text),
        )
        reply = read_reply(self.schema, result.content)
        if result.truncated and reply.failed:
            reason = f"the reply was cut at {MAX_REPLY_TOKENS} tokens before it ended"
            return Extraction({}, (), (reason,), failed=True)
        return verify(reply, seen(text), self.schema)
