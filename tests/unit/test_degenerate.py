"""The degenerate-output watch (issue 35, point 5): loops, the prompt's markup written
back and text that adds nothing are found as they stream, and the text before them kept."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kb_lsp.engine.agent.degenerate import (
    MAX_UNIT,
    STALE_WORDS,
    Degenerate,
    Watch,
    repeats,
)


def streamed(text: str, size: int = 5) -> tuple[Watch, Degenerate | None]:
    watch = Watch()
    found = None
    for start in range(0, len(text), size):
        found = watch.feed(text[start : start + size])
        if found is not None:
            break
    return watch, found


def test_a_sentence_said_again_and_again_is_a_loop_and_said_once() -> None:
    watch, found = streamed("The cut-off is 14:30 [1]. " + "You can't. " * 40)
    assert found is not None and found.kind == "repetition"
    assert watch.text[: found.keep] == "The cut-off is 14:30 [1]. You can't. "
    assert found.note == "the model was repeating itself"


def test_a_line_written_a_third_time_is_a_loop() -> None:
    twice = "- Check the file twice\n"
    text = f"Steps:\n{twice}- Upload it\n{twice}{twice}"
    watch, found = streamed(text)
    assert found is not None and found.kind == "repetition"
    assert watch.text[: found.keep] == "Steps:\n- Check the file twice\n- Upload it\n"


def test_the_prompts_markup_is_cut_where_it_starts() -> None:
    for markup in (
        '<passage n="2" file="a.md">',
        "</passage>",
        "<|im_start|>user",
        "\nQuestion: why",
    ):
        watch, found = streamed(f"SPEI before 14:30 [1].{markup} more")
        assert found is not None and found.kind == "markup", markup
        assert watch.text[: found.keep].strip() == "SPEI before 14:30 [1]."


def test_text_that_adds_nothing_new_is_stale() -> None:
    opening = "Payments to Mexico go by SPEI before the cut-off at 14:30 Mexico City time [1]. "
    said = opening.split()
    shuffled = " ".join(said[(i * 7) % len(said)] for i in range(STALE_WORDS + 10))
    watch, found = streamed(opening + shuffled + " end")
    assert found is not None and found.kind in ("stale", "repetition")
    assert watch.text[: found.keep].startswith(opening.strip())


def test_an_ordinary_answer_is_not_degenerate() -> None:
    answer = (
        "Payments to the Mexican subsidiary go by SPEI before the 14:30 Mexico City cut-off "
        "[1]. Anything released after 14:30 is executed the next business day, so the "
        "treasury desk checks the queue at 14:00 [2]. Large payments above MXN 2,000,000 "
        "need two approvers, and the second must be from the controller's team [1].\n"
        "- Upload the file before noon.\n- Check the confirmation.\n- File the receipt.\n"
    )
    assert streamed(answer)[1] is None


@settings(max_examples=200, deadline=None)
@given(
    unit=st.lists(
        st.sampled_from(["you", "can't.", "the", "file", "[1]", "a", "b"]),
        min_size=1,
        max_size=MAX_UNIT,
    ),
    extra=st.integers(min_value=0, max_value=3),
    size=st.integers(min_value=1, max_value=40),
)
def test_any_run_said_enough_times_is_caught_whatever_the_pieces(
    unit: list[str], extra: int, size: int
) -> None:
    text = "Intro words here. " + " ".join(unit * (repeats(len(unit)) + extra)) + " "
    watch, found = streamed(text, size)
    assert found is not None
    # What is kept is a start of the text, and the loop is not in it twice over.
    kept = watch.text[: found.keep]
    assert text.startswith(kept) and len(kept) < len(text)


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=400), size=st.integers(min_value=1, max_value=50))
def test_what_is_kept_is_always_a_start_of_the_text(text: str, size: int) -> None:
    watch, found = streamed(text, size)
    if found is not None:
        assert text.startswith(watch.text[: found.keep])
        assert found.keep <= len(watch.text)
