"""The episodic keys (stage 3): neighbour turns, dense windows, the speaker key, and the
fusion's ranks."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import numpy.typing as npt
import pytest

from ramem_core import MemoryUnit
from ramem_core.index.episodic import CONTENT_KEYS, EpisodicIndex, EpisodicKeys
from ramem_core.retrieval import ranks
from tests.conftest import unit_at


def placed(unit: MemoryUnit, place: int) -> MemoryUnit:
    """``unit`` with its place in the dialogue."""
    return replace(unit, context=replace(unit.context, place=place))


UNITS = [
    # rows out of turn order on purpose: the index orders sessions by turn_index
    unit_at("a2", "A", 1, "Ben: It was wonderful."),
    unit_at("a1", "A", 0, "Alice: I joined a pottery class."),
    unit_at("a3", "A", 2, "Alice: We made bowls."),
    unit_at("b1", "B", 0, "Ben: The river was cold.", day=9),
]


def test_lexical_keys_carry_neighbour_turns_with_their_weights() -> None:
    index = EpisodicIndex(UNITS, keys=EpisodicKeys(neighbours=(0.5, 0.25)))
    scores = index.lexical_scores("pottery")
    a1, a2, a3, b1 = (scores[i] for i in (1, 0, 2, 3))
    assert a1 > a2 > a3 > 0.0  # own words, then distance 1, then distance 2
    assert b1 == 0.0  # never across sessions
    plain = EpisodicIndex(UNITS, keys=CONTENT_KEYS).lexical_scores("pottery")
    assert plain[0] == 0.0
    assert plain[2] == 0.0


def test_a_neighbour_lends_by_its_distance_in_the_dialogue() -> None:
    """Only the user's side stored (LongMemEval): the next stored turn is two steps away in
    the dialogue (the reply between them), so it lends the distance-2 weight, and the one
    after it nothing; stored turns side by side lend as before."""
    both = [
        unit_at("u0", "A", 0, "Alice: I joined a pottery class."),
        unit_at("u2", "A", 1, "Alice: It was wonderful."),
        unit_at("u4", "A", 2, "Alice: We made bowls."),
    ]
    user_side = [placed(u, 2 * i) for i, u in enumerate(both)]  # said at 0, 2 and 4
    keys = EpisodicKeys(neighbours=(0.5, 0.25))

    def lent(units: list[MemoryUnit], keys: EpisodicKeys) -> list[float]:
        """How much of u0's "pottery" each row's key holds."""
        index = EpisodicIndex(units, keys=keys)
        (term,) = index.tokenize("pottery")
        docs = [index.lexical.document(int(d)) or {} for d in index.row_doc]
        return [doc.get(term, 0.0) for doc in docs]

    assert lent(both, keys) == [1.0, 0.5, 0.25]
    assert lent(user_side, keys) == [1.0, 0.25, 0.0]  # two steps, then four steps away
    assert lent(user_side, replace(keys, dialogue_distance=False)) == [1.0, 0.5, 0.25]
    assert EpisodicIndex(user_side, keys=keys).lexical_scores("pottery")[2] == 0.0
    # no places given: turn indexes far apart (a keyed memory's seconds, a memory of several
    # turns) key as the stored turns lie, as before
    apart = [unit_at(u.id, "A", 60 * i, u.content) for i, u in enumerate(both)]
    assert lent(apart, keys) == [1.0, 0.5, 0.25]
    assert lent([both[0], user_side[1], user_side[2]], keys) == [1.0, 0.5, 0.25]  # one unknown


@pytest.mark.parametrize("gaps", [False, True])
@pytest.mark.parametrize("weights", [(0.5, 0.25), (0.3, 0.7, 0.1), (0.1, 0.7), (0.0, 0.4), ()])
def test_a_build_keys_each_row_as_the_live_update_does(
    weights: tuple[float, ...], gaps: bool
) -> None:
    """The build makes every key at once from columns; a live update makes a few keys one at
    a time: the same terms in the same order with the same weights, so the same lengths,
    whatever the neighbour weights (a session of one turn, a turn of stop words only)."""
    units = [
        *UNITS,
        unit_at("a4", "A", 3, "Alice: Bowls and cups, bowls again."),
        unit_at("a5", "A", 4, "Ben: Cold cups of tea with Alice."),
        unit_at("a6", "A", 5, "and then the"),
        unit_at("a7", "A", 6, "Cup cat, tea cup and a bowl."),
        unit_at("b2", "B", 1, "Alice: The river, the river!", day=9),
        unit_at("c1", "C", 0, "Ben: Tea alone.", day=10),
    ]
    if gaps:  # the dialogue's places, some turns left out: pieces of one turn share theirs;
        # a2 has none
        places = {"a1": 0, "a3": 3, "a4": 5, "a5": 5, "a6": 6, "a7": 9, "b2": 3}
        units = [placed(u, places[u.id]) if u.id in places else u for u in units]
    index = EpisodicIndex(units, keys=EpisodicKeys(neighbours=weights))
    known = [-1 if u.context.place is None else u.context.place for u in units]
    for rows in index.session_rows:
        for row, key in zip(rows.tolist(), index._session_keys(rows, known), strict=True):
            doc = int(index.row_doc[row])
            built = index.lexical.document(doc)
            assert built is not None
            assert list(built.items()) == list(key.items())
            assert index.lexical.lengths(np.array([doc]))[0] == sum(key.values())


def test_episodic_key_weights_must_be_finite_and_non_negative() -> None:
    for bad in ({"neighbours": (0.5, float("nan"))}, {"speaker_weight": -1.0}):
        with pytest.raises(ValueError, match="finite and non-negative"):
            EpisodicKeys(**bad)  # type: ignore[arg-type]


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


def test_ranks_put_everything_past_depth_in_the_tail() -> None:
    scores = np.array([0.5, 3.0, 0.0, 2.0, 1.0], dtype=np.float32)
    np.testing.assert_array_equal(ranks(scores, 2), [2, 0, 2, 1, 2])
    np.testing.assert_array_equal(ranks(scores, 10), [3, 0, 10, 1, 2])  # 0 is not ranked
    np.testing.assert_array_equal(
        ranks(np.array([-0.5, -0.1], dtype=np.float32), 5, positive=False), [1, 0]
    )


def _fused(
    units: list[MemoryUnit], keys: EpisodicKeys, query: str, speakers: tuple[str, ...] = ()
) -> npt.NDArray[np.float32]:
    """The retriever's fused ranking of ``units`` (hash vectors) under ``keys``."""
    from ramem_core.index.snapshot import Snapshot
    from ramem_core.retrieval import RetrievalConfig, Retriever
    from ramem_core.testing import HashEmbedder

    embedder = HashEmbedder()
    snap = Snapshot(units, embedder.embed([u.content for u in units]), keys)
    retriever = Retriever(embedder, RetrievalConfig(keys=keys))
    return retriever.rank(snap, query, embedder.embed([query])[0], speakers=speakers).fused


def test_a_memory_said_by_the_person_the_query_names_ranks_first() -> None:
    from dataclasses import replace

    from ramem_core.index.snapshot import Snapshot
    from ramem_core.retrieval import RetrievalConfig, Retriever
    from ramem_core.testing import HashEmbedder

    def said(uid: str, session: str, speaker: str) -> MemoryUnit:
        unit = unit_at(uid, session, 0, "I painted a sunset over the lake.")
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
