"""Asking the user's local model for one note's fields, constrained by their schema.

The request carries the schema as structured output (`ChatModel.chat(response_schema=…)`:
Ollama's `format`, the OpenAI API's `response_format: json_schema`), and the reply is
validated again (`reply.py`). The prompt asks for what the note says, `null` otherwise:
a made-up value in a filter is worse than none.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from kb_lsp.engine.metadata.reply import Extraction, read_reply
from kb_lsp.engine.metadata.user_schema import FieldSpec, UserSchema

if TYPE_CHECKING:
    from kb_lsp.engine.llm.base import ChatModel

# The note's text a model reads: enough for the facts of a runbook or a postmortem,
# small enough for a small model's context (about 2,500 tokens).
MAX_NOTE_CHARS = 10_000
MAX_REPLY_TOKENS = 512

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
    "listed, nothing else. Use null for a field the note does not state; never guess."
)


def field_lines(fields: tuple[FieldSpec, ...]) -> str:
    lines = []
    for spec in fields:
        kind = _KIND_WORDS[spec.kind]
        if spec.kind == "enum":
            kind += " " + ", ".join(f'"{o}"' for o in spec.options)
        about = f": {spec.description}" if spec.description else ""
        lines.append(f"- {spec.name} ({kind}){about}")
    return "\n".join(lines)


def prompt(schema: UserSchema, title: str, text: str) -> list[dict[str, str]]:
    note = text if len(text) <= MAX_NOTE_CHARS else text[:MAX_NOTE_CHARS] + "\n[…]"
    return [
        {"role": "system", "content": SYSTEM},
        {
            "role": "user",
            "content": f"Fields:\n{field_lines(schema.fields)}\n\n"
            f"Note title: {title}\n\nNote:\n{note}",
        },
    ]


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
        """The note's fields. Raises the model's `LlmError`s (`LlmCancelled` on cancel);
        a reply that is not what the schema asks for is an `Extraction` saying why."""
        result = self.model.chat(
            prompt(self.schema, title, text),
            cancel=cancel,
            max_tokens=MAX_REPLY_TOKENS,
            response_schema=self.schema.json_schema(),
        )
        if result.truncated:
            found = read_reply(self.schema, result.content)
            if found.failed:
                reason = f"the reply was cut at {MAX_REPLY_TOKENS} tokens before it ended"
                return Extraction({}, (reason,), failed=True)
            return found
        return read_reply(self.schema, result.content)
