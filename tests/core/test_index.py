"""The episodic index: BM25 with appends and removals, episodic keys, dense window keys."""

from __future__ import annotations

import math
from datetime import datetime

import numpy as np
import numpy.typing as npt
import pytest

from ramem_core import EpisodicContext, MemoryUnit, TimeSpan
from ramem_core.episodic import CONTENT_KEYS, EpisodicIndex, EpisodicKeys
from ramem_core.retrieval import ranks
from ramem_core.store.bm25 import LexicalIndex, Tokenizer, term_counts
from ramem_core.types import Granularity


def _bm25(docs: list[dict[str, float]], query: list[str], k1: float = 1.5, b: float = 0.75):
    """A textbook BM25 to check the index against."""
    n = len(docs)
    avgdl = sum(sum(d.values()) for d in docs) / n
    out = []
    for doc in docs:
        dl = sum(doc.values())
        score = 0.0
        for term, qtf in term_counts(query).items():
            df = sum(term in d for d in docs)
            if not df or term not in doc:
                continue
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            tf = doc[term]
            score += qtf * idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
        out.append(score)
    return out


DOCS = [
    {"pottery": 1.0, "class": 1.0},
    {"pottery": 2.0, "bowl": 0.5},
    {"river": 1.0, "sardin": 1.0, "grill": 1.0},
    {"class": 1.0, "yoga": 1.0, "river": 0.25},
]


def test_bm25_matches_the_textbook_formula() -> None:
    index = LexicalIndex()
    for doc in DOCS:
        index.add(doc)
    query = ["pottery", "class", "river", "unknown"]
    np.testing.assert_allclose(index.scores(query), _bm25(DOCS, query), rtol=1e-5)


def test_removed_documents_leave_the_statistics() -> None:
    index = LexicalIndex()
    ids = [index.add(doc) for doc in DOCS]
    index.remove(ids[1])
    index.remove(ids[1])  # twice is a no-op
    query = ["pottery", "class", "river"]
    scores = index.scores(query)
    assert scores[ids[1]] == 0.0
    live = [DOCS[i] for i in (0, 2, 3)]
    np.testing.assert_allclose(scores[[0, 2, 3]], _bm25(live, query), rtol=1e-5)
    assert index.live == 3
    evolved, [new] = index.evolve([ids[0]], [{"pottery": 3.0}])
    assert new == len(DOCS)
    assert evolved.live == 3
    assert index.live == 3  # the index it came from is unchanged
    np.testing.assert_allclose(index.scores(query), scores)
    np.testing.assert_allclose(
        evolved.scores(query)[[new, 2, 3]],
        _bm25([{"pottery": 3.0}, DOCS[2], DOCS[3]], query),
        rtol=1e-5,
    )


def test_evolved_indexes_share_postings_but_never_see_each_others_documents() -> None:
    base = LexicalIndex()
    base.extend(DOCS)
    query = ["pottery", "class", "river"]
    before = base.scores(query)
    first, [a] = base.evolve([0], [{"pottery": 1.0, "river": 2.0}])
    second, [b] = first.evolve([], [{"class": 4.0}])
    fork, [c] = base.evolve([2], [{"yoga": 1.0, "pottery": 3.0}])  # the base again: a copy
    np.testing.assert_allclose(base.scores(query), before)  # untouched by three evolutions
    np.testing.assert_allclose(
        second.scores(query)[[a, b, 1, 2, 3]],
        _bm25([{"pottery": 1.0, "river": 2.0}, {"class": 4.0}, DOCS[1], DOCS[2], DOCS[3]], query),
        rtol=1e-5,
    )
    assert len(first.scores(query)) == a + 1  # first never sees second's document
    np.testing.assert_allclose(
        fork.scores(query)[[c, 0, 1, 3]],
        _bm25([{"yoga": 1.0, "pottery": 3.0}, DOCS[0], DOCS[1], DOCS[3]], query),
        rtol=1e-5,
    )
    assert fork.scores(query)[2] == 0.0
    assert (a, b, c) == (4, 5, 4)


def test_tokenizer_lowercases_stems_and_drops_stop_words() -> None:
    assert Tokenizer()("The Pottery classes were in the river") == [
        "potteri",
        "class",
        "were",
        "river",
    ]


def _unit(uid: str, session: str, turn: int, text: str, day: int = 1) -> MemoryUnit:
    span = TimeSpan(datetime(2023, 5, day, 10), datetime(2023, 5, day, 11), Granularity.INSTANT)
    return MemoryUnit(uid, text, EpisodicContext(session, "c", span, turn_index=turn))


UNITS = [
    # rows out of turn order on purpose: the index orders sessions by turn_index
    _unit("a2", "A", 1, "Ben: It was wonderful."),
    _unit("a1", "A", 0, "Alice: I joined a pottery class."),
    _unit("a3", "A", 2, "Alice: We made bowls."),
    _unit("b1", "B", 0, "Ben: The river was cold.", day=9),
]


def test_lexical_keys_carry_neighbour_turns_with_their_weights() -> None:
    index = EpisodicIndex(UNITS, keys=EpisodicKeys(neighbours=(0.5, 0.25), session_date=False))
    scores = index.lexical_scores("pottery")
    a1, a2, a3, b1 = (scores[i] for i in (1, 0, 2, 3))
    assert a1 > a2 > a3 > 0.0  # own words, then distance 1, then distance 2
    assert b1 == 0.0  # never across sessions
    plain = EpisodicIndex(UNITS, keys=CONTENT_KEYS).lexical_scores("pottery")
    assert plain[0] == 0.0
    assert plain[2] == 0.0


def test_session_date_words_are_searchable() -> None:
    with_date = EpisodicIndex(UNITS, keys=EpisodicKeys(session_date=True))
    assert with_date.lexical_scores("May 2023").min() > 0.0
    assert EpisodicIndex(UNITS, keys=CONTENT_KEYS).lexical_scores("May 2023").max() == 0.0


def _fused(
    units: list[MemoryUnit], keys: EpisodicKeys, query: str, speakers: tuple[str, ...] = ()
) -> npt.NDArray[np.float32]:
    """The retriever's fused ranking of ``units`` (hash vectors) under ``keys``."""
    from ramem_core.retrieval import RetrievalConfig, Retriever
    from ramem_core.store.snapshot import Snapshot
    from ramem_core.testing import HashEmbedder

    embedder = HashEmbedder()
    snap = Snapshot(units, embedder.embed([u.content for u in units]), keys)
    retriever = Retriever(embedder, RetrievalConfig(keys=keys))
    return retriever.rank(snap, query, embedder.embed([query])[0], speakers=speakers).fused


def test_session_documents_lift_every_turn_of_the_matching_episode() -> None:
    index = EpisodicIndex(UNITS, keys=EpisodicKeys(session_weight=4.0))
    assert index.session_scores("pottery bowls")[index.session_of[3]] == 0.0  # B: no match
    bonus = _fused(UNITS, EpisodicKeys(session_weight=4.0), "pottery bowls") - _fused(
        UNITS, EpisodicKeys(session_weight=0.0), "pottery bowls"
    )
    np.testing.assert_allclose(bonus[:3], [4.0 / 61] * 3, rtol=1e-5)  # float32 sums
    assert bonus[3] == 0.0  # session B does not match at all


def test_dense_key_adds_the_window_cosine() -> None:
    vectors = np.eye(4, dtype=np.float32)  # a2, a1, a3, b1 orthogonal
    index = EpisodicIndex(UNITS, vectors, EpisodicKeys(window=1))
    query = vectors[1]  # the vector of a1
    scores = index.dense_scores(query)
    # a1: cos 1 + window (a1+a2)/sqrt2 -> 1 + 1/sqrt2; a2: 0 + (a1+a2+a3)/sqrt3 -> 1/sqrt3
    assert scores[1] == pytest.approx(1 + 1 / math.sqrt(2))
    assert scores[0] == pytest.approx(1 / math.sqrt(3))
    assert scores[2] == pytest.approx(0.0)  # a3's window is a2 + a3: a1 is two turns away
    assert scores[3] == pytest.approx(0.0)
    plain = EpisodicIndex(UNITS, vectors, CONTENT_KEYS).dense_scores(query)
    np.testing.assert_allclose(plain, [0, 1, 0, 0])


def test_own_cosines_are_each_rows_own() -> None:
    vectors = np.eye(4, dtype=np.float32)
    index = EpisodicIndex(UNITS, vectors, EpisodicKeys())
    cosines = index.cosines(vectors[1])  # the vector of a1
    dense, lexical = index.own_scores("pottery", cosines, np.array([1, 3]))
    assert dense is not None
    assert lexical is not None
    assert dense[1] == pytest.approx(1.0)
    assert dense[3] == pytest.approx(0.0)
    assert np.isneginf(dense[[0, 2]]).all()  # rows outside the candidates
    assert lexical[1] > 0.0
    assert lexical[3] == 0.0


def test_ranks_put_everything_past_depth_in_the_tail() -> None:
    scores = np.array([0.5, 3.0, 0.0, 2.0, 1.0], dtype=np.float32)
    np.testing.assert_array_equal(ranks(scores, 2), [2, 0, 2, 1, 2])
    np.testing.assert_array_equal(ranks(scores, 10), [3, 0, 10, 1, 2])  # 0 is not ranked
    np.testing.assert_array_equal(
        ranks(np.array([-0.5, -0.1], dtype=np.float32), 5, positive=False), [1, 0]
    )


def test_bulk_extend_scores_like_one_add_at_a_time() -> None:
    one, bulk = LexicalIndex(), LexicalIndex()
    for doc in DOCS:
        one.add(doc)
    bulk.extend(DOCS)
    query = ["pottery", "class", "river", "bowl"]
    np.testing.assert_allclose(bulk.scores(query), one.scores(query), rtol=1e-6)
    np.testing.assert_allclose(bulk.scores(query), _bm25(DOCS, query), rtol=1e-5)
    bulk.remove(0)
    assert bulk.live == 3
    assert bulk.scores(["pottery"])[0] == 0.0


# ---------------------------------------------------------------- evolving with live turns


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
                speaker=text.split(":")[0],
                turn_index=i,
                participants=(text.split(":")[0],),
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
    """``reload``: every version goes through a snapshot file's form (pickled and loaded)
    before it is updated, as after a restart: columnar units and postings must evolve alike."""
    import pickle

    from ramem_core import episodic as index
    from ramem_core.retrieval import RetrievalConfig, Retriever
    from ramem_core.store.snapshot import Snapshot
    from ramem_core.testing import HashEmbedder

    monkeypatch.setattr(index, "DENSE_PATCH_LIMIT", patch_limit)

    embedder = HashEmbedder()
    history, steps = _live_units(own_spans)
    keys = EpisodicKeys()
    versions = [Snapshot(history, embedder.embed([u.content for u in history]), keys)]
    for step, _ in steps:
        new = step[-1]
        if reload:
            versions[-1] = pickle.loads(pickle.dumps(versions[-1], protocol=5))
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
                lambda s, q=q: s.index.session_scores(q)[s.index.session_of],
                lambda s, q=q, v=vector: retriever.rank(s, q, v, speakers=("user",)).fused,
            ):
                got, want = _by_id(version, part(version)), _by_id(fresh, part(fresh))
                assert got.keys() == want.keys()
                np.testing.assert_allclose([got[i] for i in want], list(want.values()), rtol=1e-5)
        for spans in ("session", "event"):
            for field in ("known", "start", "end"):
                got = _by_id(version, getattr(getattr(version, spans), field))
                want = _by_id(fresh, getattr(getattr(fresh, spans), field))
                assert got == want, f"{spans}.{field}"
        assert _by_id(version, version.timed) == _by_id(fresh, fresh.timed)
        assert any(fresh.timed)
        assert version.time_range == fresh.time_range
        assert version.last_session_end == fresh.last_session_end
        assert version.names == fresh.names
        assert version.ubiquitous == fresh.ubiquitous
        assert [version.unit(i).context.session_span for i in range(len(version))] == [
            fresh.unit(fresh.position[u.id]).context.session_span for u in version.units
        ]
        order = [fresh.position[u.id] for u in version.units]
        np.testing.assert_array_equal(version.involving("user"), fresh.involving("user")[order])


def test_an_edited_content_is_not_an_update() -> None:
    from dataclasses import replace

    from ramem_core.store.snapshot import Snapshot
    from ramem_core.testing import HashEmbedder

    history, _ = _live_units()
    snap = Snapshot(history, HashEmbedder().embed([u.content for u in history]))
    edited = replace(history[0], content="Alice: something else entirely")
    assert snap.updated([edited], {}) is None  # the caller rebuilds


def test_a_live_turn_changes_the_dense_window_of_the_last_turn_only() -> None:
    """A live session's update keeps apart only the rows whose window changed (the former
    last turn), not every row of the session, so the update costs its turn."""
    from ramem_core.store.snapshot import Snapshot
    from ramem_core.testing import HashEmbedder

    embedder = HashEmbedder()
    units = [_unit(f"t{i}", "L", i, f"Ann: turn {i} about pottery") for i in range(12)]
    snap = Snapshot(units[:10], embedder.embed([u.content for u in units[:10]]))
    for step, unit in enumerate(units[10:], start=1):
        updated = snap.updated([unit], {unit.id: embedder.embed([unit.content])[0]})
        assert updated is not None
        snap = updated
        assert set(snap.index._patch) == {snap.position[f"t{9 + i}"] for i in range(step)}


def test_two_updates_of_one_snapshot_never_share_their_new_rows() -> None:
    from dataclasses import replace

    from ramem_core.store.snapshot import Snapshot
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


def test_a_memory_said_by_the_person_the_query_names_ranks_first() -> None:
    from dataclasses import replace

    from ramem_core.retrieval import RetrievalConfig, Retriever
    from ramem_core.store.snapshot import Snapshot
    from ramem_core.testing import HashEmbedder

    def said(uid: str, session: str, speaker: str) -> MemoryUnit:
        unit = _unit(uid, session, 0, "I painted a sunset over the lake.")
        return MemoryUnit(uid, unit.content, replace(unit.context, speaker=speaker))

    # the same words thrice; Melanie's first, so ties would go her way
    units = [said("mel", "B", "Melanie"), said("ben", "A", "Ben"), said("both", "C", "Ann, Ben")]
    embedder = HashEmbedder()
    vectors = embedder.embed([u.content for u in units])
    retriever = Retriever.__new__(Retriever)
    query = "What has Ben painted?"
    for weight in (0.5, 0.0):
        retriever.config = RetrievalConfig(keys=EpisodicKeys(speaker_weight=weight))
        snap = Snapshot(units, vectors, retriever.config.keys)
        fused = retriever.rank(snap, query, embedder.embed([query])[0], speakers=("Ben",)).fused
        if weight:
            assert fused[1] > fused[0]  # Ben's sunset above Melanie's identical one
            assert fused[2] > fused[0]  # "Ann, Ben": said by Ben too
        else:
            assert fused[0] >= fused[1]
    keys, off = EpisodicKeys(speaker_weight=0.5), EpisodicKeys(speaker_weight=0)
    several = "What have melanie's friends Ann and Ben painted?"
    both = _fused(units, keys, several, ("Melanie", "Ann", "Ben")) - _fused(units, keys, several)
    np.testing.assert_allclose(both, [0.5 / 61] * 3, rtol=1e-5)  # once per memory, not per name
    carol = "What has Carol painted?"
    np.testing.assert_array_equal(
        _fused(units, keys, carol, ("Carol",)), _fused(units, keys, carol)
    )
    np.testing.assert_array_equal(_fused(units, off, query, ("Ben",)), _fused(units, off, query))
