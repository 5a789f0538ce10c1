"""`kb/ask`: the agent's answer to a question, with its sources; every step goes out as
an event (`call.on_event`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kb_lsp.contract.operations import Call
from kb_lsp.protocol import AskParams, AskResponse

if TYPE_CHECKING:
    from kb_lsp.engine.agent import AskOutcome
    from kb_lsp.runtime.runtime import Runtime


def run(rt: Runtime, params: AskParams, call: Call) -> AskResponse:
    """ "file N" and `n` refer to the caller's last list; a list the agent shows becomes
    the new one. `call.cancel` (or reopening the knowledge base) ends the run with
    `stop: "cancelled"`."""
    outcome: AskOutcome | None = None
    try:
        outcome = rt.with_agent(
            lambda agent: agent.ask(
                params,
                numbered=rt.lists.hits(call.client) or None,
                numbered_query=rt.lists.query(call.client),
                on_event=call.on_event,
                cancel=call.cancel,
            ),
            call.cancel,
        )
    finally:
        if outcome is None or outcome.response.stop == "error":
            # The model may have gone away: say so soon.
            rt.session.probe.refresh(rt.session.made_agent)
    if outcome.numbered is not None:
        rt.lists.remember(call.client, params.question, outcome.numbered, origin="agent")
    return outcome.response
