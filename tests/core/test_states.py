"""States that hold until superseded (issue 30): "now" reads the latest statement of a chain
first, a past time finds a lasting state valid over its interval, an earlier value keeps its
place, and supersession is derived when read."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

import pytest

from ramem_core import RaMem, RetrievalConfig
from ramem_core.states import asks_earlier, asks_now, asks_value, state_kinds, values
from ramem_core.store.chroma import ChromaStore
from ramem_core.synthesis import evidence_metadata, validity
from ramem_core.temporal import describe
from ramem_core.testing import SAME_KIND, WordCounter
from tests.builders import ids


@pytest.fixture
def memory(store: ChromaStore) -> RaMem:
    """A RaMem whose kinds of state are its words' alone: the hash embedder has no
    neighbourhoods for prototypes to find (kinds from vectors: ``test_state_kinds.py``)."""
    return RaMem(store, counter=WordCounter(), config=WORDS)


WORDS = RetrievalConfig(state_kind_vectors=None, replacement=SAME_KIND)
"""The kinds of state of the words alone, and a replacement model that reads them: a later
statement of one kind replaces an earlier one (the shipped model reads the embedder's
vectors, which the hash embedder does not have: ``test_replacement.py``)."""
JAN = datetime(2024, 1, 10, 9)
JUNE = datetime(2024, 6, 2, 9)


def _moved(memory: RaMem) -> tuple[str, str]:
    lisbon = memory.add_turn("user", "I live in Lisbon, near the river.", at=JAN)
    memory.add_turn("user", "I baked sourdough bread today.", at=datetime(2024, 3, 1, 9))
    porto = memory.add_turn("user", "I moved to Porto last week.", at=JUNE)
    return lisbon.id, porto.id


def _first(memory: RaMem, query: str, k: int = 3) -> list[str]:
    return ids(memory.recall(query, k=k, at=datetime(2024, 7, 1)))


def test_a_question_about_now_reads_the_latest_statement_first(memory: RaMem) -> None:
    lisbon, porto = _moved(memory)
    found = memory.recall("Where do I live now?", k=3, at=datetime(2024, 7, 1))
    ids = [e.unit.id for e in found]
    assert ids.index(porto) < ids.index(lisbon)  # Porto first, Lisbon after it, still there
    [old] = [e for e in found if e.unit.id == lisbon]
    assert old.superseded is not None
    assert old.superseded.by == porto
    assert old.superseded.on == JUNE
    assert next(e for e in found if e.unit.id == porto).superseded is None


def test_a_move_last_week_ends_the_earlier_state_that_week(memory: RaMem) -> None:
    """The Porto statement, said 2 June, says the move was the week before: Lisbon held until
    then, not until the day it was said, in the label and for a question about a day between."""
    lisbon, _ = _moved(memory)
    found = memory.recall("Where do I live now?", k=3, at=datetime(2024, 7, 1))
    [old] = [e for e in found if e.unit.id == lisbon]
    assert old.superseded is not None
    since = old.superseded.since
    assert since is not None
    assert since.end < JUNE  # "last week": before it was said
    assert dict(validity(old))["superseded"].startswith(f"possibly, since {describe(since)}, by ")
    assert evidence_metadata(old)["superseded_since"] == since.start.isoformat()
    found = memory.recall("Where did I live on 1 June 2024?", k=3, at=datetime(2024, 7, 1))
    [old] = [e for e in found if e.unit.id == lisbon]
    assert not any("held" in s for s in old.satisfied)  # moved by then
    found = memory.recall("Where did I live in April 2024?", k=3, at=datetime(2024, 7, 1))
    assert any("held through" in s for s in found[0].satisfied)  # and held before it


def test_a_move_holds_from_the_week_it_says_through_a_later_month(memory: RaMem) -> None:
    """ "I moved to Porto last week" (said 28 May) holds from that week on: a question about
    June finds it valid, and Lisbon, which it superseded, not."""
    lisbon = memory.add_turn("user", "I live in Lisbon, near the river.", at=JAN)
    porto = memory.add_turn(
        "user", "I moved to Porto last week, I live by the sea now.", at=datetime(2024, 5, 28, 9)
    )
    memory.add_turn("user", "I baked a cake today.", at=datetime(2024, 7, 10, 9))
    found = memory.recall("Where did I live in June 2024?", k=2, at=datetime(2024, 8, 1))
    assert found[0].unit.id == porto.id
    assert found[0].satisfied == (
        "began week of 20 May 2024; no later change of it found, so held through 'June 2024'",
    )
    assert next(e for e in found if e.unit.id == lisbon.id).satisfied == ()


def test_a_month_between_the_last_memory_and_the_moment_of_asking_is_grounded(
    memory: RaMem,
) -> None:
    """On a live agent the memory knows up to the moment of asking: nothing said since May,
    asked in August about June, the move of May still holds then."""
    memory.add_turn("user", "I live in Lisbon, near the river.", at=JAN)
    porto = memory.add_turn(
        "user", "I moved to Porto last week, I live by the sea now.", at=datetime(2024, 5, 28, 9)
    )
    found = memory.recall("Where did I live in June 2024?", k=2, at=datetime(2024, 8, 1))
    assert [t.grounded for t in found.frame.times] == [True]
    assert found[0].unit.id == porto.id
    assert found[0].satisfied == (
        "began week of 20 May 2024; no later change of it found, so held through 'June 2024'",
    )
    # without a moment of asking, "now" is the end of the last session: June is after it
    offline = memory.recall("Where did I live in June 2024?", k=2)
    assert [t.grounded for t in offline.frame.times] == [False]


def test_a_state_ends_at_its_first_successor_not_its_latest(memory: RaMem) -> None:
    """Lisbon, then Porto (May), then Berlin (July): in June the user lived in Porto."""
    lisbon = memory.add_turn("user", "I live in Lisbon, near the river.", at=JAN)
    porto = memory.add_turn("user", "I moved to Porto, I live by the sea.", at=datetime(2024, 5, 2))
    memory.add_turn("user", "I moved to Berlin, I live downtown.", at=datetime(2024, 7, 2, 9))
    found = memory.recall("Where did I live in June 2024?", k=3, at=datetime(2024, 8, 1))
    held = {e.unit.id for e in found if any("held through" in s for s in e.satisfied)}
    assert held == {porto.id}
    assert lisbon.id not in held


def test_a_statement_of_two_states_is_superseded_per_kind(memory: RaMem) -> None:
    """ "I live in Lisbon and I work at Acme": the move ends the home, the new job the work."""
    both = memory.add_turn("user", "I live in Lisbon and I work at Acme as an engineer.", at=JAN)
    porto = memory.add_turn(
        "user", "I moved to Porto last week, I live by the sea now.", at=datetime(2024, 5, 28, 9)
    )
    google = memory.add_turn("user", "I started my new job at Google today.", at=JUNE)
    at = datetime(2024, 8, 1)
    home = memory.recall("Where did I live in June 2024?", k=3, at=at)
    [old] = [e for e in home if e.unit.id == both.id]
    assert not any("held" in s for s in old.satisfied)  # moved in May
    assert old.superseded is not None
    assert old.superseded.by == porto.id  # the label of the home asked about
    work = memory.recall("Where did I work on 1 June 2024?", k=3, at=at)
    [old] = [e for e in work if e.unit.id == both.id]
    assert any("held through" in s for s in old.satisfied)  # moved in May, new job 2 June
    assert old.superseded is not None
    assert old.superseded.by == google.id


def test_a_job_starting_next_month_leaves_the_current_one_valid_until_then(
    memory: RaMem,
) -> None:
    acme = memory.add_turn("user", "I work at Acme as an engineer.", at=JAN)
    memory.add_turn("user", "I baked sourdough bread today.", at=datetime(2024, 3, 1, 9))
    memory.add_turn("user", "I start my new job at Google next month.", at=JUNE)
    found = memory.recall("Where did I work in mid-June 2024?", k=2, at=datetime(2024, 8, 1))
    [old] = [e for e in found if e.unit.id == acme.id]
    assert old.satisfied == (
        "stated 10 January 2024, 09:00; no change of it found before July 2024, so held"
        " through 'mid-June 2024'",
    )
    assert old.superseded is not None
    assert old.superseded.since is not None
    assert dict(validity(old))["superseded"].startswith("possibly, since July 2024, by ")


def test_a_job_starting_next_month_is_not_yet_the_current_one(memory: RaMem) -> None:
    acme = memory.add_turn("user", "I work at Acme as an engineer.", at=JAN)
    google = memory.add_turn("user", "I start my new job at Google next month.", at=JUNE)
    before = memory.recall("Where do I work now?", k=2, at=datetime(2024, 6, 10))
    assert before[0].unit.id == acme.id  # Google begins in July
    assert dict(validity(before[0]))["superseded"].startswith("possibly, since July 2024, by ")
    after = memory.recall("Where do I work now?", k=2, at=datetime(2024, 8, 1))
    assert [e.unit.id for e in after] == [google.id, acme.id]


@pytest.mark.parametrize(
    "moved",
    [
        "I moved my dentist appointment to March 21.",  # a later date
        "I moved my dentist appointment to February 19 and went.",  # a past one
    ],
)
def test_an_appointment_moved_is_superseded_when_said_not_at_its_date(
    memory: RaMem, moved: str
) -> None:
    """An appointment's event time is the appointment, not when it was moved."""
    first = memory.add_turn("user", "My dentist appointment is on March 14.", at=JAN)
    memory.add_turn("user", moved, at=datetime(2024, 2, 20, 9))
    found = memory.recall("When is my dentist appointment?", k=2, at=datetime(2024, 3, 1))
    [old] = [e for e in found if e.unit.id == first.id]
    assert old.superseded is not None
    assert old.superseded.since is None
    assert dict(validity(old))["superseded"].startswith("possibly, on 20 February 2024, by ")
    assert "superseded_since" not in evidence_metadata(old)


def test_without_supersession_the_older_statement_ranks_first(memory: RaMem) -> None:
    lisbon, porto = _moved(memory)
    plain = RaMem(memory.store, config=replace(WORDS, supersession=False))
    ranked = ids(plain.recall("Where do I live now?", k=3, at=datetime(2024, 7, 1)))
    assert ranked.index(lisbon) < ranked.index(porto)  # what the chain fixes


def test_supersession_is_derived_when_read(memory: RaMem) -> None:
    lisbon, porto = _moved(memory)
    memory.delete(unit_ids=[porto])
    [first, *_] = memory.recall("Where do I live now?", k=3, at=datetime(2024, 7, 1))
    assert first.unit.id == lisbon
    assert first.superseded is None  # the predecessor is current again


def test_an_earlier_value_question_keeps_the_earlier_statement_first(memory: RaMem) -> None:
    lisbon, _ = _moved(memory)
    [first, *_] = memory.recall("Where did I live before I moved?", k=3, at=datetime(2024, 7, 1))
    assert first.unit.id == lisbon
    assert first.superseded is not None  # labelled: the generator can say "before"


def test_a_past_time_finds_a_lasting_state_valid_over_its_interval(memory: RaMem) -> None:
    lisbon, porto = _moved(memory)
    found = memory.recall("Where did I live in April 2024?", k=3, at=datetime(2024, 7, 1))
    first = found[0]
    assert first.unit.id == lisbon  # said in January, held until June
    assert first.contextual
    assert any("held through" in s for s in first.satisfied)
    later = next(e for e in found if e.unit.id == porto)
    assert not later.contextual  # said in June: not yet the case in April


def test_an_appointment_moved_reads_as_the_new_date(memory: RaMem) -> None:
    memory.add_turn("user", "My dentist appointment is on March 14.", at=datetime(2024, 2, 1))
    moved = memory.add_turn(
        "user", "I moved my dentist appointment to March 21.", at=datetime(2024, 2, 20)
    )
    [first, *_] = memory.recall("When is my dentist appointment?", k=2, at=datetime(2024, 3, 1))
    assert first.unit.id == moved.id


def test_another_persons_statement_supersedes_nothing(memory: RaMem) -> None:
    mine = memory.add_turn("user", "I live in Lisbon.", at=JAN)
    memory.add_turn("Ana", "I moved to Porto.", at=JUNE, conversation_id="ana")
    found = memory.recall("Where do I live now?", k=2, at=datetime(2024, 7, 1))
    assert next(e for e in found if e.unit.id == mine.id).superseded is None


def test_a_near_statement_of_another_person_supersedes_nothing(memory: RaMem) -> None:
    """Near in words ("I live in ... with my cat"), said later, but by someone else."""
    mine = memory.add_turn("user", "I live in Lisbon with my cat.", at=JAN)
    memory.add_turn("Ana", "I live in Porto with my cat.", at=JUNE)
    found = memory.recall("Where do I live now?", k=2, at=datetime(2024, 7, 1))
    assert next(e for e in found if e.unit.id == mine.id).superseded is None


@pytest.mark.parametrize(
    ("query", "now", "earlier"),
    [
        ("Where do I live now?", True, False),
        ("How many followers do I have on Instagram?", True, False),
        ("What is my current job?", True, False),
        ("When is my dentist appointment?", True, False),
        ("Where did I live before I moved to Porto?", False, True),
        ("What was my previous frequent flyer status?", False, True),
        ("Where did I live in April?", False, False),
        ("What did Caroline paint last summer?", False, False),
    ],
)
def test_questions_say_whether_they_ask_now_or_before(query: str, now: bool, earlier: bool) -> None:
    assert asks_now(query) is now
    assert asks_earlier(query) is earlier


@pytest.mark.parametrize(
    ("text", "something", "kinds"),
    [
        ("I have 37 coins in the jar now.", True, frozenset()),  # a count, no state word
        ("We saw thirty geese.", True, frozenset()),
        ("I baked bread.", False, frozenset()),
        ("I switched to oat milk.", True, frozenset()),  # a state word, no kind
        ("My boyfriend and I moved to Porto.", True, {"residence", "relationship"}),
        ("I got hired at Initech and booked the movers.", True, {"work", "appointment"}),
        ("Ana moved to Porto.", True, frozenset()),  # not of the speaker
        ("My favourite is the blue one.", True, {"preference"}),
    ],
)
def test_what_a_statement_states_one_pattern_at_a_time(
    text: str, something: bool, kinds: frozenset[str]
) -> None:
    """Read with one pattern for all (a text none matches is read once): each part still
    counts, a count as much as a state word, and every kind a statement names."""
    from ramem_core.states import states_something

    assert states_something(text) is something
    assert state_kinds(text) == kinds


def test_the_joined_patterns_answer_as_the_patterns_one_by_one() -> None:
    """On every statement of both phrasing sets (benchmarks/data), a statement states
    something, and speaks of a kind, exactly where one of the patterns alone says so."""
    import json
    from pathlib import Path

    from ramem_core import states

    data = Path(__file__).resolve().parents[2] / "benchmarks" / "data"
    texts = [
        turn["text"].lower()
        for name in ("state_phrasings.json", "unchanged_phrasings.json")
        for scenario in json.loads((data / name).read_text(encoding="utf-8"))["scenarios"]
        for turn in scenario["turns"]
    ]
    assert len(texts) > 1000
    kinds = list(states._KINDS_FOLDED.values())
    for text in texts:
        alone = bool(states._STATE_FOLDED.search(text) or states._COUNT_FOLDED.search(text))
        assert bool(states._STATES_FOLDED.search(text)) is alone, text
        assert bool(states._ANY_KIND_FOLDED.search(text)) is any(k.search(text) for k in kinds)


def test_whole_word_patterns_are_joined_by_first_letter() -> None:
    """Patterns of whole words become one alternation tried by first letter; a bar or a
    bracket inside a group or a class is not a top-level alternative."""
    import re

    from ramem_core import states

    assert states._alternatives(r"a(?:b|c)|[|(]x|\(|d") == [r"a(?:b|c)", "[|(]x", r"\(", "d"]
    assert states._alternatives(r"a)\b|\b(?:b") is None  # two groups, not one
    joined = states._any([re.compile(r"\b(?:live|lov\w*)\b"), re.compile(r"\b(?:job|\d+)\b")])
    assert joined.pattern == r"\b(?:l(?:ive|ov\w*)|job|\d+)\b"
    assert [bool(joined.search(t)) for t in ("loved it", "my job", "at 9", "olive")] == [
        True,
        True,
        True,
        False,
    ]
    other = states._any([re.compile(r"\bmy\b"), re.compile(r"\b(?:a?b)\b")])
    assert other.pattern == r"(?:\bmy\b)|(?:\b(?:a?b)\b)"  # not one group each: as written


def test_patterns_that_cannot_be_joined_are_refused() -> None:
    import re

    from ramem_core import states

    with pytest.raises(ValueError, match="cannot be joined"):
        states._any([re.compile("a"), re.compile("b", re.IGNORECASE)])
    with pytest.raises(ValueError, match="cannot be joined"):
        states._any([re.compile("(?P<x>a)"), re.compile("b")])
    with pytest.raises(ValueError, match="cannot be joined"):  # a group referred to by number
        states._any([re.compile(r"\b(?:a)\b"), re.compile(r"\b(?:(c)\1)\b")])
    verbose = states._any([re.compile(r"\b(?:li ve|jo b)\b # words", re.VERBOSE)])
    assert verbose.pattern == "(?:\\b(?:li ve|jo b)\\b # words\n)"  # joined as written
    assert verbose.search("my job")
    assert not verbose.search("li ve")


def test_state_kinds_tell_a_residence_from_an_appointment() -> None:
    assert state_kinds("I moved to Porto last week.") == {"residence"}
    assert state_kinds("I live in Lisbon.") == {"residence"}
    assert state_kinds("My dentist appointment is on March 14.") == {"appointment"}
    assert state_kinds("I baked bread.") == frozenset()


def test_a_recorded_question_is_never_an_anchor(memory: RaMem) -> None:
    """Once the agent recorded "What did I do after moving to Lisbon?", "after moving to
    Lisbon" still anchors on the statement that says so, not on the question."""
    moved = memory.add_turn("user", "I moved to Lisbon with my partner.", at=datetime(2023, 5, 1))
    memory.add_turn("user", "I started a pottery class downtown.", at=datetime(2023, 6, 10))
    memory.add_turn(  # a planned event: the memory's range reaches past the moment of asking
        "user", "My conference in Berlin is on 15 December 2023.", at=datetime(2023, 10, 2)
    )
    memory.add_exchange(
        "What did I do after moving to Lisbon?",
        "You started a pottery class.",
        at=datetime(2023, 11, 1),
    )
    frame = memory.frame("What did I do after moving to Lisbon?", at=datetime(2023, 11, 20))
    [after] = frame.grounded_times
    assert after.anchor_id == moved.id
    assert after.window is not None
    assert after.window.end <= datetime(2023, 11, 20)  # an "after" window ends at now


def test_a_new_users_reads_are_empty_everywhere(memory: RaMem) -> None:
    from ramem_core import RaMem as _RaMem

    assert isinstance(memory, _RaMem)
    assert list(memory.recall("What did I do last week?", namespace="new")) == []
    assert memory.situate("What did I do last week?", namespace="new").text == ""
    assert not memory.frame("last week", namespace="new").is_grounded
    assert not memory.has_namespace("new")


def test_the_llm_anchorers_named_state_chains_statements_whatever_their_words(
    memory: RaMem,
) -> None:
    """The LLM anchorer may name the state a statement sets ("updates"): two statements of
    one person naming the same state form a chain even with no shared state word and little
    shared vocabulary, so "now" reads the later first and labels the earlier superseded."""
    import json
    import re

    from ramem_core import Conversation, Session, Turn
    from ramem_core.anchoring import LLMAnchorer
    from ramem_core.testing import FakeLLM

    said = {
        "a1": ("Alice is renting a flat near the Alfama steps.", "Where Alice lives"),
        "b1": (
            "Alice says Porto is home these days; she got the keys in spring.",
            "where alice lives.",
        ),
        "c1": ("Alice bakes sourdough on Sundays.", None),
    }

    def reply(prompt: str) -> str:
        ids = re.findall(r"^(\S+) \| ", prompt, re.MULTILINE)
        return json.dumps(
            {
                "memories": [
                    {
                        "content": said[i][0],
                        "source_ids": [i],
                        "event_time": None,
                        "mentions": [],
                        "participants": ["Alice"],
                        "location": None,
                        "entities": [],
                        "topic": "",
                        "updates": said[i][1],
                    }
                    for i in ids
                ]
            }
        )

    sessions = tuple(
        Session(f"s{n}", (Turn(tid, "Alice", "..."),), datetime(2024, month, 5, 9))
        for n, (tid, month) in enumerate((("a1", 1), ("c1", 2), ("b1", 5)), start=1)
    )
    units = LLMAnchorer(FakeLLM(reply)).anchor(Conversation("c", sessions, ("Alice",)))
    assert [u.context.state for u in units] == ["Where Alice lives", "", "where alice lives."]
    memory.add_units(units)
    found = memory.recall("Where is Alice's home now?", k=3, at=datetime(2024, 6, 1))
    by_turn = {e.unit.source_ids[0]: e for e in found}
    ids = [e.unit.source_ids[0] for e in found]
    assert ids.index("b1") < ids.index("a1")
    assert by_turn["a1"].superseded is not None
    assert by_turn["a1"].superseded.by == by_turn["b1"].unit.id
    assert by_turn["c1"].superseded is None


COINS = "How many pre-1920 American coins do I have in my collection?"
THIRTY_SEVEN = "I have a total of 37 pre-1920 American coins in my collection."
THIRTY_EIGHT = (  # the count restated in other words, matching the question less well
    "Good news for the collection: my pre-1920 American coins count is 38 now after the "
    "flea market in Porto, and I want a better display case."
)


def _coins(memory: RaMem) -> tuple[str, str]:
    """A count said once, then restated with a new value days later in other words: the
    earlier statement matches the question best."""
    old = memory.add_turn("user", THIRTY_SEVEN, at=datetime(2024, 5, 27, 18))
    memory.add_turn("user", "I baked sourdough bread today.", at=datetime(2024, 5, 28, 9))
    new = memory.add_turn("user", THIRTY_EIGHT, at=datetime(2024, 5, 29, 0))
    return old.id, new.id


def test_a_restated_value_reads_latest_first(memory: RaMem) -> None:
    old, new = _coins(memory)
    ids = _first(memory, COINS)
    assert ids.index(new) < ids.index(old)  # the count as last restated, the earlier after


def test_without_the_restated_chain_the_earlier_value_ranks_first(memory: RaMem) -> None:
    old, new = _coins(memory)
    plain = RaMem(memory.store, config=replace(WORDS, restate_share=None))
    ranked = ids(plain.recall(COINS, k=3, at=datetime(2024, 7, 1)))
    assert ranked.index(old) < ranked.index(new)  # what the chain fixes


def test_a_past_value_question_at_no_time_reads_the_latest_account(memory: RaMem) -> None:
    old, new = _coins(memory)
    ids = _first(memory, "How many pre-1920 American coins did I collect?")
    assert ids.index(new) < ids.index(old)


def test_an_earlier_value_question_keeps_the_earlier_count_first(memory: RaMem) -> None:
    old, _ = _coins(memory)
    assert _first(memory, "How many pre-1920 American coins did I have originally?")[0] == old


def test_a_later_statement_without_a_value_does_not_restate_it(memory: RaMem) -> None:
    old = memory.add_turn("user", THIRTY_SEVEN, at=datetime(2024, 5, 27, 18))
    memory.add_turn(
        "user",
        "I have my pre-1920 American coins collection in a new display case.",
        at=datetime(2024, 5, 29),
    )
    assert _first(memory, COINS)[0] == old.id


def test_restatements_of_one_day_keep_their_order(memory: RaMem) -> None:
    day = datetime(2024, 5, 27, 18)
    first = memory.add_turn("user", THIRTY_SEVEN, at=day)
    later = memory.add_turn("user", THIRTY_EIGHT, at=day.replace(hour=19))
    ids = _first(memory, COINS)
    assert ids.index(first.id) < ids.index(later.id)


def test_a_restated_value_is_one_chain_across_spellings_of_its_speaker(memory: RaMem) -> None:
    """Restatements are chained per speaker as supersession chains them: a name written with
    other punctuation or spacing is the same speaker."""
    old = memory.add_turn("Mary-Ann", THIRTY_SEVEN, at=datetime(2024, 5, 27, 18))
    memory.add_turn("Mary-Ann", "I baked sourdough bread today.", at=datetime(2024, 5, 28, 9))
    new = memory.add_turn("Mary Ann", THIRTY_EIGHT, at=datetime(2024, 5, 29, 0))
    ids = _first(memory, COINS)
    assert ids.index(new.id) < ids.index(old.id)


@pytest.mark.parametrize(
    ("me", "other"), [("user", "Ana"), ("李雷", "王芳"), ("Олег", "Łucja"), ("Zoë", "Zoé")]
)
def test_another_persons_count_restates_nothing(memory: RaMem, me: str, other: str) -> None:
    """In any script: names are told apart by their letters, not only by ASCII ones."""
    old = memory.add_turn(me, THIRTY_SEVEN, at=datetime(2024, 5, 27, 18))
    memory.add_turn(other, THIRTY_EIGHT, at=datetime(2024, 5, 29), conversation_id="ana")
    assert _first(memory, COINS)[0] == old.id


@pytest.mark.parametrize(
    ("query", "value"),
    [
        ("How many coins do I have?", True),
        ("What time do I wake up on Saturdays?", True),
        ("What was the amount I was pre-approved for?", True),
        ("How long have I had my cat?", True),
        ("Where do I live now?", False),
        ("What did Caroline paint?", False),
    ],
)
def test_questions_say_whether_they_ask_for_a_value(query: str, value: bool) -> None:
    assert asks_value(query) is value


def test_values_are_numbers_times_and_counting_words() -> None:
    assert values("I wake at 7:30 on Saturdays") == {"7:30"}
    assert values("a single free night, twice a week, 38 coins, nine months") == {
        "single",
        "twice",
        "38",
        "nine",
    }
    assert values("I baked bread.") == frozenset()


MIXED_CASE = [
    "I'M Moving To Porto next week",
    "MY JOB at Acme is great",
    "We're Currently vegetarian",
    "Ana lives in Lisbon",
    "i moved into a new Apartment",
    "Our Partner company hired TWENTY people",
    "The Meeting was Rescheduled to Friday",
    "nothing to see here",
    "So Far I have Read 12 Books, In Total",
    "He is No Longer my boss",
]


@pytest.mark.parametrize("text", MIXED_CASE)
def test_statement_readers_match_regardless_of_case(text: str) -> None:
    """The per-memory readers search lower-cased text with folded patterns: each finds what
    its case-insensitive pattern finds, in any case."""
    import ramem_core.states as states

    pairs = [
        (states._STATE, states._STATE_FOLDED),
        (states._COUNT, states._COUNT_FOLDED),
        (states._STRICT, states._STRICT_FOLDED),
        (states._FIRST_PERSON, states._FIRST_PERSON_FOLDED),
        *((states._KINDS[k], states._KINDS_FOLDED[k]) for k in states._KINDS),
    ]
    for pattern, folded in pairs:
        for variant in (text, text.upper(), text.lower(), text.swapcase()):
            assert bool(pattern.search(variant)) == bool(folded.search(variant.lower()))
    assert states.state_kinds(text.upper()) == states.state_kinds(text.lower())
    assert states.states_something(text.upper()) == states.states_something(text)
    assert states.states_strictly(text.swapcase()) == states.states_strictly(text)


def test_a_pattern_with_an_upper_case_escape_is_not_folded() -> None:
    import re

    from ramem_core.states import _folded

    with pytest.raises(ValueError, match="upper-case escape"):
        _folded(re.compile(r"\bmoved\S*", re.IGNORECASE))


def _held(found: object, unit_id: str) -> tuple[str, ...]:
    return next(e for e in found if e.unit.id == unit_id).satisfied  # type: ignore[attr-defined]


def test_a_state_asked_about_a_window_not_yet_over_held_so_far(memory: RaMem) -> None:
    """Asked on 10 June about June: held through it "so far", not through a month not over."""
    lisbon = memory.add_turn("user", "I live in Lisbon, near the river.", at=JAN)
    memory.add_turn("user", "I baked a cake today.", at=datetime(2024, 6, 5, 9))
    found = memory.recall("Where did I live in June 2024?", k=2, at=datetime(2024, 6, 10))
    assert _held(found, lisbon.id) == (
        "stated 10 January 2024, 09:00; no later change of it found, so held through"
        " 'June 2024' so far",
    )


def test_a_change_said_inside_the_window_ends_the_claim_there(memory: RaMem) -> None:
    """Porto said on 2 May with no time of its own: Lisbon held until then if it changed it
    (during at least part of May); Porto is valid as said in May."""
    lisbon = memory.add_turn("user", "I live in Lisbon, near the river.", at=JAN)
    porto = memory.add_turn("user", "I live in Porto now, by the sea.", at=datetime(2024, 5, 2, 9))
    found = memory.recall("Where did I live in May 2024?", k=3, at=datetime(2024, 8, 1))
    assert _held(found, lisbon.id) == (
        "stated 10 January 2024, 09:00, until 2 May 2024 if that later statement changed it"
        " then, so held during at least part of 'May 2024'",
    )
    assert _held(found, porto.id) == ("said 2 May 2024, 09:00, within 'May 2024'",)


def test_a_state_that_may_have_begun_after_the_asked_day_may_have_held(memory: RaMem) -> None:
    """ "I moved to Porto last week" (said 28 May: a move between 20 and 26 May), asked about
    25 May: Porto may have held then, and is never told it held through the day."""
    memory.add_turn("user", "I live in Lisbon, near the river.", at=JAN)
    porto = memory.add_turn(
        "user", "I moved to Porto last week, I live by the sea now.", at=datetime(2024, 5, 28, 9)
    )
    found = memory.recall("Where did I live on 25 May 2024?", k=2, at=datetime(2024, 8, 1))
    assert _held(found, porto.id) == (
        "began week of 20 May 2024; no later change of it found, so may have held during part"
        " of '25 May 2024'",
    )


def test_a_state_ended_as_the_window_begins_is_not_held_in_it(memory: RaMem) -> None:
    """Google from next month (July): asked about July, Acme held none of it."""
    acme = memory.add_turn("user", "I work at Acme as an engineer.", at=JAN)
    google = memory.add_turn("user", "I start my new job at Google next month.", at=JUNE)
    found = memory.recall("Where did I work in July 2024?", k=2, at=datetime(2024, 8, 1))
    assert _held(found, acme.id) == ()
    assert _held(found, google.id) == ("event July 2024 within 'July 2024'",)


@pytest.mark.parametrize(
    ("begun_by", "end", "until", "expected"),
    [
        ("2024-04-01", "2024-08-01", "", "no later change of it found, so held through 'May'"),
        ("2024-05-10", "2024-08-01", "", "no later change of it found, so held during part of"),
        ("2024-06-03", "2024-08-01", "", "found, so may have held during part of 'May'"),
        ("2024-04-01", "2024-05-20", "", "found, so held through 'May' so far"),
        ("2024-04-01", "2024-07-01", "July", "; no change of it found before July, so held"),
        ("2024-04-01", "2024-05-20", "20 May", ", until 20 May if that later statement changed"),
        ("2024-04-01", "2024-05-20", "20 May", "so held during at least part of 'May'"),
    ],
)
def test_a_held_line_says_what_it_rests_on(
    begun_by: str, end: str, until: str, expected: str
) -> None:
    """Each way a lasting state can meet the asked window (May) has its own words: through it,
    during part of it when it began inside, "may have" when it may have begun after, "so far"
    when the window runs past the moment of asking, "at least part" when a later statement
    may have ended it inside."""
    from ramem_core.retrieval.supersession import _held
    from ramem_core.types import Granularity, TimeSpan

    may = TimeSpan(datetime(2024, 5, 1), datetime(2024, 5, 31, 23, 59, 59), Granularity.MONTH)
    line = _held(
        "stated", until, "May", datetime.fromisoformat(begun_by), datetime.fromisoformat(end), may
    )
    assert line.startswith("stated")
    assert expected in line


def test_when_a_plan_still_ahead_is_reads_it_as_it_stands_now(memory: RaMem) -> None:
    """ "When is the reunion?" asked before it asks the plan as it stands: the moved date
    first. Asked after both dates have passed, it is no question about now, and the list
    keeps the order of its content."""
    first = memory.add_turn(
        "user", "Our family reunion is booked for July 20th at Lake Tahoe.", at=datetime(2024, 5, 1)
    )
    memory.add_turn("user", "I baked sourdough bread today.", at=datetime(2024, 5, 10))
    moved = memory.add_turn(
        "user", "We rescheduled the reunion to August 3rd after all.", at=datetime(2024, 6, 1)
    )
    ahead = ids(memory.recall("When is the family reunion?", k=3, at=datetime(2024, 6, 10)))
    assert ahead.index(moved.id) < ahead.index(first.id)
    after = ids(memory.recall("When is the family reunion?", k=3, at=datetime(2024, 9, 1)))
    assert after.index(first.id) < after.index(moved.id)  # the content's own order
    # a change of place names no date: the plan it changes is still ahead
    there = memory.add_turn(
        "user", "We rescheduled the reunion to Reno instead of Tahoe.", at=datetime(2024, 6, 5)
    )
    ahead = ids(memory.recall("Where is the family reunion?", k=4, at=datetime(2024, 6, 10)))
    assert ahead.index(there.id) < ahead.index(first.id)


@pytest.mark.parametrize(
    ("query", "plan"),
    [
        ("When is the family reunion?", True),
        ("Where's the New Year's Eve party?", True),
        ("When does the city contract bid close?", True),
        ("Where are mum and I going?", True),
        ("When was the reunion?", False),
        ("When did Caroline go to the support group?", False),
        ("What is Caroline's identity?", False),
        ("When was the reunion originally?", False),
    ],
)
def test_questions_say_whether_they_ask_when_or_where_a_plan_is(query: str, plan: bool) -> None:
    from ramem_core.states import asks_plan

    assert asks_plan(query) is plan


def test_a_question_about_a_kind_orders_a_statement_whose_kind_was_not_read() -> None:
    """ "Where do I live now?": "I live on a houseboat" (a home) and, later, "Got the keys to a
    cottage in Haarlem" (no kind read) are ordered by the model's probability; a later
    statement of another kind is not, nor any pair when the question asks about no kind."""
    import numpy as np

    from ramem_core.retrieval.supersession import Chains

    home, work = 1, 2
    found = Chains({0: [(1, 0.5, False), (2, 0.5, False), (3, 0.1, False), (4, 0.5, True)]})
    bits = np.array([home, 0, work, 0, work], dtype=np.int64)
    assert found.ordered(0.3, bits, asked=home) == {0: [1, 4]}
    assert found.ordered(0.3, bits, asked=0) == {0: [4]}  # one kind shared: as ever
    assert found.ordered(0.3, bits, asked=work) == {0: [4]}  # row 0 is no work statement


def test_a_replacement_likely_enough_is_ordered_whatever_its_kinds() -> None:
    """ "The city break is Seville now" read as a home, "Baby shower is now the 6th" as no
    kind: at or above ``any_kind`` the pair is ordered for "now" whatever the two kinds (and
    whatever the question asks), below it only as kinds allow; ``None`` keeps one kind."""
    import numpy as np

    from ramem_core.retrieval.supersession import Chains

    home, trip = 1, 2
    found = Chains({0: [(1, 0.85, False), (2, 0.75, False), (3, 0.5, True)]})
    bits = np.array([trip, home, 0, trip], dtype=np.int64)
    assert found.ordered(0.3, bits, asked=0, any_kind=0.8) == {0: [1, 3]}
    assert found.ordered(0.3, bits, asked=trip, any_kind=0.8) == {0: [1, 2, 3]}
    assert found.ordered(0.3, bits, asked=0) == {0: [3]}
    assert found.ordered(0.9, bits, asked=0, any_kind=0.8) == {}  # never below the order one


def test_order_any_kind_must_be_a_probability() -> None:
    from ramem_core.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="order_any_kind"):
        RetrievalConfig(order_any_kind=1.5)


def test_now_reads_first_a_later_statement_whose_kind_was_not_read(store: ChromaStore) -> None:
    """ "Got the keys to a cottage in Haarlem" names no home in words, yet a model that finds
    it likely to replace "I live in Lisbon" puts it first for "Where do I live now?"; a later
    statement of another kind (a job) is not put first, however likely the model finds it."""
    from ramem_core.testing import replacement_of

    likely = replacement_of({}, 5.0, label=0.999, order=0.5)  # every pair: 0.993
    config = RetrievalConfig(state_kind_vectors=None, replacement=likely)
    memory = RaMem(store, counter=WordCounter(), config=config)
    lisbon = memory.add_turn("user", "I live in Lisbon, near the river.", at=JAN)
    memory.add_turn("user", "I started a new job at the bank.", at=datetime(2024, 3, 1, 9))
    cottage = memory.add_turn("user", "Got the keys to a cottage in Haarlem.", at=JUNE)
    found = ids(memory.recall("Where do I live now?", k=3, at=datetime(2024, 7, 1)))
    assert found.index(cottage.id) < found.index(lisbon.id)
    assert found[0] == cottage.id


def test_now_reads_first_a_likely_replacement_read_as_another_kind(store: ChromaStore) -> None:
    """ "The city break is Seville now" names no date (no appointment); a model that finds it
    0.88 likely to replace "I booked a city break to Lisbon for May 10th" puts it first for a
    question about now by ``order_any_kind`` (0.8), and not when that is off."""
    from ramem_core.testing import replacement_of

    likely = replacement_of({}, 2.0, label=0.99, order=0.5)  # every pair: 0.881
    config = RetrievalConfig(state_kind_vectors=None, replacement=likely)
    asked = "Where did I book my city break to go now?"  # no kind asked, none restated
    order: dict[float | None, list[str]] = {}
    for any_kind in (0.8, None):
        memory = RaMem(
            store, counter=WordCounter(), config=replace(config, order_any_kind=any_kind)
        )
        ns = f"n{any_kind}"
        lisbon = memory.add_turn(
            "user", "I booked a city break to Lisbon for May 10th.", at=JAN, namespace=ns
        )
        seville = memory.add_turn("user", "The city break is Seville now.", at=JUNE, namespace=ns)
        found = ids(memory.recall(asked, k=3, at=JUNE, namespace=ns))
        names = {lisbon.id: "lisbon", seville.id: "seville"}
        order[any_kind] = [names[x] for x in found if x in names]
    assert order == {0.8: ["seville", "lisbon"], None: ["lisbon", "seville"]}
