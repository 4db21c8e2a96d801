"""The learned fusion: the stating turn first, statements reordered in their own places."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import pytest

from ramem_core import Conversation, Kind, RaMem, RetrievalConfig, Session, Turn
from ramem_core.errors import InvalidInputError
from ramem_core.retrieval import FUSION_FEATURES, LEARNED_FUSION, Fusion, load_fusion
from ramem_core.testing import WordCounter

ROOT = Path(__file__).resolve().parents[2]


def _baking(memory: RaMem) -> None:
    """Short turns that echo the episode's words around the one long turn that says it."""
    turns = (
        ("Ben", "Did the recipe work?"),
        ("Alice", "The cake recipe worked!"),
        (
            "Alice",
            "I baked the lemon cake from my grandmother's recipe with three eggs, fresh lemons"
            " and a cup of sugar, and it rose perfectly.",
        ),
        ("Ben", "Lemon cake sounds great."),
        ("Ben", "Your grandmother's cake recipe!"),
    )
    session = Session(
        "S",
        tuple(Turn(f"S:{i}", who, text) for i, (who, text) in enumerate(turns, 1)),
        datetime(2023, 5, 2),
    )
    memory.add_conversation(Conversation("c", (session,), ("Alice", "Ben")))


def test_the_learned_fusion_puts_the_stating_turn_above_its_neighbours(memory: RaMem) -> None:
    _baking(memory)
    query = "How many eggs did Alice use in her grandmother's lemon cake recipe?"
    assert memory.retriever.config.fusion == LEARNED_FUSION  # the default
    assert memory.recall(query, k=1)[0].unit.source_ids == ("S:3",)
    fixed = RaMem(memory.store, config=RetrievalConfig(fusion=None))
    assert fixed.recall(query, k=1)[0].unit.source_ids == ("S:2",)  # an echo of the episode


def _one(feature: str, sign: float = 1.0) -> Fusion:
    weights = dict.fromkeys(FUSION_FEATURES, 0.0)
    weights[feature] = sign
    return Fusion(weights)


def test_a_fusion_reorders_statements_in_their_own_places(memory: RaMem) -> None:
    memory.add_turn("user", "I went camping in the Alps with Jo.", at=datetime(2024, 8, 17, 10))
    memory.add_turn(
        "user", "Camping gear for camping: a tent and a stove.", at=datetime(2024, 8, 20, 10)
    )
    memory.add_turn("user", "I baked sourdough bread today.", at=datetime(2024, 9, 1, 10))
    memory.add_exchange(
        "What did I take camping?", "You took a tent and a stove.", at=datetime(2024, 12, 1, 10)
    )
    query = "What did you tell me about camping?"  # about the dialogue: replies keep places

    def listed(fusion: Fusion | None) -> list[tuple[str, Kind, float]]:
        # no move after their sources: the places are the ranking's own
        config = replace(RetrievalConfig(), fusion=fusion, context_ranking=False, derived_last=None)
        found = RaMem(memory.store, config=config, counter=WordCounter()).recall(query, k=5)
        return [(e.unit.id, e.unit.context.kind, e.score) for e in found]

    fixed = listed(None)
    scores = [x[2] for x in fixed if x[1] is Kind.STATEMENT]
    assert len(set(scores)) == len(scores) == 3  # distinct places, so an order shows
    for fusion in (_one("place", -1.0), _one("lexical_raw"), _one("length", -1.0)):
        learned = listed(fusion)
        # questions and replies keep their places; statements take the statements' places
        # and scores, in the fusion's order
        assert [(i, x[0]) for i, x in enumerate(learned) if x[1] is not Kind.STATEMENT] == [
            (i, x[0]) for i, x in enumerate(fixed) if x[1] is not Kind.STATEMENT
        ]
        assert [x[2] for x in learned if x[1] is Kind.STATEMENT] == [
            x[2] for x in fixed if x[1] is Kind.STATEMENT
        ]
    statements = [x[0] for x in fixed if x[1] is Kind.STATEMENT]
    reversed_ = [x[0] for x in listed(_one("place", -1.0)) if x[1] is Kind.STATEMENT]
    assert reversed_ == statements[::-1]


def test_a_fusion_needs_one_weight_per_feature_by_name() -> None:
    with pytest.raises(InvalidInputError, match="map feature names"):
        Fusion((1.0, 2.0))  # type: ignore[arg-type]  # weights by position are refused
    missing = {n: w for n, w in LEARNED_FUSION.weights.items() if n != "length"}
    with pytest.raises(InvalidInputError, match=r"missing \['length'\]"):
        Fusion(missing)
    with pytest.raises(InvalidInputError, match=r"unknown \['recency'\]"):
        Fusion({**LEARNED_FUSION.weights, "recency": 1.0})
    with pytest.raises(InvalidInputError, match="candidates"):
        Fusion(LEARNED_FUSION.weights, candidates=0)


def test_the_learned_fusion_is_the_fitted_weights_by_name() -> None:
    """``LEARNED_FUSION`` is loaded by feature name from the file the audited fit writes
    (``audit_ranking.py --refit-fusion``), and holds the weights and candidate shape of the
    fit's result file."""
    path = ROOT / "benchmarks" / "results" / "audit" / "fusion_fit.json"
    result = json.loads(path.read_text())
    assert dict(LEARNED_FUSION.weights) == result["weights"]
    assert LEARNED_FUSION.candidates == result["candidates"]
    assert load_fusion() == LEARNED_FUSION


def test_a_fusion_file_with_a_missing_feature_is_refused(tmp_path: Path) -> None:
    data = {"weights": {"dense": 1.0}, "candidates": 50}
    with pytest.raises(InvalidInputError, match="missing"):
        Fusion.from_dict(data)


def test_features_are_named_columns_one_value_per_candidate(memory: RaMem) -> None:
    _baking(memory)
    snap = memory.snapshots.get(memory.namespace)
    query = "How many eggs did Alice use in her grandmother's lemon cake recipe?"
    rows, features = memory.retriever.fusion_candidates(snap, memory.frame(query), LEARNED_FUSION)
    assert list(features) == list(FUSION_FEATURES)
    assert all(len(column) == len(rows) for column in features.values())
    # a product column is its parts' product, by name
    assert features["lexical_long"] == pytest.approx(features["lexical"] * features["length"])


def test_the_listwise_fit_learns_the_feature_that_marks_the_evidence() -> None:
    """fit_listwise, the fit of the shipped fusion and of the audit's per-fold refits: when
    one feature marks the evidence, it gains weight and puts the evidence first; questions
    without evidence are left out."""
    import numpy as np

    from ramem_core.retrieval.fusion import fit_listwise

    rng = np.random.default_rng(0)
    marker = FUSION_FEATURES.index("cosine")
    features, evidence = [], []
    for _ in range(40):
        x = rng.standard_normal((20, len(FUSION_FEATURES)))
        e = np.zeros(20, dtype=bool)
        e[rng.integers(20)] = True
        x[e, marker] += 4.0
        features.append(x)
        evidence.append(e)
    features.append(rng.standard_normal((5, len(FUSION_FEATURES))))
    evidence.append(np.zeros(5, dtype=bool))  # no evidence: not fitted on
    w = fit_listwise(features, evidence, ["a", "b"] * 20 + ["a"], l2=0.01)
    assert w[marker] == max(w)
    first = [int(np.argmax(x @ w)) for x in features[:40]]
    assert sum(bool(e[i]) for e, i in zip(evidence, first, strict=False)) >= 36
