"""Stage 1: episodic anchoring. Event time is what a memory says happened, never invented."""

from __future__ import annotations

from datetime import datetime

from ramem_core import Conversation, Granularity, RuleAnchorer, Session, TimeSpan, Turn

SAID = datetime(2023, 5, 8, 13, 56)


def _anchor(*texts: str, time: datetime | None = SAID) -> list:  # type: ignore[type-arg]
    turns = tuple(Turn(f"s1:{i}", "Ana", text) for i, text in enumerate(texts, start=1))
    return RuleAnchorer().anchor(Conversation("c", (Session("s1", turns, time),), ("Ana", "Ben")))


def test_a_turn_that_names_no_time_has_no_event_time() -> None:
    [unit] = _anchor("I love hiking in the mountains with Ben.")
    assert unit.context.event_time is None  # the session time is when it was said, not an event
    assert unit.context.session_span == TimeSpan(SAID, SAID, Granularity.INSTANT)
    assert unit.context.mentions == ()


def test_a_relative_time_is_resolved_against_the_session_time() -> None:
    [unit] = _anchor("I went to a support group yesterday.")
    assert unit.context.event_time is not None
    assert unit.context.event_time.start == datetime(2023, 5, 7)
    assert unit.context.event_time.granularity is Granularity.DAY
    assert unit.context.session_span is not None
    assert unit.context.session_span.start == SAID  # said on the 8th, happened on the 7th


def test_without_a_session_time_nothing_is_resolved_or_invented() -> None:
    [unit] = _anchor("I went to a support group yesterday.", time=None)
    assert unit.context.session_span is None
    assert unit.context.event_time is None
    assert unit.context.mentions == ()


def test_each_turn_is_a_lossless_unit_with_its_coordinates() -> None:
    first, second = _anchor("I adopted a cat.", "Ben helped me pick her up last Friday.")
    assert (first.content, second.content) == (
        "Ana: I adopted a cat.",
        "Ana: Ben helped me pick her up last Friday.",
    )
    assert (first.context.turn_index, second.context.turn_index) == (0, 1)
    assert second.context.participants == ("Ana", "Ben")
    assert second.source_ids == ("s1:2",)
    assert second.context.event_time is not None
    assert second.context.event_time.start == datetime(2023, 5, 5)  # the Friday before


def _document(sentences: int) -> str:
    return " ".join(f"Clause {i} of the lease says rent item {i} is due." for i in range(sentences))


def test_a_long_turn_is_stored_in_pieces_that_lose_nothing() -> None:
    text = _document(2_000) + " The deposit is 950 euros."  # about 100,000 characters
    units = _anchor("Short hello.", text)
    hello, long = units[0], units[1:]
    assert hello.content == "Ana: Short hello."
    assert len(text) // 1_000 + 1 <= len(long) <= len(text) // 500 + 1  # cuts in 2nd halves
    assert all(len(u.content) <= len("Ana: ") + 1_000 for u in long)
    assert " ".join(u.content.removeprefix("Ana: ") for u in long) == text  # lossless
    assert {u.source_ids for u in long} == {("s1:2",)}  # every piece cites the turn
    assert {u.context.turn_index for u in long} == {1}
    assert len({u.id for u in long}) == len(long)  # and has an id of its own
    assert all(u.context.session_span == hello.context.session_span for u in long)
    assert _anchor("Short hello.", text)[1].id == long[0].id  # ids stay deterministic


def test_pieces_cut_after_a_sentence_or_between_words() -> None:
    from ramem_core.anchoring import pieces

    assert pieces("Alpha beta. Gamma delta epsilon.", 20) == ["Alpha beta.", "Gamma delta epsilon."]
    assert pieces("One. Two three four five.", 20) == ["One. Two three four", "five."]
    assert pieces("aaaa bbbb cccc dddd", 10) == ["aaaa bbbb", "cccc dddd"]
    assert pieces("x" * 25, 10) == ["x" * 10, "x" * 10, "x" * 5]
    assert pieces("  short  ", 10) == ["short"]


def test_entities_keep_titles_and_no_number_stands_alone() -> None:
    [unit] = _anchor("I saw Dr. Okafor on August 5 about my knee, then met Ben at Central Park.")
    assert unit.context.entities == ("Dr. Okafor", "Ben", "Central Park")
    [other] = _anchor("Mrs. Alice Brown and Prof. Lee came with 3 friends.")
    assert other.context.entities == ("Mrs. Alice Brown", "Prof. Lee")
