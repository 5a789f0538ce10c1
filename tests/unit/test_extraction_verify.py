"""A model's claims checked against the note (issue 36): evidence that is the note's own
words and says the value is kept with its span; anything else is rejected with the
reason. Hand-picked cases, the date and number forms, and properties over arbitrary
evidence."""

from __future__ import annotations

import json
from datetime import date

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kb_lsp.engine.metadata.claims import Claim, Extraction, Reply
from kb_lsp.engine.metadata.extractor import prompt, response_schema, shown_options
from kb_lsp.engine.metadata.folding import fold, folded
from kb_lsp.engine.metadata.mentions import dates, numbers
from kb_lsp.engine.metadata.reply import read_reply
from kb_lsp.engine.metadata.user_schema import MAX_EVIDENCE, UserSchema, parse_schema
from kb_lsp.engine.metadata.values import Value
from kb_lsp.engine.metadata.verify import verify

SCHEMA = parse_schema(
    json.dumps(
        {
            "properties": {
                "counterparty": {"type": "string"},
                "systems": {"type": "array", "items": {"type": "string"}},
                "amount": {"type": "number"},
                "fee": {"type": "number", "x-units": ["EUR", "$"]},
                "due": {"type": "string", "format": "date"},
                "kind": {
                    "enum": ["runbook", "postmortem", "decision"],
                    "x-synonyms": {"postmortem": ["incident review", "outage"]},
                },
            }
        }
    ),
    "schema.json",
)

NOTE = (
    "# Acme wire runbook\n"
    "\n"
    "Owner: Priya Raman.\n"
    "\n"
    "Every quarter we wire **Acme Corp** the licence fee of 48,000 EUR through the\n"
    "Ledger and SAP systems. The next wire is due on March 3rd, 2026 — check the “IBAN”.\n"
)


def check(fields: dict[str, object], note: str = NOTE, schema: UserSchema = SCHEMA) -> Extraction:
    return verify(read_reply(schema, json.dumps(fields)), note, schema)


def kept(found: Extraction) -> dict[str, list[str]]:
    return {name: [k.value.text for k in items] for name, items in found.kept.items()}


def test_a_value_the_note_holds_is_kept_with_its_span() -> None:
    found = check({"counterparty": {"evidence": "we wire Acme Corp the", "value": "Acme Corp"}})
    assert kept(found) == {"counterparty": ["Acme Corp"]} and found.rejected == ()
    span = found.kept["counterparty"][0].span
    # The note's own words (its bold marks kept), where they are: offsets, 0-based lines.
    assert NOTE[span.start : span.end] == span.evidence == "we wire **Acme Corp** the"
    assert (span.line, span.end_line) == (4, 4)
    assert NOTE.splitlines()[4][span.character : span.end_character] == span.evidence


def test_a_value_the_note_does_not_hold_is_rejected_with_the_reason() -> None:
    found = check(
        {
            "counterparty": {"evidence": "we wire Bank of America", "value": "Bank of America"},
            "systems": {"evidence": "Every quarter we wire", "value": ["Oracle"]},
        }
    )
    assert found.kept == {}
    reasons = {r.field: r.reason for r in found.rejected}
    assert reasons["counterparty"].startswith("the evidence is not in the note: “we wire Bank")
    assert reasons["systems"] == "the evidence does not say it: “Every quarter we wire”"
    assert {r.value for r in found.rejected} == {"Bank of America", "Oracle"}


def test_spacing_case_quotes_and_line_breaks_do_not_matter() -> None:
    found = check(
        {
            "systems": {
                "evidence": "through the ledger and sap systems. The next wire is due on March "
                '3rd, 2026 - check the "IBAN"',
                "value": ["Ledger", "SAP", "Oracle"],
            }
        }
    )
    assert kept(found) == {"systems": ["Ledger", "SAP"]}  # item by item
    assert [r.value for r in found.rejected] == ["Oracle"]
    span = found.kept["systems"][0].span
    assert (span.line, span.end_line) == (4, 5)  # across the note's line break


def test_a_date_written_out_in_the_note_and_returned_as_iso_is_kept() -> None:
    copied = check({"due": {"evidence": "due on March 3rd, 2026", "value": "2026-03-03"}})
    assert kept(copied) == {"due": ["2026-03-03"]}
    assert copied.kept["due"][0].span.evidence == "due on March 3rd, 2026"
    # The model wrote the date its own way in the evidence too: the note's words are kept.
    rewritten = check(
        {"due": {"evidence": "The next wire is due on 2026-03-03", "value": "2026-03-03"}}
    )
    assert kept(rewritten) == {"due": ["2026-03-03"]}
    assert rewritten.kept["due"][0].span.evidence == "The next wire is due on March 3rd, 2026"
    # Copied loosely (a word left out, the date its own way): the note's words, whole.
    loose = check({"due": {"evidence": "The wire is due on 03/03/2026", "value": "2026-03-03"}})
    assert kept(loose) == {"due": ["2026-03-03"]}
    assert loose.kept["due"][0].span.evidence == "The next wire is due on March 3rd, 2026"
    # Another date, or the right date with words the note does not have: rejected.
    wrong = check({"due": {"evidence": "due on March 3rd, 2026", "value": "2026-03-04"}})
    assert kept(wrong) == {} and "does not say it" in wrong.rejected[0].reason
    made_up = check({"due": {"evidence": "paid in full on 2026-03-03", "value": "2026-03-03"}})
    assert kept(made_up) == {} and "not in the note" in made_up.rejected[0].reason


def test_a_number_written_with_separators_is_the_same_number() -> None:
    found = check({"amount": {"evidence": "the licence fee of 48000 EUR", "value": 48000}})
    assert kept(found) == {"amount": ["48000"]}
    assert found.kept["amount"][0].span.evidence == "the licence fee of 48,000 EUR"
    wrong = check({"amount": {"evidence": "the licence fee of 48,000 EUR", "value": 4800}})
    assert kept(wrong) == {}
    # The year of a date is not an amount.
    year = check({"amount": {"evidence": "March 3rd, 2026", "value": 2026}})
    assert kept(year) == {}


def test_a_number_with_units_needs_one_beside_it() -> None:
    note = "# Outage\n\nDown for 47 minutes; 18,000 EUR of orders and $2,500 of fees.\n"
    minutes = check({"fee": {"evidence": "Down for 47 minutes", "value": 47}}, note)
    assert kept(minutes) == {} and "does not say it" in minutes.rejected[0].reason
    euros = check({"fee": {"evidence": "18,000 EUR of orders", "value": 18000}}, note)
    assert kept(euros) == {"fee": ["18000"]}
    dollars = check({"fee": {"evidence": "$2,500 of fees", "value": 2500}}, note)
    assert kept(dollars) == {"fee": ["2500"]}
    # Without `x-units` a number is any number the words hold.
    assert kept(check({"amount": {"evidence": "for 47 minutes", "value": 47}}, note)) == {
        "amount": ["47"]
    }


def test_a_text_value_is_a_value_not_a_passage() -> None:
    copied = "Every quarter we wire Acme Corp the licence fee"
    sentence = check({"counterparty": {"evidence": copied, "value": copied}})
    assert kept(sentence) == {}
    assert "a passage, not a value" in sentence.rejected[0].reason
    clause = "Owner: Priya Raman."
    whole = check({"counterparty": {"evidence": clause, "value": "Owner: Priya Raman"}})
    # Up to four words the whole evidence may be the value (a name quoted on its own);
    # beyond that it is the words copied twice, nothing read from them.
    assert kept(whole) == {"counterparty": ["Owner: Priya Raman"]}
    five = check(
        {
            "systems": {
                "evidence": "the Ledger and SAP systems",
                "value": ["the Ledger and SAP systems"],
            }
        }
    )
    assert kept(five) == {} and "copied, not read" in five.rejected[0].reason
    short = check({"counterparty": {"evidence": "Acme Corp", "value": "Acme Corp"}})
    assert kept(short) == {"counterparty": ["Acme Corp"]}


def test_an_enum_needs_its_option_or_a_synonym_in_the_evidence() -> None:
    titled = check({"kind": {"evidence": "Acme wire runbook", "value": "runbook"}})
    assert kept(titled) == {"kind": ["runbook"]}
    by_order = check({"kind": "runbook"})  # the first option, and no evidence: a guess
    assert kept(by_order) == {}
    assert by_order.rejected[0].reason.startswith("no evidence")
    unsaid = check({"kind": {"evidence": "Owner: Priya Raman.", "value": "decision"}})
    assert kept(unsaid) == {} and "does not say it" in unsaid.rejected[0].reason
    note = "# Checkout down\n\nThe incident review of the outage on 2026-01-22.\n"
    synonym = check({"kind": {"evidence": "The incident review", "value": "postmortem"}}, note)
    assert kept(synonym) == {"kind": ["postmortem"]}


def test_evidence_too_long_to_be_a_span_is_rejected() -> None:
    long_note = "Acme Corp " * 100
    found = check(
        {"counterparty": {"evidence": long_note[: MAX_EVIDENCE + 10], "value": "Acme Corp"}},
        long_note,
    )
    assert kept(found) == {} and "characters long" in found.rejected[0].reason


def test_the_extraction_keeps_its_spans_and_reasons_through_json() -> None:
    found = check(
        {
            "counterparty": {"evidence": "wire Acme Corp", "value": "Acme Corp"},
            "kind": "decision",
            "amount": "lots",
        }
    )
    again = Extraction.from_json(found.as_json())
    assert again == found
    assert {r.field: r.valid for r in again.rejected} == {"kind": True, "amount": False}


@pytest.mark.parametrize(
    ("text", "day"),
    [
        ("due 2026-03-03.", date(2026, 3, 3)),
        ("due March 3rd, 2026", date(2026, 3, 3)),
        ("due 3 March 2026", date(2026, 3, 3)),
        ("on the 3rd of March, 2026", date(2026, 3, 3)),
        ("Mar. 3 2026", date(2026, 3, 3)),
        ("Sept 9, 2026", date(2026, 9, 9)),
        ("03.03.2026", date(2026, 3, 3)),
        ("3/31/2026", date(2026, 3, 31)),
        ("at 2026-03-02T20:00", date(2026, 3, 2)),
    ],
)
def test_common_date_forms_are_read(text: str, day: date) -> None:
    assert [m.value for m in dates(folded(text))] == [day]


def test_ambiguous_and_impossible_dates() -> None:
    assert {m.value for m in dates("4/3/2026")} == {date(2026, 4, 3), date(2026, 3, 4)}
    assert dates("2026-13-01") == [] and dates("february 30, 2026") == []


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("48000 EUR", [48000.0]),
        ("48,000 and 1,250.50", [48000.0, 1250.5]),
        ("$92,000.", [92000.0]),
        ("48k, 2.5 million", [48000.0, 2_500_000.0]),
        ("on 2026-03-31 we paid 12", [12.0]),
        ("v1.2.3, room 3b, 12,34", []),
    ],
)
def test_numbers_are_read_and_a_dates_figures_are_not_numbers(
    text: str, values: list[float]
) -> None:
    assert [m.value for m in numbers(folded(text))] == values


def test_folding_maps_back_to_the_notes_offsets() -> None:
    text = "  Pay **ACME**\n\n   Corp’s  fee "
    f = fold(text)
    assert f.text == "pay acme corp's fee"
    start = f.text.index("acme corp's")
    a, b = f.span(start, start + len("acme corp's"))
    assert text[a:b] == "ACME**\n\n   Corp’s"


words = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=40)


@settings(max_examples=300, deadline=None)
@given(note=words, evidence=words, field=st.sampled_from(["counterparty", "systems", "kind"]))
def test_evidence_that_is_not_in_the_note_is_always_rejected(
    note: str, evidence: str, field: str
) -> None:
    assume(folded(evidence) not in folded(note))
    value: object = ["x"] if field == "systems" else "runbook" if field == "kind" else evidence
    found = verify(Reply((Claim(field, tuple(_values(field, value)), evidence),)), note, SCHEMA)
    assert found.kept == {}
    assert all("not in the note" in r.reason or "no evidence" in r.reason for r in found.rejected)


@settings(max_examples=300, deadline=None)
@given(note=words, start=st.integers(0, 40), length=st.integers(1, 40))
def test_evidence_copied_from_the_note_keeps_the_notes_own_words(
    note: str, start: int, length: int
) -> None:
    evidence = note[start : start + length]
    assume(evidence.strip())
    found = verify(
        Reply((Claim("counterparty", (Value("string", evidence.strip()),), evidence),)),
        note,
        SCHEMA,
    )
    for item in found.kept.get("counterparty", []):
        span = item.span
        assert note[span.start : span.end] == span.evidence
        assert folded(span.evidence) == folded(evidence)
        assert folded(item.value.text) in folded(span.evidence)


@settings(max_examples=200, deadline=None)
@given(
    prose=st.lists(
        st.sampled_from(["paid", "on", "the", "fee", "of", "due", "EUR", ","]), max_size=6
    ),
    day=st.dates(min_value=date(1990, 1, 1), max_value=date(2099, 12, 31)),
    form=st.sampled_from(["{d:%Y-%m-%d}", "{d:%B} {d.day}, {d:%Y}", "{d.day} {d:%b} {d:%Y}"]),
    claimed=st.dates(min_value=date(1990, 1, 1), max_value=date(2099, 12, 31)),
)
def test_a_kept_date_is_a_date_the_notes_words_say(
    prose: list[str], day: date, form: str, claimed: date
) -> None:
    note = " ".join(prose) + " " + form.format(d=day) + " end"
    evidence = " ".join(prose) + " " + claimed.isoformat()
    found = verify(
        Reply((Claim("due", (Value("date", claimed.isoformat()),), evidence),)), note, SCHEMA
    )
    if found.kept:
        span = found.kept["due"][0].span
        assert claimed == day
        assert [m.value for m in dates(folded(span.evidence))] == [day]
    else:
        assert claimed != day  # the same date, copied with the same words: kept


def _values(field: str, value: object) -> list[Value]:
    if field == "systems":
        return [Value("list", str(v)) for v in value]  # type: ignore[attr-defined]
    return [Value("string", str(value))]


def test_option_order_is_the_notes_not_the_schemas() -> None:
    """Reversing the schema's options changes nothing a model is shown, and across notes
    every option is shown first: the author's order is no signal."""
    forward = SCHEMA
    spec = json.loads(
        json.dumps({"properties": {"kind": {"enum": ["decision", "postmortem", "runbook"]}}})
    )
    backward = parse_schema(json.dumps(spec), "reversed.json")
    notes = [f"# Note {n}\n\nSomething happened on day {n}.\n" for n in range(30)]
    firsts = set()
    for note in notes:
        asked = prompt(forward, "t", note)[1]["content"]
        kind_line = next(line for line in asked.splitlines() if line.startswith("- kind"))
        again = prompt(backward, "t", note)[1]["content"]
        assert kind_line == next(line for line in again.splitlines() if line.startswith("- kind"))
        assert kind_line.endswith('"none of these")')
        kind = forward.field("kind")
        assert kind is not None
        shown = response_schema(forward, note)["properties"]["kind"]["anyOf"][1]
        assert shown["properties"]["value"]["enum"][:3] == shown_options(kind, note)
        firsts.add(shown_options(kind, note)[0])
    assert firsts == {"runbook", "postmortem", "decision"}
