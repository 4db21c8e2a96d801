"""Whose state a statement speaks of, how it is said and what it signals, read from its parse
(ramem_core.reading), and how a reading travels with a memory."""

from __future__ import annotations

from datetime import datetime

import pytest

from ramem_core import reading
from ramem_core.anchoring import RuleAnchorer
from ramem_core.errors import ModelUnavailableError
from ramem_core.reading import Cue, Mood, Owner, ParseReader, Reading, owner_kind
from ramem_core.store.codec import from_record, to_metadata
from ramem_core.types import Conversation, Session, Turn

pytestmark = pytest.mark.slow  # loads the parser


@pytest.fixture(scope="module")
def read() -> ParseReader:
    return reading.default_reader()


def one(reader: ParseReader, text: str, speaker: str = "user") -> Reading:
    return reader.read([text], [speaker])[0]


@pytest.mark.parametrize(
    ("text", "owner", "kind"),
    [
        ("I moved to Porto last week.", "", Owner.SPEAKER),
        ("We finally got the keys to the flat in Porto.", "", Owner.SPEAKER),
        ("My car broke down on the M25 again.", "", Owner.SPEAKER),
        ("My husband just started at Initech.", "my husband", Owner.KIN),
        ("My husband's company moved him to Berlin last month.", "my husband", Owner.KIN),
        ("My sister finally moved to York, she loves it.", "my sister", Owner.KIN),
        ("My parents are moving to Florida next spring.", "my parents", Owner.KIN),
        ("Priya just started at Google!", "priya", Owner.OTHER),
        ("He got the job at the bakery.", "he", Owner.PRONOUN),
    ],
)
def test_the_owner_is_the_main_clause_subject_followed_through_possessors(
    read: ParseReader, text: str, owner: str, kind: Owner
) -> None:
    found = one(read, text)
    assert found.owner == owner
    assert owner_kind(found.owner) is kind


def test_he_or_she_is_read_as_the_person_named_before() -> None:
    reader = reading.default_reader()
    found = one(reader, "My sister got a job. She starts at the hospital in York next week.")
    assert found.owner == "my sister"  # the longer sentence says "she": the sister


def test_a_sentence_about_the_speaker_by_name_is_the_speakers_own(read: ParseReader) -> None:
    assert one(read, "Caroline started at the youth centre.", speaker="Caroline").owner == ""
    assert one(read, "Melanie started at the youth centre.", speaker="Caroline").owner == "melanie"


@pytest.mark.parametrize(
    ("text", "mood"),
    [
        ("I work at Acme as an accountant.", Mood(0)),
        ("I might switch to Verizon if the price is right.", Mood.POSSIBILITY),
        ("We're thinking of moving to Porto next year.", Mood.POSSIBILITY),
        ("I'm going to apply at Google.", Mood.PLAN),
        ("Back in 2016 I worked at a bakery in Leeds.", Mood.PAST_STORY),
        ("When I was a kid we lived in Boston.", Mood.PAST_STORY),
    ],
)
def test_the_mood_of_a_statement(read: ParseReader, text: str, mood: Mood) -> None:
    assert one(read, text).mood == mood


def test_a_question_is_read_as_one(read: ParseReader) -> None:
    assert one(read, "Should I switch to Verizon?").mood & Mood.QUESTION


@pytest.mark.parametrize(
    ("text", "cue"),
    [
        ("Started a second job on top of the Acme one.", Cue.ADDS),
        ("Borrowing my dad's truck while mine is in the shop.", Cue.TEMPORARY),
        ("Still at Acme, three years now.", Cue.STILL),
        ("I quit my job at Acme.", Cue.ENDED),
        ("I no longer eat meat.", Cue.REPLACES),
    ],
)
def test_cues_are_read_off_lemmas(read: ParseReader, text: str, cue: Cue) -> None:
    assert one(read, text).cues & cue


def test_only_what_may_speak_of_a_state_is_parsed(read: ParseReader) -> None:
    assert one(read, "haha, amazing!!") is reading.PLAIN
    assert one(read, "Melanie started at Acme.").owner == "melanie"
    assert one(read, "x" * 2_100 + " I moved") is reading.PLAIN  # a pasted document
    assert reading.needs_reading("I moved to Porto")


def test_a_reading_round_trips_through_its_stored_form() -> None:
    value = Reading("my husband", ("my husband", "priya"), Mood.PLAN, Cue.NEW | Cue.ADDS, True)
    assert Reading.decode(value.encode()) == value
    assert Reading.decode(Reading(replaces=False).encode()).replaces is False
    assert Reading.decode("||0|0|") == Reading()
    assert Reading.decode("x||2|1") == Reading("x", (), Mood.POSSIBILITY, Cue.ADDS)  # 4 parts
    with pytest.raises(ValueError, match="not a stored reading"):
        Reading.decode("only|two")
    with pytest.raises(ValueError, match="not a stored reading"):
        Reading.decode("a||0|0|maybe")


def test_the_rule_anchorer_stores_each_statements_reading_with_it() -> None:
    conversation = Conversation(
        "c",
        (
            Session(
                "s1",
                (
                    Turn("1", "Ana", "My husband just started at Initech."),
                    Turn("2", "Ana", "lol"),
                ),
                datetime(2024, 1, 1, 9),
            ),
        ),
    )
    units = RuleAnchorer().anchor(conversation)
    assert units[0].context.reading is not None
    assert units[0].context.reading.owner == "my husband"
    assert units[1].context.reading is None  # nothing to read
    stored = from_record(units[0].id, units[0].content, to_metadata(units[0]))
    assert stored.context.reading == units[0].context.reading
    assert RuleAnchorer(reader=None).anchor(conversation)[0].context.reading is None


def test_a_parser_whose_files_differ_from_the_pinned_digest_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(reading, "PARSER_SHA256", "0" * 64)
    with pytest.raises(ModelUnavailableError, match="not the pinned"):
        ParseReader().read(["I moved to Porto."])
