"""Snapshots: a namespace's memories, arrays and index, updated turn by turn as if rebuilt."""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pytest

from ramem_core import EpisodicContext, Kind, MemoryUnit, TimeSpan
from ramem_core.index.columns import COLUMNS
from ramem_core.index.episodic import EpisodicKeys
from ramem_core.types import Granularity
from tests.conftest import unit_at

# ---------------------------------------------------------------- evolving with live turns


BOWL = TimeSpan(datetime(2023, 8, 30), datetime(2023, 8, 30, 23, 59, 59), Granularity.DAY)


def _live_units(
    own_spans: bool = False,
) -> tuple[list[MemoryUnit], list[tuple[list[MemoryUnit], list[MemoryUnit]]]]:
    """A history, then a live session growing turn by turn. Each step: what the update is
    given, and every live unit so far. ``own_spans``: as add_turn writes now (the new turn
    only, spanning the session's start to its own time; the fourth turn arrives late, from the
    previous month); otherwise the new turn and the earlier ones with the grown span."""
    from dataclasses import replace

    from ramem_core import RuleAnchorer
    from tests.conftest import two_trips

    history = RuleAnchorer().anchor(two_trips())
    texts = [
        "user: I started a pottery class downtown.",
        "assistant: How was the first evening?",
        "user: Wonderful, I made a small bowl and a sardine plate.",
        "assistant: Will you go back next week?",
        "user: Yes, and my doctor said the hobby helps my blood pressure.",
    ]
    start = datetime(2023, 9, 1, 10, 0)
    steps: list[tuple[list[MemoryUnit], list[MemoryUnit]]] = []
    live: list[MemoryUnit] = []
    first = start
    for i, text in enumerate(texts):
        at = datetime(2023, 8, 31, 23, 50) if own_spans and i == 3 else start.replace(minute=i)
        first = min(first, at)
        span = TimeSpan(first if own_spans else start, at, Granularity.INSTANT)
        if not own_spans:
            live = [replace(u, context=replace(u.context, session_span=span)) for u in live]
        unit = MemoryUnit(
            f"live-{i}",
            text,
            EpisodicContext(
                "L",
                "friends",
                span,
                # live rows hold every value of every column: an event, a reply
                event_time=BOWL if i == 2 else None,
                speaker=text.split(":")[0],
                turn_index=i,
                participants=(text.split(":")[0],),
                kind=Kind.REPLY if text.startswith("assistant") else Kind.STATEMENT,
            ),
        )
        live = [*live, unit]
        steps.append(([unit] if own_spans else list(live), list(live)))
    return history, steps


def _by_id(snapshot, values) -> dict[str, float]:
    return {u.id: float(v) for u, v in zip(snapshot.units, values, strict=True)}


@pytest.mark.parametrize("reload", [False, True], ids=["in-memory", "reloaded"])
@pytest.mark.parametrize("patch_limit", [512, 1], ids=["patched", "rewritten"])
@pytest.mark.parametrize("own_spans", [False, True], ids=["whole-session", "own-spans"])
def test_a_snapshot_updated_turn_by_turn_scores_like_one_built_from_scratch(
    own_spans: bool, patch_limit: int, reload: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``reload``: every version goes through a snapshot file's form (encoded and decoded)
    before it is updated, as after a restart: columnar units and postings must evolve alike."""
    from ramem_core.index import episodic as index
    from ramem_core.index.files import through_file
    from ramem_core.index.snapshot import Snapshot
    from ramem_core.retrieval import RetrievalConfig, Retriever
    from ramem_core.testing import HashEmbedder

    monkeypatch.setattr(index, "DENSE_PATCH_LIMIT", patch_limit)

    embedder = HashEmbedder()
    history, steps = _live_units(own_spans)
    keys = EpisodicKeys()
    versions = [Snapshot(history, embedder.embed([u.content for u in history]), keys)]
    for step, _ in steps:
        new = step[-1]
        if reload:
            versions[-1] = through_file(versions[-1])
        updated = versions[-1].updated(step, {new.id: embedder.embed([new.content])[0]})
        assert updated is not None  # an append: no rebuild
        versions.append(updated)
    retriever = Retriever.__new__(Retriever)
    retriever.config = RetrievalConfig()
    queries = [
        "pottery bowl",
        "blood pressure doctor",
        "grilled sardines river",
        "next week",
        "what happened in august",  # the session's date words (a late turn moves its month)
        "september 2023",
        "what did the user say about pottery",  # names a speaker: the speaker bonus
    ]
    # every version, queried only now, still answers for its own units (copy on write)
    totals = [history, *(history + so_far for _, so_far in steps)]
    for version, units in zip(versions, totals, strict=True):
        fresh = Snapshot(units, embedder.embed([u.content for u in units]), keys)
        for q in queries:
            vector = embedder.embed([q])[0]
            for part in (
                lambda s, q=q: s.index.lexical_scores(q),
                lambda s, v=vector: s.index.dense_scores(v),
                lambda s, q=q, v=vector: retriever.rank(s, q, v, speakers=("user",)).fused,
            ):
                got, want = _by_id(version, part(version)), _by_id(fresh, part(fresh))
                assert got.keys() == want.keys()
                np.testing.assert_allclose([got[i] for i in want], list(want.values()), rtol=1e-5)
        own = version.index.own_counts  # read from the own-words index once reloaded
        fresh_own = fresh.index.own_counts  # (a line's versions share it: newer rows follow)
        for unit in version.units:
            assert own[version.position[unit.id]] == fresh_own[fresh.position[unit.id]]
        for column in COLUMNS:  # every declared per-memory fact, a new one included
            got = _by_id(version, version.columns[column.name])
            want = _by_id(fresh, fresh.columns[column.name])
            assert got == want, column.name
        assert any(fresh.timed)
        for unit in version.units:  # the per-session state a live writer continues from
            key = (unit.context.conversation_id, unit.context.session_id)
            assert version._session_turns[key] == fresh._session_turns[key]
            assert version._session_speakers[key] == fresh._session_speakers[key]
            assert sorted(version.session_rows(key).tolist()) == sorted(
                version.position[u.id]
                for u in fresh.units
                if fresh.position[u.id] in set(fresh.session_rows(key).tolist())
            )
        assert version.time_range == fresh.time_range
        assert version.last_session_end == fresh.last_session_end
        assert version.names == fresh.names
        assert version.ubiquitous == fresh.ubiquitous
        assert [version.unit(i).context.session_span for i in range(len(version))] == [
            fresh.unit(fresh.position[u.id]).context.session_span for u in version.units
        ]
        order = [fresh.position[u.id] for u in version.units]
        np.testing.assert_array_equal(version.involving("user"), fresh.involving("user")[order])


def test_an_older_version_of_a_reloaded_snapshot_updates_from_its_own_rows() -> None:
    """Versions of a line share their own-word counts, appended in place; an older version
    updated again (a branch) counts only its own rows and the branch's."""
    from dataclasses import replace

    from ramem_core.index.files import through_file
    from ramem_core.index.snapshot import Snapshot
    from ramem_core.testing import HashEmbedder

    embedder = HashEmbedder()
    history, steps = _live_units(own_spans=True)
    loaded = through_file(Snapshot(history, embedder.embed([u.content for u in history])))
    versions = [loaded]
    for step, _ in steps[:3]:
        new = step[-1]
        updated = versions[-1].updated(step, {new.id: embedder.embed([new.content])[0]})
        assert updated is not None
        versions.append(updated)
    older = versions[2]  # two live turns in; a third and a fourth came after it
    branch = replace(steps[3][0][-1], id="branch", content="user: the kiln cracked my vase")
    turned = older.updated([branch], {branch.id: embedder.embed([branch.content])[0]})
    assert turned is not None
    units = [*history, *(step[-1] for step, _ in steps[:2]), branch]
    fresh = Snapshot(units, embedder.embed([u.content for u in units]))
    assert len(turned) == len(fresh)
    for unit in fresh.units:
        got = turned.index.own_counts[turned.position[unit.id]]
        assert got == fresh.index.own_counts[fresh.position[unit.id]]
    with pytest.raises(IndexError, match="rows count from 0"):
        turned.index.own_counts[-1]  # not the last row of another version's list


def test_an_edited_content_is_not_an_update() -> None:
    from dataclasses import replace

    from ramem_core.index.snapshot import Snapshot
    from ramem_core.testing import HashEmbedder

    history, _ = _live_units()
    snap = Snapshot(history, HashEmbedder().embed([u.content for u in history]))
    edited = replace(history[0], content="Alice: something else entirely")
    assert snap.updated([edited], {}) is None  # the caller rebuilds


def test_a_live_turn_changes_the_dense_window_of_the_last_turn_only() -> None:
    """A live session's update keeps apart only the rows whose window changed (the former
    last turn), not every row of the session, so the update costs its turn."""
    from ramem_core.index.snapshot import Snapshot
    from ramem_core.testing import HashEmbedder

    embedder = HashEmbedder()
    units = [unit_at(f"t{i}", "L", i, f"Ann: turn {i} about pottery") for i in range(12)]
    snap = Snapshot(units[:10], embedder.embed([u.content for u in units[:10]]))
    for step, unit in enumerate(units[10:], start=1):
        updated = snap.updated([unit], {unit.id: embedder.embed([unit.content])[0]})
        assert updated is not None
        snap = updated
        assert set(snap.index._patch) == {snap.position[f"t{9 + i}"] for i in range(step)}


def test_two_updates_of_one_snapshot_never_share_their_new_rows() -> None:
    from dataclasses import replace

    from ramem_core.index.snapshot import Snapshot
    from ramem_core.testing import HashEmbedder

    embedder = HashEmbedder()
    history, steps = _live_units(own_spans=True)
    start = Snapshot(history, embedder.embed([u.content for u in history]))
    zeroth = steps[0][0][0]
    base = start.updated([zeroth], {zeroth.id: embedder.embed([zeroth.content])[0]})
    assert base is not None  # grown once: its buffers have spare rows now
    history = [*history, zeroth]
    first_unit = steps[1][0][0]
    other_unit = replace(first_unit, id="other", content="user: I sold my old bicycle.")
    first = base.updated([first_unit], {first_unit.id: embedder.embed([first_unit.content])[0]})
    other = base.updated([other_unit], {"other": embedder.embed([other_unit.content])[0]})
    assert first is not None
    assert other is not None
    assert first.vectors is not None
    assert other.vectors is not None
    np.testing.assert_allclose(first.vectors[-1], embedder.embed([first_unit.content])[0])
    np.testing.assert_allclose(other.vectors[-1], embedder.embed([other_unit.content])[0])
    query = embedder.embed(["pottery class downtown"])[0]
    fresh = Snapshot(
        [*history, first_unit], embedder.embed([*(u.content for u in history), first_unit.content])
    )
    np.testing.assert_allclose(
        first.index.dense_scores(query), fresh.index.dense_scores(query), rtol=1e-5
    )
    assert base.vectors is not None
    assert len(base.vectors) == len(history)


def test_a_known_unit_restored_with_a_new_context_reads_as_rebuilt() -> None:
    """A write that gives known units a new context (a later turn index, a shorter span: a
    live session rewritten by another writer) leaves the session's turn count and span as a
    snapshot built from scratch has them."""
    from dataclasses import replace

    from ramem_core.index.snapshot import Snapshot
    from ramem_core.testing import HashEmbedder

    embedder = HashEmbedder()
    history, steps = _live_units(own_spans=True)
    live = steps[2][1]  # three live turns, each spanning the session's start to its time
    units = [*history, *live]
    snap = Snapshot(units, embedder.embed([u.content for u in units]))
    last = live[-1]
    own, before = last.context.session_span, live[1].context.session_span
    assert own is not None
    assert before is not None
    shorter = TimeSpan(own.start, before.end, Granularity.INSTANT)
    restored = replace(last, context=replace(last.context, turn_index=7, session_span=shorter))
    updated = snap.updated([restored], {})
    assert updated is not None
    fresh_units = [*history, *live[:-1], restored]
    fresh = Snapshot(fresh_units, embedder.embed([u.content for u in fresh_units]))
    assert updated._session_turns == fresh._session_turns
    assert updated._session_turns[("friends", "L")] == 8  # the moved turn is the last
    assert updated._session_span == fresh._session_span
    for unit in fresh_units:
        row, fresh_row = updated.position[unit.id], fresh.position[unit.id]
        assert updated.unit(row).context == fresh.unit(fresh_row).context, unit.id
