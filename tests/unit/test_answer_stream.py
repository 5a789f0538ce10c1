"""`AnswerStream`: the answer's text in throttled pieces, flushed while the model is silent."""

from __future__ import annotations

import threading

from hypothesis import given, settings
from hypothesis import strategies as st

from kb_lsp.engine.agent.answer_stream import AnswerStream


class Sent:
    """What the stream sent, with an event per piece to wait on."""

    def __init__(self) -> None:
        self.pieces: list[tuple[str, bool]] = []
        self.cond = threading.Condition()

    def __call__(self, text: str, replace: bool) -> None:
        with self.cond:
            self.pieces.append((text, replace))
            self.cond.notify_all()

    def wait_for(self, count: int) -> None:
        with self.cond:
            assert self.cond.wait_for(lambda: len(self.pieces) >= count, timeout=30)

    @property
    def text(self) -> str:
        out = ""
        for text, replace in self.pieces:
            out = text if replace else out + text
        return out


def test_pending_text_goes_out_while_the_model_is_silent() -> None:
    sent = Sent()
    stream = AnswerStream(sent, interval=0.05)
    stream.feed("Deploys ")
    sent.wait_for(1)  # the first piece goes at once
    stream.feed("are frozen")
    # Nothing more is fed and the stream is not closed: the timer sends it anyway.
    sent.wait_for(2)
    assert sent.pieces == [("Deploys ", False), ("are frozen", False)]
    stream.close()
    assert sent.text == stream.shown == "Deploys are frozen"


def test_pieces_are_throttled_and_close_flushes_the_rest() -> None:
    sent = Sent()
    stream = AnswerStream(sent, interval=3600)  # no second piece before close
    words = [f"word{i} " for i in range(200)]
    for word in words:
        stream.feed(word)
    stream.close()
    assert 1 <= len(sent.pieces) <= 2
    assert sent.text == "".join(words)


def test_replace_restarts_the_pending_answer_and_abandon_drops_the_rest() -> None:
    sent = Sent()
    stream = AnswerStream(sent, interval=3600)
    stream.feed("Let me search")
    sent.wait_for(1)
    stream.restart()  # the model called tools: that was no answer
    stream.feed("At 14:30.")
    stream.abandon()  # cancelled before the next piece was due: nothing more goes out
    assert sent.pieces == [("Let me search", False)]
    stream.feed("late")  # after the end: ignored
    assert sent.pieces == [("Let me search", False)]


def test_replace_with_the_same_text_sends_nothing() -> None:
    sent = Sent()
    stream = AnswerStream(sent, interval=0)
    stream.feed("At 14:30.")
    stream.replace("At 14:30.")
    stream.replace("At 14:30 [1].")
    stream.close()
    assert sent.text == "At 14:30 [1]."
    assert sent.pieces[-1] == ("At 14:30 [1].", True)


def test_what_came_before_a_replacement_is_sent_whole_first() -> None:
    sent = Sent()
    stream = AnswerStream(sent, interval=3600)  # the second piece is not due before close
    stream.feed("The cu")
    sent.wait_for(1)
    stream.feed("t-off is at noon.")
    stream.replace("From your notes: 14:30 [1]\n\nThe cut-off is at noon.")
    stream.close()
    # A terminal cannot take text back: it has shown the model's sentence whole.
    assert sent.pieces == [
        ("The cu", False),
        ("t-off is at noon.", False),
        ("From your notes: 14:30 [1]\n\nThe cut-off is at noon.", True),
    ]


def test_a_lead_model_text_and_label_go_out_as_appends() -> None:
    sent = Sent()
    stream = AnswerStream(sent, interval=0)
    stream.paragraph("From your notes:\n- “14:30” [m.md:3]")
    sent.wait_for(1)  # the lead goes before the model says anything
    stream.feed("\n The cut-off is at noon.")  # the model's leading blanks are not sent
    stream.become(
        "From your notes:\n- “14:30” [m.md:3]\n\nThe cut-off is at noon.\n\n> Unverified."
    )
    stream.close()
    assert all(not replace for _, replace in sent.pieces)
    assert sent.pieces[0] == ("From your notes:\n- “14:30” [m.md:3]\n\n", False)
    assert sent.text == stream.shown
    assert sent.text.split("\n\n")[1:] == ["The cut-off is at noon.", "> Unverified."]


def test_become_replaces_when_what_was_shown_changed() -> None:
    sent = Sent()
    stream = AnswerStream(sent, interval=0)
    stream.feed("At 14:30 [1][9].")
    stream.become("At 14:30 [1].\n\n> Unverified.")
    stream.become("At 14:30 [1].\n\n> Unverified.")  # the same: nothing more
    stream.close()
    assert sent.pieces[-1] == ("At 14:30 [1].\n\n> Unverified.", True)
    assert sent.text == stream.shown == "At 14:30 [1].\n\n> Unverified."


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(max_size=12),
            st.tuples(st.sampled_from(["replace", "become", "paragraph"]), st.text(max_size=12)),
        )
    )
)
def test_what_the_client_rebuilds_is_what_was_fed(ops: list[str | tuple[str, str]]) -> None:
    sent = Sent()
    stream = AnswerStream(sent, interval=0.001)
    for op in ops:
        if isinstance(op, str):
            stream.feed(op)
        elif op[0] == "replace":
            stream.replace(op[1])
        elif op[0] == "become":
            stream.become(stream.shown + op[1] if len(op[1]) % 2 else op[1])
        else:
            stream.paragraph(op[1])
    stream.close()
    assert sent.text == stream.shown
