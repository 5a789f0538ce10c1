"""How a grounded answer and a summary are sampled: close to the passages, and short.

A server's default temperature (0.8 for llama-server and Ollama) lets a small model wander
from the passages it was given, and a reply bound only by a quarter of the context runs
to thousands of tokens of repetition. Answers from passages and summaries are reports of
what the notes say: a low temperature and a bounded reply. The agent's tool loop keeps
the server's sampling (tool calls need none of this).
"""

from __future__ import annotations

from kb_lsp.engine.llm import ChatModel

TEMPERATURE = 0.1  # at most 0.2 (issue 29): near-greedy, without greedy's loops
GROUNDED_MAX_TOKENS = 384  # a few sentences with their citations
SUMMARY_MAX_TOKENS = 512  # an overview and up to 8 bullets


def grounded_max_tokens(llm: ChatModel) -> int:
    """The reply limit of a grounded answer: the configured one, bounded."""
    return min(llm.num_predict, GROUNDED_MAX_TOKENS)


def summary_max_tokens(llm: ChatModel) -> int:
    return min(llm.num_predict, SUMMARY_MAX_TOKENS)
