"""Live turns (:mod:`ramem_core.live`): which session a turn goes to, and what is stored."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import numpy.typing as npt
import pytest

from ramem_core import EpisodicContext, Granularity, Kind, MemoryUnit, RaMem, TimeSpan
from ramem_core.errors import InvalidInputError, WriteCancelledError
from ramem_core.index.snapshot import SessionState
from ramem_core.live import CANCEL_PIECES, check_turn, place, placed, turn_unit_id
from ramem_core.testing import HashEmbedder

AT = datetime(2024, 3, 1, 10, 0)
HOUR = timedelta(hours=1)


def _held(end: datetime, turns: int = 3) -> SessionState:
    span = TimeSpan(min(end, AT - timedelta(minutes=30)), end, Granularity.INSTANT)
    return SessionState("live-s2", 1, span, turns, ("user",))


def test_a_turn_continues_the_open_session_and_opens_one_after_a_pause() -> None:
    turn = check_turn("user", "Hello again", at=AT, conversation_id="live")
    near = place(_held(AT - timedelta(minutes=5)), turn, gap=HOUR)
    assert (near.session_id, near.index, near.turn) == ("live-s2", 1, 3)
    assert near.start == AT - timedelta(minutes=30)  # the session's start, not the turn's
    far = place(_held(AT - 3 * HOUR), turn, gap=HOUR)
    assert (far.session_id, far.index, far.turn, far.start) == ("live-s3", 2, 0, AT)
    assert place(_held(AT), turn, gap=HOUR, ended=True).session_id == "live-s3"
    assert place(_held(AT), turn, gap=HOUR, new_session=True).session_id == "live-s3"
    assert place(None, turn, gap=HOUR).session_id == "live-s1"


def test_a_turn_dated_long_before_the_open_session_starts_its_own() -> None:
    """History added out of order (a turn from April after one from May) must not stretch
    the open session back over the months between, which every turn of it would then show as
    when it was said."""
    may = datetime(2024, 5, 31, 9)
    held = SessionState("live-s2", 1, TimeSpan(may, may, Granularity.INSTANT), 1, ("user",))
    april = check_turn(
        "user", "I live in Lisbon.", at=datetime(2024, 4, 2, 9), conversation_id="live"
    )
    where = place(held, april, gap=HOUR)
    assert (where.session_id, where.turn, where.start) == ("live-s3", 0, datetime(2024, 4, 2, 9))
    skewed = check_turn(
        "user", "A writer's clock behind.", at=may - HOUR / 2, conversation_id="live"
    )
    assert place(held, skewed, gap=HOUR).session_id == "live-s2"  # within the gap: joins it


def test_the_agent_is_told_when_each_turn_was_said_whatever_order_they_came_in(
    memory: RaMem,
) -> None:
    memory.add_turn(
        "user", "The houseplants on my balcony are 14 now.", at=datetime(2024, 5, 31, 9)
    )
    memory.add_turn("user", "I live in Lisbon, near the river.", at=datetime(2024, 4, 2, 9))
    text = memory.situate("How many houseplants do I have?", k=1, at=datetime(2024, 7, 1)).text
    assert 'said="31 May 2024, 09:00"' in text


def test_placed_units_carry_their_session_and_a_question_no_event() -> None:
    turn = check_turn(
        "user", "What did I do in August?", at=AT, conversation_id="c", kind=Kind.QUESTION
    )
    august = TimeSpan(datetime(2023, 8, 1), datetime(2023, 8, 31, 23, 59), Granularity.MONTH)
    draft = MemoryUnit(
        "draft",
        "user: What did I do in August?",
        EpisodicContext("draft", "c", None, event_time=august),
    )
    where = place(_held(AT - timedelta(minutes=5)), turn, gap=HOUR)
    [unit] = placed([draft], turn, where, "me")
    ctx = unit.context
    assert (ctx.session_id, ctx.session_index, ctx.turn_index) == ("live-s2", 1, 3)
    assert ctx.session_span == TimeSpan(where.start, AT, Granularity.INSTANT)
    assert ctx.event_time is None  # asking about August is no event in August
    assert ctx.kind is Kind.QUESTION
    assert unit.source_ids[0].startswith("live-s2:4-")
    assert unit.id == turn_unit_id(turn, "me")


def test_a_turn_with_an_idempotency_key_has_the_same_id_wherever_it_is_placed() -> None:
    """A retry lands in another turn (or session) than the attempt it repeats: its id must
    not depend on that, or the retry stores it twice."""
    one = check_turn("user", "Hi", at=AT, conversation_id="c", idempotency_key="msg-1")
    again = check_turn("user", "Hi", at=AT, conversation_id="c", idempotency_key="msg-1")
    other = check_turn("user", "Hi", at=AT, conversation_id="d", idempotency_key="msg-1")
    draft = MemoryUnit("draft", "user: Hi", EpisodicContext("draft", "c", None))
    [first] = placed([draft], one, place(None, one, gap=HOUR), "me")
    [second] = placed([draft], again, place(_held(AT), again, gap=HOUR, new_session=True), "me")
    assert first.context.session_id != second.context.session_id
    elsewhere = placed([draft], other, place(None, other, gap=HOUR), "me")[0]
    assert first.id == second.id != elsewhere.id


def test_one_key_in_two_namespaces_makes_two_ids(tmp_path: Path) -> None:
    """Two tenants who both use the key "k1" get ids of their own; a retry in each finds its
    own memory, and a turn stored before ids were namespaced is still found by its retry."""
    from ramem_core.live import legacy_turn_id

    with RaMem.open(tmp_path) as memory:
        a = memory.add_turn("user", "I live in Oslo", at=AT, namespace="a", idempotency_key="k1")
        b = memory.add_turn("user", "I live in Rome", at=AT, namespace="b", idempotency_key="k1")
        assert a.id != b.id
        again = memory.add_turn(
            "user", "I live in Rome", at=AT, namespace="b", idempotency_key="k1"
        )
        assert again.id == b.id
        assert memory.count(namespace="b") == 1
        # a turn stored under its old id (before namespaces were in it)
        turn = check_turn("user", "Hi", at=AT, conversation_id="live", idempotency_key="old")
        [unit] = placed(
            [MemoryUnit("d", "user: Hi", EpisodicContext("d", "live", None))],
            turn,
            place(None, turn, gap=HOUR),
            "c",
        )
        old = replace(unit, id=legacy_turn_id(turn))
        memory.snapshots.write("c", [old], memory.embedder.embed([old.content]), new_ids=True)
        retry = memory.add_turn("user", "Hi", at=AT, namespace="c", idempotency_key="old")
        assert retry.id == old.id
        assert memory.count(namespace="c") == 1


def test_turns_get_keys_of_their_own_and_bad_ones_are_refused() -> None:
    one = check_turn("user", "Hi", at=AT, conversation_id="c")
    two = check_turn("user", "Hi", at=AT, conversation_id="c")
    assert one.key != two.key  # two writers of one conversation never share an id
    with pytest.raises(InvalidInputError, match="kind must be a Kind"):
        check_turn("user", "Hi", at=AT, conversation_id="c", kind="statement")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="nothing but echoed"):
        check_turn("assistant", "<memory>x</memory>", at=AT, conversation_id="c", kind=Kind.REPLY)


class _Counting(HashEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.passes: list[int] = []

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.passes.append(len(texts))
        return super().embed(texts)


def test_a_cancelled_turn_stores_nothing_and_stops_between_passes(memory: RaMem) -> None:
    with pytest.raises(WriteCancelledError, match="nothing stored"):
        memory.add_turn("user", "I adopted a cat", at=AT, cancelled=lambda: True)
    assert memory.count() == 0
    # a long message: its pieces are embedded CANCEL_PIECES at a time, and a cancel that
    # comes after the first pass stops it there
    counting = _Counting()
    long = RaMem.ephemeral(embedder=counting)
    text = " ".join(f"Sentence number {i} says something about the garden." for i in range(900))
    asked: list[int] = []

    def cancelled() -> bool:
        asked.append(len(counting.passes))
        return len(counting.passes) >= 1

    with pytest.raises(WriteCancelledError):
        long.add_turn("user", text, at=AT, cancelled=cancelled)
    assert counting.passes == [CANCEL_PIECES]
    assert long.count() == 0
    stored = long.add_turn("user", text, at=AT, cancelled=lambda: False)  # not cancelled
    assert long.count() > CANCEL_PIECES
    assert stored.content.startswith("user: Sentence number 0")
    long.close()


async def test_cancelling_aadd_turn_cancels_its_write(memory: RaMem) -> None:
    gate, entered = threading.Event(), threading.Event()
    embed = memory.live.embedder.embed

    def held(texts: Sequence[str]) -> npt.NDArray[np.float32]:
        entered.set()
        gate.wait(10)
        return embed(texts)

    memory.live.embedder = SimpleNamespace(embed=held)  # type: ignore[assignment]
    record, ended = memory.live.record, threading.Event()

    def watched(*args: object, **kwargs: object) -> MemoryUnit:
        try:
            return record(*args, **kwargs)  # type: ignore[arg-type]
        finally:
            ended.set()

    memory.live.record = watched  # type: ignore[method-assign]
    task = asyncio.ensure_future(memory.aadd_turn("user", "I adopted a cat", at=AT))
    await asyncio.to_thread(entered.wait, 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    gate.set()
    assert await asyncio.to_thread(ended.wait, 10)  # the worker thread is done
    memory.live.embedder = SimpleNamespace(embed=embed)  # type: ignore[assignment]
    assert memory.count() == 0
    with pytest.raises(InvalidInputError, match="cancelled must be a function"):
        await memory.aadd_turn(
            "user",
            "I adopted a cat",
            at=AT,
            cancelled=threading.Event(),  # type: ignore[arg-type]
        )
