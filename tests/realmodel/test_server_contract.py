"""What kb-lsp relies on from an OpenAI-compatible server, checked on the wire against
llama.cpp's server from the xllamacpp wheel (the one the realmodel tier and `bench ask`
run), with SmolLM2-135M-Instruct.

Relied on by `kb_lsp/llm/openai_chat.py`: streaming as SSE deltas ending in `[DONE]`;
usage in a last chunk only when asked (`stream_options.include_usage`); `/v1/models`
listing the served model and its context; `/props` saying whether the template takes tools
and the context; one served model answering to any name; a prompt over the context
refused with HTTP 400 naming the context. Needed next (model-extracted metadata):
`response_format` with a JSON schema, whose reply must parse and validate.

Where the wheel's server behaves differently from llama-server's documentation the test
says so in a comment starting "Differs from llama-server".
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

import httpx
import pytest
from pydantic import BaseModel, ConfigDict, Field

from kb_lsp.config import load_settings
from kb_lsp.engine.llm import ContextTooLong, OpenAIChat, create_llm

from .conftest import ALIAS, CONTEXT, LlamaServer

pytestmark = [pytest.mark.realmodel, pytest.mark.timeout(900)]
TIMEOUT = httpx.Timeout(600.0, connect=10.0)  # one thread on a busy machine
COLOURS = [{"role": "user", "content": "Name three colours."}]


def stream_events(server: LlamaServer, body: dict[str, Any]) -> tuple[httpx.Headers, list[str]]:
    """The `data:` payloads of a streamed chat completion, in order."""
    with (
        httpx.Client(timeout=TIMEOUT) as http,
        http.stream(
            "POST", f"{server.base_url}/chat/completions", json={**body, "stream": True}
        ) as response,
    ):
        assert response.status_code == 200, response.read()
        lines = [line for line in response.iter_lines() if line]
        headers = response.headers
    assert all(line.startswith("data: ") for line in lines), lines
    return headers, [line[len("data: ") :] for line in lines]


def chunks_of(events: list[str]) -> list[dict[str, Any]]:
    assert events[-1] == "[DONE]" and "[DONE]" not in events[:-1]
    return [json.loads(event) for event in events[:-1]]


def content_of(chunks: list[dict[str, Any]]) -> list[str]:
    return [
        choice["delta"]["content"]
        for chunk in chunks
        for choice in chunk["choices"]
        if choice["delta"].get("content")
    ]


def test_models_lists_the_served_model_and_its_context(llama_server: LlamaServer) -> None:
    listing = httpx.get(f"{llama_server.base_url}/models", timeout=TIMEOUT).json()
    assert [model["id"] for model in listing["data"]] == [ALIAS]
    assert listing["data"][0]["meta"]["n_ctx"] == CONTEXT
    # One served model answers to any name (kb.llm.model may name another).
    reply = httpx.post(
        f"{llama_server.base_url}/chat/completions",
        json={"model": "not-this-one", "messages": COLOURS, "max_tokens": 4},
        timeout=TIMEOUT,
    )
    assert reply.status_code == 200, reply.text
    assert reply.json()["choices"][0]["message"]["content"]


def test_props_says_the_template_takes_no_tools(llama_server: LlamaServer) -> None:
    props = httpx.get(f"{llama_server.root}/props", timeout=TIMEOUT).json()
    caps = props["chat_template_caps"]
    assert (caps["supports_tools"], caps["supports_tool_calls"]) == (False, False)
    assert props["default_generation_settings"]["n_ctx"] == CONTEXT
    assert props["total_slots"] == 1
    # (Its `build_info`, `b0-unknown` where llama-server says `b<number>-<commit>`, is not
    # pinned: kb-lsp reads no build number, and a new wheel may well have one.)


def test_tools_sent_to_a_template_without_them_are_dropped(llama_server: LlamaServer) -> None:
    # Why kb-lsp reads /props before offering tools: the request is accepted and the
    # model never sees them, so an agent would wait for calls that cannot come.
    tool = {
        "type": "function",
        "function": {
            "name": "search_knowledge_base",
            "description": "Search the notes.",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"],
            },
        },
    }
    reply = httpx.post(
        f"{llama_server.base_url}/chat/completions",
        json={
            "messages": [{"role": "user", "content": "Search the notes for Mexico."}],
            "tools": [tool],
            "max_tokens": 8,
        },
        timeout=TIMEOUT,
    )
    assert reply.status_code == 200, reply.text
    message = reply.json()["choices"][0]["message"]
    assert not message.get("tool_calls") and message["content"]


def test_streaming_is_sse_deltas_ending_in_done(llama_server: LlamaServer) -> None:
    headers, events = stream_events(llama_server, {"messages": COLOURS, "max_tokens": 16})
    assert headers["content-type"].startswith("text/event-stream")
    chunks = chunks_of(events)
    assert all(chunk["object"] == "chat.completion.chunk" for chunk in chunks)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert len(content_of(chunks)) > 1  # token by token, not one block
    finishes = [c["finish_reason"] for chunk in chunks for c in chunk["choices"]]
    assert finishes[-1] in ("stop", "length") and not any(finishes[:-1])


@pytest.mark.parametrize("include_usage", [True, False])
def test_usage_comes_only_when_asked(llama_server: LlamaServer, include_usage: bool) -> None:
    body = {
        "messages": COLOURS,
        "max_tokens": 12,
        "stream_options": {"include_usage": include_usage},
    }
    chunks = chunks_of(stream_events(llama_server, body)[1])
    with_usage = [chunk for chunk in chunks if "usage" in chunk]
    if not include_usage:
        assert with_usage == []
        return
    # As OpenAI documents it: one last chunk, with no choices, carrying the usage.
    assert with_usage == [chunks[-1]] and chunks[-1]["choices"] == []
    usage = chunks[-1]["usage"]
    assert usage["prompt_tokens"] > 0
    assert len(content_of(chunks)) <= usage["completion_tokens"] <= 12
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


class NoteCard(BaseModel):
    """The kind of record model-extracted metadata asks for."""

    model_config = ConfigDict(extra="forbid")
    title: Annotated[str, Field(min_length=1, max_length=60)]
    kind: Literal["runbook", "meeting", "policy", "reference"]
    priority: Annotated[int, Field(ge=1, le=5)]
    tags: Annotated[list[Annotated[str, Field(max_length=20)]], Field(max_length=3)]


NOTE = (
    "Mexico payments: payments to the Mexican subsidiary are sent by SPEI before the "
    "14:30 Mexico City cut-off; anything released later goes out the next business day."
)


@pytest.mark.parametrize("shape", ["openai", "llama.cpp"])
def test_response_format_json_schema_is_obeyed(llama_server: LlamaServer, shape: str) -> None:
    schema = NoteCard.model_json_schema()
    response_format = (
        {"type": "json_schema", "json_schema": {"name": "note", "strict": True, "schema": schema}}
        if shape == "openai"
        else {"type": "json_object", "schema": schema}  # llama-server's own shorthand
    )
    body = {
        "messages": [
            {"role": "system", "content": "Describe the note as a JSON object."},
            {"role": "user", "content": NOTE},
        ],
        "response_format": response_format,
        "temperature": 0,
        "max_tokens": 400,
    }
    chunks = chunks_of(stream_events(llama_server, body)[1])
    finishes = [c["finish_reason"] for chunk in chunks for c in chunk["choices"]]
    assert finishes[-1] == "stop"  # the grammar closed the object before the limit
    text = "".join(content_of(chunks))
    # A 135M model left to itself writes prose; constrained, every field, enum, range
    # and length holds, and nothing else is there.
    card = NoteCard.model_validate_json(text)
    assert set(json.loads(text)) == set(NoteCard.model_fields)
    assert card.title.strip()


def test_a_schema_it_cannot_use_is_refused_by_name(llama_server: LlamaServer) -> None:
    reply = httpx.post(
        f"{llama_server.base_url}/chat/completions",
        json={
            "messages": COLOURS,
            "response_format": {"type": "json_schema", "json_schema": {"schema": {"type": "x"}}},
            "max_tokens": 8,
        },
        timeout=TIMEOUT,
    )
    # Refused, not answered unconstrained: a caller never mistakes free text for a record.
    assert reply.status_code == 400, reply.text
    error = reply.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert "unrecognized type x" in error["message"]


def test_a_prompt_over_the_context_is_context_too_long(llama_server: LlamaServer) -> None:
    settings = load_settings(
        {"llm": {"provider": "openai", "baseUrl": llama_server.base_url, "maxTokens": 8}}
    ).settings
    model = create_llm(settings)
    assert isinstance(model, OpenAIChat)
    with pytest.raises(ContextTooLong) as caught:
        model.chat([{"role": "user", "content": "payments " * (CONTEXT + 500)}], max_tokens=8)
    message = str(caught.value)
    assert f"({CONTEXT} tokens)" in message
    assert "exceeds the available context size" in message  # the server's own words
