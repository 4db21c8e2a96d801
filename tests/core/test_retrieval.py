"""Stage 3: valid memories rank first, relevant ones are never dropped, tenants never mix."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from ramem_core import (
    ChromaStore,
    Conversation,
    EpisodicContext,
    Granularity,
    MemoryUnit,
    RaMem,
    Recall,
    RecallFrame,
    RetrievalConfig,
    Session,
    Store,
    TimeSpan,
    Turn,
)
from ramem_core.errors import InvalidInputError, NamespaceNotFoundError
from ramem_core.index.episodic import CONTENT_KEYS, EpisodicKeys
from ramem_core.retrieval import (
    CONTENT_ONLY,
    LEARNED_FUSION,
    Conditions,
    mostly_within,
    on_anchor_side,
)
from ramem_core.testing import HashEmbedder, WordCounter
from tests.conftest import two_trips

WRONG_EPISODE_QUERY = "Where did Ben eat grilled sardines by the river in August?"


def reference_select(memory: RaMem, conditions: Conditions) -> list[MemoryUnit]:
    """The memories that meet ``conditions``, read one by one off each memory's own
    coordinates (its whole session's span): what the vectorised mask must select."""
    snap = memory.snapshots.get(memory.namespace)
    out = []
    for row in range(len(snap)):
        ctx = snap.unit(row).context
        timely = not conditions.windows or any(
            mostly_within(ctx.event_time, w)
            if ctx.event_time is not None
            else conditions.session_context
            and ctx.session_span is not None
            and ctx.session_span.overlaps(w)
            for _, w in conditions.windows
        )
        people = {p.lower() for p in ctx.participants}
        named = not conditions.participants or any(
            p.lower() in people for p in conditions.participants
        )
        if timely and named:
            out.append(snap.unit(row))
    return out


def content_only(store: Store) -> RaMem:
    return RaMem(store, config=CONTENT_ONLY, counter=WordCounter())


def test_valid_episode_outranks_more_similar_wrong_episode(memory: RaMem) -> None:
    memory.add_conversation(two_trips())
    plain = content_only(memory.store).recall(WRONG_EPISODE_QUERY, k=3)
    valid = memory.recall(WRONG_EPISODE_QUERY, k=3)
    # content-only prefers the March memory: it shares more words with the query
    assert plain[0].unit.source_ids == ("S2:1",)
    # RaMem puts the August memory first and says why
    assert valid[0].unit.source_ids == ("S3:1",)
    assert valid[0].contextual
    assert any("August" in s or "in August" in s for s in valid[0].satisfied)
    # the relevant but invalid memory is not dropped
    assert "S2:1" in {sid for e in valid for sid in e.unit.source_ids}


def test_ungrounded_frame_falls_back_to_content(memory: RaMem) -> None:
    memory.add_conversation(two_trips())
    query = "Where did someone eat grilled sardines in 1999?"
    frame = memory.frame(query)
    assert not frame.is_grounded
    assert not any(e.contextual for e in memory.recall(query, k=4))
    # without episodic keys (and the learned fusion), RaMem's list is the content-only list
    no_keys = RaMem(memory.store, config=RetrievalConfig(keys=CONTENT_KEYS, fusion=None))
    plain_ids = [e.unit.id for e in content_only(memory.store).recall(query, k=4)]
    assert [e.unit.id for e in no_keys.recall(query, k=4)] == plain_ids


def test_episodic_keys_prefer_the_supported_episode(memory: RaMem) -> None:
    # a lone look-alike in January against an episode in August that matches as a whole
    memory.add_conversation(
        Conversation(
            "c",
            (
                Session(
                    "A",
                    (
                        Turn("A:1", "Ben", "The sardines were grilled by the river, lovely."),
                        Turn("A:2", "Alice", "I painted the kitchen blue."),
                    ),
                    datetime(2023, 1, 5),
                ),
                Session(
                    "B",
                    (
                        Turn("B:1", "Ben", "We ate sardines in Porto."),
                        Turn("B:2", "Alice", "Were the sardines grilled?"),
                        Turn("B:3", "Ben", "Yes, grilled, next to the river."),
                    ),
                    datetime(2023, 8, 5),
                ),
            ),
        )
    )
    query = "Where did Ben eat grilled sardines by the river?"
    plain = content_only(memory.store).recall(query, k=5)
    # the keys' own fusion (the learned one also weighs the look-alike's own words)
    episodic = RaMem(memory.store, config=RetrievalConfig(fusion=None)).recall(query, k=5)
    assert plain[0].unit.source_ids == ("A:1",)
    assert episodic[0].unit.context.session_id == "B"
    assert {e.unit.id for e in plain} == {e.unit.id for e in episodic}  # nothing dropped
    scores = [e.score for e in episodic]
    assert scores == sorted(scores, reverse=True)
    off = RaMem(memory.store, config=RetrievalConfig(keys=CONTENT_KEYS))
    assert off.recall(query, k=1)[0].unit.source_ids == ("A:1",)  # needs the episodic keys


def test_evidence_ranks_are_dense_and_sorted(memory: RaMem) -> None:
    memory.add_conversation(two_trips())
    evidence = memory.recall("blood pressure doctor", k=4)
    assert [e.rank for e in evidence] == [1, 2, 3, 4]
    assert len({e.unit.id for e in evidence}) == 4
    assert {e.unit.source_ids[0] for e in evidence[:2]} == {"S1:1", "S3:2"}


def test_k_is_honoured_and_validated(memory: RaMem) -> None:
    memory.add_conversation(two_trips())
    assert len(memory.recall("sardines", k=2)) == 2
    assert len(memory.recall("sardines", k=50)) == 6
    for bad in (0, -1, 2.5, True):
        with pytest.raises(InvalidInputError, match="k must be a positive integer"):
            memory.recall("sardines", k=bad)  # type: ignore[arg-type]


def test_recall_on_an_unknown_namespace_says_so_and_an_emptied_one_returns_nothing(
    memory: RaMem,
) -> None:
    memory.add_turn("Ann", "I adopted a cat.", at=datetime(2023, 5, 1), namespace="other-tenant")
    with pytest.raises(NamespaceNotFoundError, match="'default' does not exist") as raised:
        memory.recall("anything at all last August", k=5)
    assert "other-tenant" not in str(raised.value)  # another tenant's name is not the caller's
    memory.add_turn("Ann", "I moved to Lisbon.", at=datetime(2023, 5, 1))
    memory.delete(conversation_id="live")
    assert memory.count() == 0
    assert list(memory.recall("anything at all last August", k=5)) == []


@pytest.mark.parametrize(
    "query",
    [
        "What did Alice say in August?",
        "What did Ben say in March?",
        "Who talked about sardines in February?",
        "What did Alice do after the Lisbon holiday?",
    ],
)
def test_the_mask_selects_what_each_memorys_coordinates_meet(memory: RaMem, query: str) -> None:
    memory.add_conversation(two_trips())
    frame = memory.frame(query)
    conditions = Conditions.of(frame)
    assert conditions, f"expected a grounded frame for {query!r}: {frame}"
    index = memory.snapshots.get(memory.namespace)
    masked = {index.units[i].id for i in conditions.mask(index).nonzero()[0]}
    filtered = {u.id for u in reference_select(memory, conditions)}
    assert masked == filtered
    assert all(conditions.satisfied(u) for u in index.units if u.id in masked)


def test_an_event_counts_for_a_window_it_mostly_lies_in(memory: RaMem) -> None:
    said = TimeSpan(
        datetime(2023, 11, 16, 18, 0), datetime(2023, 11, 16, 19, 0), Granularity.INSTANT
    )

    def unit(uid: str, start: datetime, end: datetime, granularity: Granularity) -> MemoryUnit:
        event = TimeSpan(start, end.replace(hour=23, minute=59, second=59), granularity)
        context = EpisodicContext("S", "c", said, event, participants=("Ben",), speaker="Ben")
        return MemoryUnit(uid, f"Ben: trip {uid}", context)

    memory.add_units(
        [
            # Monday to Sunday, 6-12 November: most of it lies in 9-15 November (padded 7-17)
            unit("week", datetime(2023, 11, 6), datetime(2023, 11, 12), Granularity.WEEK),
            unit("day", datetime(2023, 11, 10), datetime(2023, 11, 10), Granularity.DAY),
            # the week before: only its Sunday lies in the padded window
            unit("early", datetime(2023, 10, 30), datetime(2023, 11, 5), Granularity.WEEK),
            # known to the month only: longer than the window, so no evidence of the week
            unit("month", datetime(2023, 11, 1), datetime(2023, 11, 30), Granularity.MONTH),
        ]
    )
    frame = memory.frame("Where was Ben the week before 16 November 2023?")
    conditions = Conditions.of(frame, padding=RetrievalConfig().window_padding)
    snap = memory.snapshots.get(memory.namespace)
    masked = {snap.units[i].id for i in conditions.mask(snap).nonzero()[0]}
    filtered = {u.id for u in reference_select(memory, conditions)}
    assert masked == filtered == {"week", "day"}
    timely = {u.id for u in snap.units if any("within" in m for m in conditions.satisfied(u))}
    assert timely == masked


def test_a_year_long_event_does_not_cover_every_week_of_its_year(memory: RaMem) -> None:
    def said(day: datetime) -> TimeSpan:
        return TimeSpan(day, day.replace(hour=23), Granularity.INSTANT)

    year = TimeSpan(datetime(2022, 1, 1), datetime(2022, 12, 31, 23, 59, 59), Granularity.YEAR)
    memory.add_units(
        [
            MemoryUnit(
                "a", "Ben: a quiet week", EpisodicContext("A", "c", said(datetime(2023, 11, 10)))
            ),
            MemoryUnit(
                "b",
                "Ben: I moved in 2022",
                EpisodicContext("B", "c", said(datetime(2023, 11, 16)), year),
            ),
        ]
    )
    # November 2022 lies in the 2022 event's year, but nothing is known to have happened in
    # its second week: only November 2023 holds a memory of that week
    [constraint] = memory.frame("What did Ben do in the second week of November?").times
    assert constraint.grounded
    assert constraint.window is not None
    assert constraint.window.start == datetime(2023, 11, 8)


def test_session_context_switch_changes_the_filter(memory: RaMem) -> None:
    memory.add_conversation(two_trips())
    frame = memory.frame("What did Ben say in March?")
    with_session = Conditions.of(frame, session_context=True)
    without = Conditions.of(frame, session_context=False)
    index = memory.snapshots.get(memory.namespace)
    assert with_session.mask(index).sum() > without.mask(index).sum()


def _other_conversation() -> Conversation:
    return Conversation(
        "other",
        (
            Session(
                "X1",
                (Turn("X1:1", "Carol", "We ate grilled sardines in August by the river."),),
                datetime(2023, 8, 2),
            ),
        ),
    )


@pytest.mark.parametrize(
    "config",
    [
        RetrievalConfig(lexical=False),
        RetrievalConfig(dense=False),
        RetrievalConfig(),
        CONTENT_ONLY,
    ],
    ids=["dense", "bm25", "contextual", "content"],
)
def test_namespaces_never_mix(store: ChromaStore, config: RetrievalConfig) -> None:
    memory = RaMem(store, config=config, counter=WordCounter())
    memory.add_conversation(two_trips(), namespace="tenant-a")
    memory.add_conversation(_other_conversation(), namespace="tenant-b")
    for query in (WRONG_EPISODE_QUERY, "grilled sardines", "What did Carol eat in August?"):
        b = memory.recall(query, k=10, namespace="tenant-b")
        assert {e.unit.context.conversation_id for e in b} == {"other"}
        a = memory.recall(query, k=10, namespace="tenant-a")
        assert {e.unit.context.conversation_id for e in a} <= {"friends"}
    assert memory.recall("grilled sardines", k=10, namespace="tenant-a")


def test_config_rejects_nonsense() -> None:
    with pytest.raises(InvalidInputError):
        RetrievalConfig(dense=False, lexical=False)
    with pytest.raises(InvalidInputError):
        RetrievalConfig(validity_pool=0)
    with pytest.raises(ValueError, match="non-negative"):
        EpisodicKeys(session_weight=-1.0)


def _long_session(start: datetime, label: str, topic: str, n: int) -> Session:
    turns = [Turn(f"{label}:1", "Ben", f"Let me tell you about {topic}.")]
    turns += [
        Turn(f"{label}:{i}", "Alice" if i % 2 else "Ben", f"Small talk number {i} about {topic}.")
        for i in range(2, n + 1)
    ]
    return Session(label, tuple(turns), start)


def test_valid_memories_move_ahead_only_inside_the_relevant_pool(store: ChromaStore) -> None:
    # August holds 40 memories, none about the dentist; the dentist visit was in March
    conversation = Conversation(
        "c",
        (
            Session(
                "M",
                (Turn("M:1", "Ben", "The dentist filled two teeth and said to floss daily."),),
                datetime(2023, 3, 3, 10, 0),
            ),
            _long_session(datetime(2023, 8, 1, 10, 0), "A1", "gardening", 20),
            _long_session(datetime(2023, 8, 15, 10, 0), "A2", "painting", 20),
        ),
    )
    memory = RaMem(store, config=RetrievalConfig(validity_pool=5), counter=WordCounter())
    memory.add_conversation(conversation)
    query = "What did the dentist say in August?"
    assert memory.frame(query).grounded_times  # a grounded but wrong window
    evidence = memory.recall(query, k=10)
    # the relevant memory outside the window is not pushed out by 40 valid ones
    assert "M:1" in {e.unit.source_ids[0] for e in evidence}
    contextual = [e for e in evidence if e.contextual]
    # the valid memories of the relevant pool moved ahead, and the window's two best below it
    assert len(contextual) <= 5 + RetrievalConfig().window_slots
    assert all(e.satisfied for e in contextual)
    assert [e.rank for e in evidence] == list(range(1, 11))
    scores = [e.score for e in evidence]
    assert scores == sorted(scores, reverse=True)
    # with a pool of one and no slots, at most one memory is moved
    narrow = RaMem(
        store, config=RetrievalConfig(validity_pool=1, window_slots=0), counter=WordCounter()
    )
    assert sum(e.contextual for e in narrow.recall(query, k=10)) <= 1


def test_a_narrow_window_reaches_below_the_relevant_pool(store: ChromaStore) -> None:
    # thirty evenings of concert talk; the one concert last Saturday shares few words with
    # the question, so content ranks it below all of them
    sessions = [
        Session(
            f"C{day}",
            (Turn(f"C{day}:1", "user", f"I love concert nights, concert number {day} was fun."),),
            datetime(2023, 3, 1 + day, 20, 0),
        )
        for day in range(30)
    ]
    sessions.append(
        Session(
            "S",
            (
                Turn("S:1", "user", "We saw Queen live with my parents, what a show."),
                Turn("S:2", "user", "The parking was a nightmare though."),
            ),
            datetime(2023, 4, 15, 21, 0),
        )
    )
    memory = RaMem(store, counter=WordCounter())
    memory.add_conversation(Conversation("c", tuple(sessions)))
    query = "Who did I go to the concert with last Saturday?"
    at = datetime(2023, 4, 22, 9, 0)
    assert memory.frame(query, at=at).grounded_times
    assert "S:1" not in [e.unit.source_ids[0] for e in content_only(store).recall(query, k=20)]
    evidence = memory.recall(query, k=10, at=at)
    ids = [e.unit.source_ids[0] for e in evidence]
    # the window's best memories below the pool come first, then the relevant others
    assert set(ids[:2]) == {"S:1", "S:2"}
    assert all(e.contextual for e in evidence[:2])
    assert all(i.startswith("C") for i in ids[2:])
    # without the slots, only the pool's valid memories (here none) move
    pooled = RaMem(store, config=RetrievalConfig(window_slots=0), counter=WordCounter())
    assert "S:1" not in [e.unit.source_ids[0] for e in pooled.recall(query, k=10, at=at)]


def test_a_neighbours_words_find_a_turn(memory: RaMem) -> None:
    # "it" names nothing; the turn before it names the pottery class
    memory.add_conversation(
        Conversation(
            "c",
            (
                Session(
                    "P",
                    (
                        Turn("P:1", "Alice", "I signed up for a pottery class downtown."),
                        Turn("P:2", "Ben", "Nice, how was the first evening?"),
                        Turn("P:3", "Alice", "It was wonderful, I made a small bowl."),
                    ),
                    datetime(2023, 5, 2),
                ),
                Session(
                    "Q",
                    (
                        Turn("Q:1", "Alice", "The weather was wonderful for a walk."),
                        Turn("Q:2", "Ben", "I made soup yesterday evening."),
                    ),
                    datetime(2023, 6, 2),
                ),
            ),
        )
    )
    query = "How was the pottery class downtown?"
    episodic = RaMem(
        memory.store, config=RetrievalConfig(keys=EpisodicKeys(session_weight=0.0, window=0))
    )
    plain = RaMem(memory.store, config=RetrievalConfig(keys=CONTENT_KEYS))
    by_id = {u.id: u for u in memory.store.get(memory.namespace)}
    p3 = next(i for i, u in by_id.items() if u.source_ids == ("P:3",))
    lexical = {e.unit.id: e.lexical_score for e in episodic.recall(query, k=5)}
    assert lexical[p3]  # the neighbour's "pottery class" is in P:3's lexical key
    assert not {e.unit.id: e.lexical_score for e in plain.recall(query, k=5)}.get(p3)


def test_frame_is_visible_to_users(memory: RaMem) -> None:
    memory.add_conversation(two_trips())
    frame = memory.frame(WRONG_EPISODE_QUERY)
    assert isinstance(frame, RecallFrame)
    assert frame.now == datetime(2023, 8, 28, 21, 0)
    assert [t.text for t in frame.grounded_times] == ["in August"]
    assert frame.participants == ()  # Ben speaks in every session: naming him selects nothing


def test_participants_constrain_only_when_they_tell_episodes_apart(memory: RaMem) -> None:
    visit = Session(
        "S4",
        (
            Turn("S4:1", "Carol", "Hi both, I brought grilled sardines from the market."),
            Turn("S4:2", "Alice", "Thanks Carol, they smell great."),
        ),
        datetime(2023, 9, 2, 12, 0),
    )
    conversation = two_trips()
    memory.add_conversation(
        Conversation(conversation.id, (*conversation.sessions, visit), conversation.participants)
    )
    assert memory.frame("What did Alice say about sardines?").participants == ()
    frame = memory.frame("What did Carol bring?")
    assert frame.participants == ("Carol",)
    conditions = Conditions.of(frame)
    snap = memory.snapshots.get(memory.namespace)
    masked = {snap.units[i].id for i in conditions.mask(snap).nonzero()[0]}
    filtered = {u.id for u in reference_select(memory, conditions)}
    assert masked == filtered
    assert {snap.units[snap.position[i]].source_ids[0] for i in masked} == {"S4:1", "S4:2"}
    top, second, third = memory.recall("What did Carol bring?", k=3)
    assert {top.unit.source_ids[0], second.unit.source_ids[0]} == {"S4:1", "S4:2"}
    assert "involves Carol" in top.satisfied
    assert top.contextual
    assert not third.contextual
    assert top.score >= second.score > 1.0 > third.score  # scores fall with rank


def test_live_turns_keep_the_episodic_keys_current(memory: RaMem) -> None:
    at = datetime(2023, 5, 2, 18, 0)
    memory.add_turn("Alice", "I signed up for a pottery class downtown.", at=at)
    query = "How was the pottery class downtown?"
    memory.recall(query, k=3)  # the snapshot is cached now: later turns must update its keys
    reply = memory.add_turn("Ben", "Nice, how was the first evening?", at=at)
    later = memory.add_turn("Alice", "It was wonderful, I made a small bowl.", at=at)
    lexical = {e.unit.id: e.lexical_score for e in memory.recall(query, k=3)}
    assert lexical[reply.id]  # a neighbour of the turn that named the class
    assert lexical[later.id]  # two turns away, added after the first recall
    session = memory.snapshots.get(memory.namespace).index
    assert len(session.session_rows) == 1


def test_frame_windows_are_padded_by_two_days(memory: RaMem) -> None:
    # said late on 30 July: just outside "in August", inside it once padded by two days
    memory.add_conversation(
        Conversation(
            "c",
            (
                Session(
                    "J",
                    (Turn("J:1", "Ben", "We booked the sailing trip."),),
                    datetime(2023, 7, 30, 23, 0),
                ),
                Session("S", (Turn("S:1", "Alice", "Snow again."),), datetime(2023, 12, 1)),
            ),
        )
    )
    frame = memory.frame("What did Ben book in August?")
    assert frame.grounded_times
    snap = memory.snapshots.get(memory.namespace)
    padded = Conditions.of(frame, padding=memory.retriever.config.window_padding)
    assert {snap.units[i].source_ids[0] for i in padded.mask(snap).nonzero()[0]} == {"J:1"}
    assert not Conditions.of(frame).mask(snap).any()
    filtered = reference_select(memory, padded)
    assert [u.source_ids[0] for u in filtered] == ["J:1"]  # one by one agrees
    [top] = memory.recall("What did Ben book in August?", k=1)
    assert top.contextual  # moved ahead by the padded window ...
    assert not [s for s in top.satisfied if "August" in s]  # ... never said to be in August


def _labels_hold(found: Recall) -> None:
    """Every "why valid" label is true of the memory's own coordinates and the exact
    (unpadded) windows of the frame."""
    windows = {t.text: t.window for t in found.frame.grounded_times if t.window is not None}
    for e in found:
        ctx = e.unit.context
        for label in e.satisfied:
            if label.startswith("involves "):
                continue
            text = label.split(" within ")[1].strip("'\"")
            window = windows[text]
            if label.startswith("event "):
                assert ctx.event_time is not None
                assert mostly_within(ctx.event_time, window), label
            else:
                assert ctx.event_time is None, label
                assert ctx.session_span is not None
                assert ctx.session_span.overlaps(window), label


@pytest.mark.parametrize(
    "query",
    [
        "What did Alice do after the Lisbon holiday?",
        "What did Ben eat before the trip to Lisbon?",
        "What did the doctor say in August?",
        "What happened in March?",
    ],
)
def test_why_valid_never_contradicts_the_coordinates(memory: RaMem, query: str) -> None:
    memory.add_conversation(two_trips())
    found = memory.recall(query)
    _labels_hold(found)
    anchors = {
        t.anchor_id for t in found.frame.grounded_times if t.relation is not None and t.anchor_id
    }
    if anchors:
        snap = memory.snapshots.get(memory.namespace)
        sessions = {snap.unit(snap.position[a]).context.session_id for a in anchors}
        for e in found:  # what the anchor's own episode said is not "after" or "before" it
            if e.unit.context.session_id in sessions and e.unit.context.event_time is None:
                assert not [s for s in e.satisfied if "within" in s], e


def _back_from_lisbon(memory: RaMem) -> None:
    """Ben back from Lisbon (the anchor's session), then a pottery class weeks later."""
    back = Session(
        "A",
        (
            Turn("A:1", "Ben", "I got back from the Lisbon trip today."),
            Turn("A:2", "Alice", "Welcome back! Tell me everything."),
        ),
        datetime(2023, 5, 10, 19),
    )
    later = Session("B", (Turn("B:1", "Ben", "I started a pottery class."),), datetime(2023, 6, 2))
    memory.add_conversation(Conversation("c", (back, later), ("Ben", "Alice")))


def test_strict_relations_keep_the_anchor_out_of_the_ranking(memory: RaMem) -> None:
    _back_from_lisbon(memory)
    query = "What did Ben do after the Lisbon trip?"
    loose = memory.recall(query)
    assert [t.anchor_id for t in loose.frame.grounded_times if t.anchor_id]  # located
    _labels_hold(loose)
    assert {e.unit.source_ids[0] for e in loose if e.contextual} >= {"A:1", "A:2"}  # padding
    assert all(e.satisfied == () for e in loose if e.unit.source_ids[0].startswith("A:"))
    config = RetrievalConfig(exclude_anchor=True)
    strict = RaMem(memory.store, counter=WordCounter(), config=config).recall(query)
    assert {e.unit.source_ids[0] for e in strict if e.contextual} == {"B:1"}
    assert strict[0].unit.source_ids == ("B:1",)


def test_own_content_ranks_the_turn_that_says_it_above_its_neighbours(memory: RaMem) -> None:
    turns = (
        Turn("P:1", "Alice", "I signed up for a pottery class downtown."),
        Turn("P:2", "Ben", "Nice, how was the first evening?"),
        Turn("P:3", "Alice", "It was wonderful, I made a small bowl."),
        Turn("P:4", "Ben", "Did you bring it home?"),
    )
    memory.add_conversation(Conversation("c", (Session("P", turns, datetime(2023, 5, 2)),)))
    query = "Who made a small bowl?"
    with_own = RaMem(memory.store, config=RetrievalConfig(keys=EpisodicKeys(own_weight=0.25)))
    without = RaMem(memory.store, config=RetrievalConfig(keys=EpisodicKeys(own_weight=0.0)))
    assert with_own.recall(query, k=1)[0].unit.source_ids == ("P:3",)
    scores = {e.unit.source_ids[0]: e.score for e in without.recall(query, k=4)}
    own = {e.unit.source_ids[0]: e.score for e in with_own.recall(query, k=4)}
    # the own-content weight widens the turn's lead over its neighbours
    assert own["P:3"] - max(own["P:2"], own["P:4"]) > scores["P:3"] - max(
        scores["P:2"], scores["P:4"]
    )


def test_the_matching_session_lifts_every_one_of_its_turns(memory: RaMem) -> None:
    memory.add_conversation(two_trips())
    query = "grilled sardines by the river"
    lifted = RaMem(
        memory.store, config=RetrievalConfig(keys=EpisodicKeys(session_weight=4.0), fusion=None)
    )
    flat = RaMem(
        memory.store, config=RetrievalConfig(keys=EpisodicKeys(session_weight=0.0), fusion=None)
    )
    gain = {e.unit.id: e.score for e in lifted.recall(query, k=6)}
    base = {e.unit.id: e.score for e in flat.recall(query, k=6)}
    by_session: dict[str, set[float]] = {}
    for e in lifted.recall(query, k=6):
        by_session.setdefault(e.unit.context.session_id, set()).add(
            round(gain[e.unit.id] - base[e.unit.id], 6)
        )
    # one bonus per session, the same for each of its turns; the best session gets 4 / 61
    assert all(len(bonuses) == 1 for bonuses in by_session.values())
    assert max(b for bonuses in by_session.values() for b in bonuses) == pytest.approx(
        4 / 61, abs=1e-5
    )
    assert min(b for bonuses in by_session.values() for b in bonuses) < 4 / 61


class SynonymEmbedder(HashEmbedder):
    """The hash embedder, but "vacation" means "holiday trip" (a dense-only match)."""

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return super().embed([t.replace("vacation", "holiday trip") for t in texts])


def test_an_anchor_event_is_located_only_when_dense_and_lexical_agree(tmp_path: Path) -> None:
    store = ChromaStore.persistent(tmp_path / "db", SynonymEmbedder())
    memory = RaMem(store, counter=WordCounter())
    memory.add_conversation(two_trips())
    found = memory.retriever.lookup(memory.snapshots.get("default")).locate("grilled sardines")
    assert found is not None
    assert found.source_ids == ("S2:1",)
    # dense similarity alone (no word in common) is not enough
    assert memory.snapshots.get("default").index.lexical_scores("vacation").max() == 0
    assert memory.retriever.lookup(memory.snapshots.get("default")).locate("vacation") is None
    # nor is one shared word in a long phrase: the best match is lexically supported (top
    # three) but not similar enough
    phrase = "holiday zebra quartz violin mango"
    assert memory.snapshots.get("default").index.lexical_scores(phrase).max() > 0
    assert memory.retriever.lookup(memory.snapshots.get("default")).locate(phrase) is None


def test_a_question_asking_when_prefers_the_memory_that_says_when(memory: RaMem) -> None:
    # two sessions tell of the same move; only one turn says when it happened
    memory.add_conversation(
        Conversation(
            "c",
            (
                Session(
                    "A",
                    (
                        Turn(
                            "A:1",
                            "Ana",
                            "Ana moved to Lisbon. Ana loves Lisbon, the move was good.",
                        ),
                    ),
                    datetime(2023, 3, 5),
                ),
                Session(
                    "B",
                    (Turn("B:1", "Ana", "I moved there last week with my cat."),),
                    datetime(2023, 3, 12),
                ),
            ),
        )
    )
    said_when = {"B:1"}

    def first(config: RetrievalConfig, query: str) -> set[str]:
        fixed = replace(config, fusion=None)  # the bonus of the fixed fusion (learned: below)
        return set(RaMem(memory.store, config=fixed).recall(query, k=1)[0].unit.source_ids)

    no_bonus = RetrievalConfig(time_weight=0.0)
    assert first(no_bonus, "When did Ana move to Lisbon?") != said_when  # content prefers A
    assert first(RetrievalConfig(), "When did Ana move to Lisbon?") == said_when
    assert first(RetrievalConfig(), "Where did Ana move to, Lisbon?") != said_when  # not "when"
    frame_off = RetrievalConfig(context_ranking=False)
    assert first(frame_off, "When did Ana move to Lisbon?") != said_when  # part of the frame
    # the learned fusion reads "says when" only where the bonus would be given
    snap = memory.snapshots.get(memory.namespace)
    fusion = replace(LEARNED_FUSION, candidates=5)

    def says_when(config: RetrievalConfig, query: str) -> list[float]:
        retriever = RaMem(memory.store, config=config).retriever
        rows, features = retriever.fusion_candidates(snap, memory.frame(query), fusion)
        return [features["timed"][rows.index(snap.position[u.id])] for u in snap.units]

    assert sorted(says_when(RetrievalConfig(), "When did Ana move to Lisbon?")) == [0.0, 1.0]
    for config, query in [
        (RetrievalConfig(), "Where did Ana move to, Lisbon?"),
        (no_bonus, "When did Ana move to Lisbon?"),
        (frame_off, "When did Ana move to Lisbon?"),
    ]:
        assert says_when(config, query) == [0.0, 0.0]


def test_a_relation_question_and_its_anchor_are_embedded_in_one_call(
    memory: RaMem, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory.add_conversation(two_trips())
    calls: list[list[str]] = []
    embed = memory.embedder.embed  # the model behind the retriever's recent-query vectors

    def counted(texts: Sequence[str]) -> npt.NDArray[np.float32]:
        calls.append(list(texts))
        return embed(texts)

    monkeypatch.setattr(memory.embedder, "embed", counted)
    query = "What did Ben eat after the trip to Lisbon?"
    first = memory.recall(query, k=3)
    assert len(calls) == 1  # the anchor phrase and the question together
    assert query in calls[0]
    assert len(calls[0]) == 2
    assert [e.unit.id for e in memory.recall(query, k=3)] == [e.unit.id for e in first]
    assert len(calls) == 1  # asked again: no embedding at all
    memory.retriever.embedder.forget()  # type: ignore[attr-defined]
    memory.recall(query, k=3)
    assert len(calls) == 2


def test_a_relation_question_passes_over_the_vectors_once(
    memory: RaMem, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The anchor is sought among the question's nearest memories, whose cosines retrieval
    then reuses: one pass over every memory's vector, not one for the anchor and one for the
    question."""
    from ramem_core.index.episodic import EpisodicIndex
    from ramem_core.retrieval import lookup

    memory.add_conversation(two_trips())
    query = "What did Alice do after the Lisbon holiday?"
    everywhere = memory.frame(query)  # a namespace smaller than the bound: a full search
    monkeypatch.setattr(lookup, "ANCHOR_CANDIDATES", 2)
    memory.retriever.embedder.forget()  # type: ignore[attr-defined]
    passes: list[int] = []
    cosines = EpisodicIndex.cosines

    def counted(index: EpisodicIndex, vector: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        passes.append(len(index.session_of))
        return cosines(index, vector)

    monkeypatch.setattr(EpisodicIndex, "cosines", counted)
    found = memory.recall(query, k=3)
    frame, evidence = found.frame, found.evidence
    assert len(passes) == 1
    assert [t.anchor_id for t in frame.times] == [t.anchor_id for t in everywhere.times]
    assert any(t.anchor_id for t in frame.times)  # the anchor was found among the candidates
    assert evidence[0].contextual
    # a write makes a new snapshot: its cosines are computed again, never reused
    memory.add_turn("Ben", "I ate octopus after the Lisbon holiday.", at=datetime(2023, 9, 1))
    memory.recall(query, k=3)
    assert len(passes) == 2


class PinnedEmbedder(HashEmbedder):
    """The hash embedder, but the texts in ``pinned`` get the vectors given."""

    def __init__(self, pinned: dict[str, npt.NDArray[np.float32]]) -> None:
        super().__init__()
        self.pinned = pinned

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out = super().embed(texts)
        for i, text in enumerate(texts):
            if text in self.pinned:
                out[i] = self.pinned[text]
        return out


def _locate_among(contents: list[str], best: int, monkeypatch: pytest.MonkeyPatch) -> str | None:
    """Locate "kiln" among memories (one session each, rows in this order) whose vectors are
    orthogonal but for memory ``best``, which has the phrase's own vector."""
    from ramem_core import EpisodicContext, MemoryUnit
    from ramem_core.index.snapshot import Snapshot
    from ramem_core.retrieval import Retriever

    dimension = HashEmbedder().dimension
    vectors = np.eye(len(contents) + 1, dimension, dtype=np.float32)[1:]
    vectors[best] = np.eye(1, dimension, dtype=np.float32)[0]
    units = [
        MemoryUnit(f"m{i}", text, EpisodicContext(f"S{i}", "c", None, turn_index=0))
        for i, text in enumerate(contents)
    ]
    snap = Snapshot(units, vectors)
    embedder = PinnedEmbedder({"kiln": np.eye(1, dimension, dtype=np.float32)[0]})
    found = Retriever(embedder).lookup(snap).locate("kiln")
    return None if found is None else found.id


def test_an_anchor_must_be_among_the_three_best_lexical_matches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    strong = ["kiln kiln kiln glaze", "kiln kiln kiln clay", "kiln kiln kiln wheel"]
    weak = "the kiln and many other words about something else entirely"
    # the phrase's best dense match is only the fourth lexical match: ambiguous
    assert _locate_among([*strong, weak], best=3, monkeypatch=monkeypatch) is None
    # as the third, it is accepted
    assert _locate_among([*strong[:2], weak], best=2, monkeypatch=monkeypatch) == "m2"
    # ties count in row order (a stable ranking): the fourth of four equal matches is out
    equal = ["kiln glaze", "kiln clay", "kiln wheel", "kiln stool"]
    assert _locate_among(equal, best=3, monkeypatch=monkeypatch) is None
    assert _locate_among(equal, best=2, monkeypatch=monkeypatch) == "m2"


def test_recall_reads_one_snapshot_for_its_frame_and_its_ranking(
    memory: RaMem, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write that lands between the frame and the ranking is seen by both or by neither:
    one recall takes the namespace's snapshot once."""
    memory.add_conversation(two_trips())
    reads: list[object] = []
    get = memory.snapshots.get

    def counted(namespace: str) -> object:
        snap = get(namespace)
        reads.append(snap)
        return snap

    monkeypatch.setattr(memory.snapshots, "get", counted)
    found = memory.recall("What did Alice do after the Lisbon holiday?", k=3)
    assert len(reads) == 1
    assert any(t.anchor_id for t in found.frame.times)  # the frame read it too
    assert found.frame.now == datetime(2023, 8, 28, 21, 0)  # the snapshot's last session end


@pytest.mark.parametrize(
    "bad",
    [
        {"window_slots": -1},
        {"validity_pool": 0},
        {"time_weight": -0.5},
        {"dense": False, "lexical": False},
    ],
)
def test_a_bad_retrieval_setting_is_named(bad: dict[str, object]) -> None:
    with pytest.raises(InvalidInputError, match=next(iter(bad))):
        RetrievalConfig(**bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("exclude_anchor", [False, True])
def test_in_the_anchors_episode_a_later_event_is_judged_by_its_event(
    memory: RaMem, exclude_anchor: bool
) -> None:
    """ "After the trip" means after the trip's event: a plan told in the same session for a
    later week is after it; the session's small talk is not."""
    back = Session(
        "A",
        (
            Turn("A:1", "Ben", "I got back from the Lisbon trip last week."),
            Turn("A:2", "Alice", "Welcome back! Tell me everything."),
            Turn("A:3", "Ben", "I start a new job next week."),
        ),
        datetime(2023, 5, 20, 19),  # said after the trip: its small talk overlaps "after"
    )
    later = Session("B", (Turn("B:1", "Ben", "I started a pottery class."),), datetime(2023, 6, 2))
    memory.add_conversation(Conversation("c", (back, later), ("Ben", "Alice")))
    config = RetrievalConfig(exclude_anchor=exclude_anchor)
    found = RaMem(memory.store, counter=WordCounter(), config=config).recall(
        "What did Ben do after the Lisbon trip?"
    )
    _labels_hold(found)
    by_turn = {e.unit.source_ids[0]: e for e in found}
    assert [s for s in by_turn["A:3"].satisfied if "within" in s]  # its event: a later week
    assert not by_turn["A:2"].satisfied  # said in the anchor's episode, no event of its own
    assert not by_turn["A:1"].satisfied  # the trip itself
    assert by_turn["A:3"].contextual
    assert by_turn["A:2"].contextual is not exclude_anchor  # strict: kept out of the ranking


def test_the_anchors_side_never_takes_the_first_places(memory: RaMem) -> None:
    _back_from_lisbon(memory)
    query = "What did Ben do after the Lisbon trip?"
    found = memory.recall(query, k=3)
    assert [e.unit.source_ids[0] for e in found] == ["B:1", "A:1", "A:2"]
    assert [on_anchor_side(e.unit, found.frame) for e in found] == [False, True, True]
    assert [e.score for e in found] == sorted((e.score for e in found), reverse=True)
    off = RetrievalConfig(anchor_side_slots=0)
    plain = RaMem(memory.store, counter=WordCounter(), config=off).recall(query, k=3)
    assert on_anchor_side(plain[0].unit, plain.frame)  # without it: the trip itself first
    assert {e.unit.id for e in plain} == {e.unit.id for e in found}  # the same top k


def test_rows_ranked_apart_take_no_rank_from_the_others(memory: RaMem) -> None:
    from ramem_core.index.snapshot import Snapshot
    from ramem_core.retrieval import Retriever

    memory.add_conversation(two_trips())
    for day, asked in enumerate(["What did Ben eat in Lisbon?", "Where did Alice go?"]):
        memory.add_exchange(
            asked, "From what you told me: sardines.", at=datetime(2024, 1, day + 1)
        )
    snap = memory.snapshots.get(memory.namespace)
    assert snap.vectors is not None
    stated = np.flatnonzero(~snap.derived)
    alone = Snapshot(
        [snap.unit(int(i)) for i in stated], snap.vectors[stated], memory.retriever.config.keys
    )
    query = "What did Ben eat in Lisbon?"
    vector = memory.embedder.embed([query])[0]
    dense_only = Retriever(memory.embedder, RetrievalConfig(lexical=False))
    together = dense_only.rank(snap, query, vector, apart=snap.derived)
    np.testing.assert_allclose(
        together.fused[stated], dense_only.rank(alone, query, vector).fused, rtol=1e-6
    )
    mixed = dense_only.rank(snap, query, vector)  # without: the questions take their ranks
    assert not np.allclose(mixed.fused[stated], together.fused[stated])
