"""Does a later statement replace an earlier one (ramem_core.replacement)? The model's file,
its owner gate, and its two thresholds: a label is told only above the label threshold, a
question about now is reordered above the order threshold, and another person's statement
never replaces the speaker's."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ramem_core import RaMem, RetrievalConfig
from ramem_core import replacement as replacement_module
from ramem_core.errors import ModelUnavailableError
from ramem_core.reading import Reading
from ramem_core.replacement import (
    FEATURES,
    LEARNED_REPLACEMENT,
    Replacement,
    combine,
    load_replacement,
    same_owner,
    statements,
)
from ramem_core.states import state_key
from ramem_core.store.chroma import ChromaStore
from ramem_core.testing import SAME_KIND, FakePairReader, WordCounter, replacement_of
from ramem_core.types import EpisodicContext, Granularity, MemoryUnit, TimeSpan

JAN, JUNE, JULY = datetime(2024, 1, 10, 9), datetime(2024, 6, 2, 9), datetime(2024, 7, 1)


def _unit(text: str, owner: str = "", at: datetime = JAN) -> MemoryUnit:
    span = TimeSpan(at, at, Granularity.INSTANT)
    context = EpisodicContext("s", "c", span, speaker="user", reading=Reading(owner=owner))
    return MemoryUnit(text, f"user: {text}", context)


def _record(**change: Any) -> dict[str, Any]:
    """A model file's contents: zero weights, thresholds 0.9 / 0.5 / 0.2, then ``change``."""
    return {
        "features": list(FEATURES),
        "weights": [0.0] * len(FEATURES),
        "bias": 0.0,
        "label_threshold": 0.9,
        "order_threshold": 0.5,
        "doubt_threshold": 0.2,
        **change,
    }


def test_the_shipped_model_loads_by_name_with_its_features_and_thresholds() -> None:
    model = load_replacement()
    assert model == LEARNED_REPLACEMENT
    assert len(model.weights) == len(FEATURES)
    assert 0 < model.order <= model.label < 1
    path = Path(__file__).parents[2] / "ramem_core" / "_data" / "replacement.json"
    record = json.loads(path.read_text(encoding="utf-8"))
    assert record["fitted_by"] == "python benchmarks/fit_replacement.py"


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"features": ["cosine"]}, "features"),
        ({"label_threshold": 0.2, "order_threshold": 0.5}, "thresholds"),
        ({"label_threshold": 1.0}, "thresholds"),
        ({"doubt_threshold": 0.6}, "thresholds"),
    ],
)
def test_a_model_file_of_other_features_or_thresholds_is_refused(
    change: dict[str, Any], error: str
) -> None:
    data = _record(**change)
    with pytest.raises(ValueError, match=error):
        Replacement.from_dict(data)


def test_somebody_of_the_speakers_circle_never_replaces_the_speaker() -> None:
    units = [
        _unit("I work at Acme."),
        _unit("My husband just started at Initech.", owner="my husband"),
        _unit("My sister lives in Leeds.", owner="my sister"),
        _unit("She moved to York.", owner="she"),
        _unit("Carl retired, so I report to Bex now.", owner="carl"),
        _unit("I moved to York.", owner=""),
    ]
    vectors = np.eye(len(units), 8, dtype=np.float32)
    s = statements(units, vectors, np.zeros(len(units), dtype=np.int64))
    pairs = [(0, 1), (2, 3), (0, 4), (2, 5), (0, 5)]
    gate = same_owner(s, np.array([a for a, _ in pairs]), np.array([b for _, b in pairs]))
    # the husband's job is his; "she" may be the sister; a manager's news may be the speaker's;
    # the speaker's move is not the sister's; the speaker's own statements are one owner's
    assert gate.tolist() == [False, True, True, False, True]
    assert s.owner[1] == state_key("my husband")


def test_a_probability_at_the_label_threshold_is_told_one_below_it_only_orders(
    store: ChromaStore,
) -> None:
    """One model whose probability for the pair is 0.73: told above a label threshold of
    0.7, not told but still read first for "now" with a label threshold of 0.8."""
    model = replacement_of({"kind_shared": 6.0}, -5.0)  # sigmoid(1) = 0.731 for a shared kind
    found = {}
    for label in (0.7, 0.8):
        cfg = RetrievalConfig(state_kind_vectors=None, replacement=replace(model, label=label))
        memory = RaMem(store, counter=WordCounter(), config=cfg, namespace=f"t{label}")
        lisbon = memory.add_turn("user", "I live in Lisbon, near the river.", at=JAN)
        memory.add_turn("user", "I baked sourdough bread today.", at=datetime(2024, 3, 1, 9))
        porto = memory.add_turn("user", "I moved to Porto last week.", at=JUNE)
        evidence = list(memory.recall("Where do I live now?", k=3, at=JULY))
        order = [e.unit.id for e in evidence]
        assert order.index(porto.id) < order.index(lisbon.id)  # read first either way
        found[label] = next(e for e in evidence if e.unit.id == lisbon.id).superseded
    assert found[0.7] is not None
    assert found[0.8] is None


def test_another_persons_change_is_neither_told_nor_read_first(store: ChromaStore) -> None:
    cfg = RetrievalConfig(state_kind_vectors=None, replacement=SAME_KIND)
    memory = RaMem(store, counter=WordCounter(), config=cfg)
    acme = memory.add_turn("user", "I work at Acme as an accountant.", at=JAN)
    memory.add_turn("user", "My husband just started a new job at Initech.", at=JUNE)
    evidence = list(memory.recall("Where do I work now?", k=3, at=JULY))
    assert evidence[0].unit.id == acme.id
    assert all(e.superseded is None for e in evidence)


def test_the_owner_gate_holds_whatever_the_model_weighs(store: ChromaStore) -> None:
    """A model that reads kinds alone (no owner feature): the gate still keeps the husband's
    new job from replacing the user's."""
    blind = replacement_of({"kind_shared": 10.0}, -5.0)
    cfg = RetrievalConfig(state_kind_vectors=None, replacement=blind)
    memory = RaMem(store, counter=WordCounter(), config=cfg)
    acme = memory.add_turn("user", "I work at Acme as an accountant.", at=JAN)
    memory.add_turn("user", "My husband just started a new job at Initech.", at=JUNE)
    evidence = list(memory.recall("Where do I work now?", k=3, at=JULY))
    assert next(e for e in evidence if e.unit.id == acme.id).superseded is None
    mine = memory.add_turn("user", "I just started a new job at Initech.", at=JULY)
    evidence = list(memory.recall("Where do I work now?", k=3, at=datetime(2024, 7, 2)))
    old = next(e for e in evidence if e.unit.id == acme.id).superseded
    assert old is not None
    assert old.by == mine.id  # the user's own change does


def test_a_possibility_replaces_nothing_a_fact_does(store: ChromaStore) -> None:
    cfg = RetrievalConfig(state_kind_vectors=None, replacement=SAME_KIND)
    memory = RaMem(store, counter=WordCounter(), config=cfg)
    acme = memory.add_turn("user", "I work at Acme as an accountant.", at=JAN)
    memory.add_turn("user", "I might take a job at Initech if they call back.", at=JUNE)
    evidence = list(memory.recall("Where do I work now?", k=3, at=JULY))
    assert next(e for e in evidence if e.unit.id == acme.id).superseded is None
    globex = memory.add_turn("user", "I took a job at Globex last month.", at=JULY)
    evidence = list(memory.recall("Where do I work now?", k=3, at=datetime(2024, 7, 2)))
    old = next(e for e in evidence if e.unit.id == acme.id)
    assert old.superseded is not None
    assert old.superseded.by == globex.id


def test_a_later_statement_that_may_have_replaced_a_state_stops_its_held_through(
    store: ChromaStore,
) -> None:
    """p = 0.27 for the pair: above the doubt threshold (0.2), below the order one (0.5): the
    past question's line no longer says Lisbon held through June; "now" is not reordered."""
    model = replacement_of({"kind_shared": 4.0}, -5.0, doubt=0.2)  # sigmoid(-1) = 0.269
    cfg = RetrievalConfig(state_kind_vectors=None, replacement=model)
    memory = RaMem(store, counter=WordCounter(), config=cfg)
    lisbon = memory.add_turn("user", "I live in Lisbon, near the river.", at=JAN)
    memory.add_turn("user", "I moved to Porto.", at=datetime(2024, 6, 10, 9))
    then = list(memory.recall("Where did I live in June?", k=3, at=datetime(2024, 8, 1)))
    line = " ".join(next(e for e in then if e.unit.id == lisbon.id).satisfied)
    assert "held through" not in line
    assert "if that later statement changed it then" in line
    undoubted = replace(model, doubt=0.3, order=0.5)
    memory = RaMem(store, counter=WordCounter(), config=replace(cfg, replacement=undoubted))
    then = list(memory.recall("Where did I live in June?", k=3, at=datetime(2024, 8, 1)))
    line = " ".join(next(e for e in then if e.unit.id == lisbon.id).satisfied)
    assert "no later change of it found, so held through 'in June'" in line


@pytest.mark.slow
def test_the_lasting_reader_tells_a_one_off_event_from_a_lasting_state() -> None:
    from ramem_core.embedding import MiniLMEmbedder
    from ramem_core.retrieval.kinds import LEARNED_LASTING

    texts = [
        "user: I live in Lisbon, in a small flat near the river.",
        "user: I work at Acme as an accountant.",
        "user: Spent Saturday at the lake with my uncle, we grilled fish.",
        "user: Had the best ramen of my life at Ichiran last night.",
    ]
    vectors = MiniLMEmbedder().embed(texts)
    lasting = LEARNED_LASTING.lasting(vectors, np.zeros(len(texts), dtype=np.int64))
    assert lasting.tolist() == [True, True, False, False]


@pytest.mark.slow
def test_only_what_the_lasting_reader_reads_as_lasting_is_found_held() -> None:
    """Lisbon, said in January, is found held through June only when the reader reads it as
    lasting (the shipped reader does; one that reads nothing as lasting finds nothing held)."""
    from ramem_core.retrieval.kinds import Lasting

    never = Lasting(np.zeros(388), -50.0, 0.5)
    claims = {}
    for name, cfg in (("never", RetrievalConfig(lasting=never)), ("shipped", RetrievalConfig())):
        with RaMem.ephemeral(config=cfg) as memory:
            memory.add_turn("user", "I live in Lisbon, in a small flat near the river.", at=JAN)
            found = memory.recall("Where did I live in June?", k=3, at=datetime(2024, 7, 1))
            claims[name] = any("held through" in s for e in found for s in e.satisfied)
    assert claims == {"never": False, "shipped": True}


def test_only_a_fact_of_the_speakers_own_is_told_as_held(store: ChromaStore) -> None:
    """A story of back then, a maybe and a husband's job are statements of a job too, but
    none is the user's job held through April 2024."""
    cfg = RetrievalConfig(state_kind_vectors=None, replacement=SAME_KIND)
    memory = RaMem(store, counter=WordCounter(), config=cfg)
    acme = memory.add_turn("user", "I work at Acme as an accountant.", at=JAN)
    others = [
        memory.add_turn("user", text, at=datetime(2024, 3, day, 9)).id
        for day, text in (
            (2, "Back in 2016 I worked at a bakery in Leeds."),
            (9, "I might work at Globex if they call back."),
            (16, "My husband works at Initech now."),
        )
    ]
    found = list(memory.recall("Where did I work in April 2024?", k=5, at=datetime(2024, 6, 1)))
    held = {e.unit.id for e in found if any("held through" in s for s in e.satisfied)}
    assert acme.id in held
    assert not held & set(others)


def test_the_pair_reader_reads_only_pairs_above_its_floor_and_its_answer_is_joined() -> None:
    """Features give 0.73 to the pairs of one kind, 0.007 to the other: only the first two are
    read, and their probability becomes the mean log-odds of the two (the reader's 0.999
    lifts the change past a label threshold of 0.9, its 0.01 drops the restatement below the
    order threshold of 0.5; the unread pair keeps its own)."""
    reader = FakePairReader(["Initech"])
    base = replacement_of({"kind_shared": 6.0}, -5.0, label=0.9, order=0.5, doubt=0.2)
    model = replace(base, reader=reader, floor=0.1, reader_digest="x")
    units = [_unit("I work at Acme."), _unit("Two weeks into the gig at Initech.", at=JUNE)]
    units.append(_unit("Baked bread, then to Initech for lunch.", at=JULY))
    units.append(_unit("Still at Acme, year three.", at=JULY))
    kinds = np.array([1, 1, 0, 1], dtype=np.int64)
    s = statements(units, np.eye(4, 8, dtype=np.float32), kinds)
    p = model.probabilities(s, np.array([0, 0, 0]), np.array([1, 2, 3]))
    assert reader.asked == [
        ("I work at Acme.", "Two weeks into the gig at Initech."),
        ("I work at Acme.", "Still at Acme, year three."),
    ]
    assert p[0] == pytest.approx(combine(np.array([0.7311]), np.array([0.999]))[0], abs=1e-3)
    assert p[0] >= 0.9 > base.probabilities(s, np.array([0]), np.array([1]))[0]
    assert p[1] == pytest.approx(1 / (1 + np.exp(5)))
    assert p[2] < 0.5 <= base.probabilities(s, np.array([0]), np.array([3]))[0]
    assert model.without_reader() == base


def test_a_change_the_reader_reads_is_told_and_a_restatement_it_reads_is_not_read_first(
    store: ChromaStore,
) -> None:
    """The features alone give both later statements 0.73 (one kind of state): read first
    for "now", never told. The reader tells the change in other words from the restatement."""
    reader = FakePairReader(["Initech"])
    base = replacement_of({"kind_shared": 6.0}, -5.0, label=0.9, order=0.5, doubt=0.2)
    model = replace(base, reader=reader, floor=0.1, reader_digest="x")
    cfg = RetrievalConfig(state_kind_vectors=None, replacement=model)
    memory = RaMem(store, counter=WordCounter(), config=cfg)
    acme = memory.add_turn("user", "I work at Acme as an accountant.", at=JAN)
    still = memory.add_turn("user", "I still work at Acme, year three.", at=JUNE)
    evidence = list(memory.recall("Where do I work now?", k=3, at=JULY))
    assert all(e.superseded is None for e in evidence)
    assert any(e.unit.id == still.id for e in evidence)
    gig = memory.add_turn("user", "I work at Initech these days, two weeks in.", at=JULY)
    evidence = list(memory.recall("Where do I work now?", k=3, at=datetime(2024, 7, 2)))
    assert evidence[0].unit.id == gig.id
    old = next(e for e in evidence if e.unit.id == acme.id).superseded
    assert old is not None
    assert old.by == gig.id


ALONE = {"label": 0.95, "order": 0.4, "doubt": 0.1}


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"floor": 0.9}, "floor"),
        ({"floor": 0.0}, "floor"),
        ({"features_alone": {**ALONE, "order": 0.99}}, "own thresholds"),
    ],
)
def test_a_reader_floor_or_thresholds_out_of_order_are_refused(
    change: dict[str, Any], error: str
) -> None:
    reader = {"file": "x.onnx", "sha256": "0" * 64, "floor": 0.1, "max_tokens": 128}
    data = _record(reader={**reader, "features_alone": ALONE, **change})
    with pytest.raises(ValueError, match=error):
        Replacement.from_dict(data)
    data["reader"] = {**reader, "features_alone": ALONE}
    alone = Replacement.from_dict(data).without_reader()  # the features' own thresholds
    assert (alone.reader, alone.label, alone.order, alone.doubt) == (None, 0.95, 0.4, 0.1)


def test_a_reader_file_of_another_digest_is_refused_before_it_is_run() -> None:
    """The reader's file is checked against the digest its fit wrote, on first use."""
    record = json.loads(
        (Path(__file__).parents[2] / "ramem_core" / "_data" / "replacement.json").read_text()
    )
    record["reader"] = {**record["reader"], "sha256": "0" * 64}
    model = Replacement.from_dict(record)
    assert model != LEARNED_REPLACEMENT
    assert model.reader is not None
    with pytest.raises(ModelUnavailableError, match="SHA-256"):
        model.reader.probabilities([("I work at Acme.", "I work at Globex now.")])


@pytest.mark.slow
def test_the_shipped_reader_is_the_fitted_one_reading_earlier_then_later() -> None:
    """The shipped pair reader (the real int8 file) on 200 of the corpus pairs it was fitted
    on: it ranks replacements above look-alikes (AUC 0.95; the same pairs fed later first give
    0.85, a file of other weights less)."""
    from sklearn.metrics import roc_auc_score

    corpus = Path(__file__).parents[2] / "benchmarks" / "data" / "replacement_pairs"
    rows = [
        json.loads(line)
        for path in sorted(corpus.glob("h*.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    sample = rows[::27][:200]
    reader = LEARNED_REPLACEMENT.reader
    assert reader is not None
    p = reader.probabilities([(r["earlier"]["text"], r["later"]["text"]) for r in sample])
    assert ((p >= 0) & (p <= 1)).all()
    assert roc_auc_score([r["replaces"] for r in sample], p) >= 0.9


def test_past_the_reading_bound_a_pair_may_only_doubt(monkeypatch: pytest.MonkeyPatch) -> None:
    """With one pair read per question, the likelier pair is read; the other, above the
    floor, is held to the doubt threshold: no label, no order on what nobody read."""
    monkeypatch.setattr(replacement_module, "READ_PAIRS", 1)
    reader = FakePairReader(["Initech", "Globex"])
    base = replacement_of({"kind_shared": 6.0, "cosine": 1.0}, -5.0, label=0.9, order=0.5)
    model = replace(base, reader=reader, floor=0.1, reader_digest="x")
    units = [_unit("I work at Acme."), _unit("Two weeks into the gig at Initech.", at=JUNE)]
    units.append(_unit("Globex badge works now.", at=JULY))
    vectors = np.array([[1, 0], [1, 0], [0, 1]], dtype=np.float32)
    s = statements(units, vectors, np.array([1, 1, 1], dtype=np.int64))
    p = model.probabilities(s, np.array([0, 0]), np.array([1, 2]))
    assert reader.asked == [("I work at Acme.", "Two weeks into the gig at Initech.")]
    assert p[0] >= 0.9
    assert p[1] == pytest.approx(0.2)  # 0.731 from its features, held to the doubt


def test_the_reader_reads_only_for_a_question_about_a_state_at_a_time(
    store: ChromaStore,
) -> None:
    """A question about now, about a time it names or about the earlier value has the pair
    reader read; any other question weighs the pairs by the features alone (the reader's
    cost is paid only where an order, a label read for "originally" or a "held" line rests
    on it)."""
    reader = FakePairReader(["Initech"])
    base = replacement_of({"kind_shared": 6.0}, -5.0, label=0.9, order=0.5, doubt=0.2)
    model = replace(base, reader=reader, floor=0.1, reader_digest="x")
    cfg = RetrievalConfig(state_kind_vectors=None, replacement=model)
    memory = RaMem(store, counter=WordCounter(), config=cfg)
    memory.add_turn("user", "I work at Acme as an accountant.", at=JAN)
    memory.add_turn("user", "I work at Initech these days, two weeks in.", at=JUNE)
    memory.recall("Tell me about my work at Acme and Initech.", k=3, at=JULY)
    assert reader.asked == []
    memory.recall("Where do I work now?", k=3, at=JULY)
    assert len(reader.asked) == 1
    memory.recall("Where did I work in March 2024?", k=3, at=JULY)
    assert len(reader.asked) == 2
    reader.asked.clear()
    memory.recall("Where did I work originally?", k=3, at=JULY)  # the earlier value
    assert len(reader.asked) == 1


def test_a_story_of_a_time_over_before_the_earlier_was_said_replaces_nothing() -> None:
    """ "Back in 2016 I worked at a bakery", said after "I work at Acme", tells of a time over
    before Acme was said: the pair is never weighed; a correction whose time lies before
    (no story) and a story of a time after the earlier statement keep theirs."""
    from ramem_core.reading import Mood
    from ramem_core.replacement import may_replace, told_before

    def said(text: str, at: datetime, event: TimeSpan | None, mood: Mood) -> MemoryUnit:
        span = TimeSpan(at, at, Granularity.INSTANT)
        context = EpisodicContext(
            "s", "c", span, event_time=event, speaker="user", reading=Reading(mood=mood)
        )
        return MemoryUnit(text, f"user: {text}", context)

    year_2016 = TimeSpan(datetime(2016, 1, 1), datetime(2016, 12, 31, 23, 59), Granularity.YEAR)
    year_1965 = TimeSpan(datetime(1965, 1, 1), datetime(1965, 12, 31, 23, 59), Granularity.YEAR)
    may = TimeSpan(datetime(2024, 5, 1), datetime(2024, 5, 31, 23, 59), Granularity.MONTH)
    units = [
        said("I work at Acme.", JAN, None, Mood(0)),
        said("Back in 2016 I worked at a bakery.", JUNE, year_2016, Mood.PAST_STORY),
        said("Actually I left Acme in 2016.", JUNE, year_2016, Mood(0)),
        said("Back in May I started at Globex.", JUNE, may, Mood.PAST_STORY),
        said("Back in 1965 I worked at a mine.", JUNE, year_1965, Mood.PAST_STORY),  # before 1970
    ]
    s = statements(units, np.eye(5, 8, dtype=np.float32), np.zeros(5, dtype=np.int64))
    earlier, later = np.zeros(4, dtype=np.int64), np.array([1, 2, 3, 4])
    assert told_before(s, earlier, later).tolist() == [True, False, False, True]
    assert may_replace(s, earlier, later).tolist() == [False, True, True, False]


def test_a_story_of_back_then_does_not_stop_a_state_held_since(store: ChromaStore) -> None:
    """A model that finds every pair of one kind likely, whatever its mood, doubts Acme by
    any later job statement, but "Back in 2016 I worked at a bakery" (said in February)
    tells of 2016: Acme is still found held through March 2024."""
    model = replacement_of({"kind_shared": 10.0}, -5.0)
    cfg = RetrievalConfig(state_kind_vectors=None, replacement=model)
    memory = RaMem(store, counter=WordCounter(), config=cfg)
    acme = memory.add_turn("user", "I work at Acme as an accountant.", at=JAN)
    memory.add_turn(
        "user", "Back in 2016 I worked at a bakery in Leeds.", at=datetime(2024, 2, 15, 9)
    )
    found = list(memory.recall("Where did I work in March 2024?", k=5, at=datetime(2024, 6, 1)))
    line = " ".join(next(e for e in found if e.unit.id == acme.id).satisfied)
    assert "no later change of it found, so held through 'March 2024'" in line
