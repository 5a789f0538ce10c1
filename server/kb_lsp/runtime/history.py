"""A conversation as the client keeps it (issue 39): the turns a client sends with a
question (`AskParams.history`) replace what the server remembers of that conversation, so
a conversation reopened from the editor's history — after a restart, when the server's
memory of it is gone — goes on where it was, Regenerate answers the last question again
without the answer it replaces, and an edited question is asked after the turns before
it only. The turns are kept as the server keeps its own (`Conversations.add`: without
the sources, the quotes and the `[n]`)."""

from __future__ import annotations

from kb_lsp.engine.agent.conversations import Conversations
from kb_lsp.protocol import AskParams


def with_history(params: AskParams, conversations: Conversations) -> AskParams:
    """`params` with its conversation set to the turns it carries (a new conversation id
    when it has none); as they are when it carries none."""
    if params.history is None:
        return params
    conversation = params.conversation_id or Conversations.new_id()
    conversations.forget(conversation)
    for turn in params.history:
        conversations.add(conversation, turn.question, turn.answer, "answer")
    return params.model_copy(update={"conversation_id": conversation, "history": None})
