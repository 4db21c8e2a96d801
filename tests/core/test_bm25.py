"""The generic BM25: textbook scores, appends, removals, evolved copies, the tokenizer."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

from ramem_core.index.bm25 import LexicalIndex
from ramem_core.index.text import STOP_WORDS, Tokenizer, term_counts


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


def test_the_stop_words_are_bm25s_english_ones() -> None:
    from bm25s.stopwords import STOPWORDS_EN

    assert frozenset(STOPWORDS_EN) == STOP_WORDS == Tokenizer().stop_words


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


def test_an_index_of_columns_is_the_index_of_its_documents() -> None:
    """``of_columns`` (the form a snapshot file holds) indexes what ``extend`` indexes:
    the same documents in order, lengths, scores, and later removals and appends."""
    docs = [*DOCS, {"tea": 0.3, "pottery": 0.7}, {"river": 0.1}]
    terms = list(dict.fromkeys(t for d in docs for t in d))
    at = {t: i for i, t in enumerate(terms)}
    offsets = np.cumsum([0, *(len(d) for d in docs)])
    ids = np.array([at[t] for d in docs for t in d], dtype=np.int64)
    tfs = np.array([tf for d in docs for tf in d.values()], dtype=np.float64)
    built = LexicalIndex()
    built.extend(docs)
    columns = LexicalIndex.of_columns(terms, offsets, ids, tfs)
    for index in (built, columns):
        index.validate()
    assert [list((columns.document(i) or {}).items()) for i in range(len(docs))] == [
        list(d.items()) for d in docs
    ]
    every = np.arange(len(docs))
    assert columns.lengths(every).tolist() == built.lengths(every).tolist()
    query = ["pottery", "class", "river", "bowl", "tea"]
    assert columns.scores(query).tolist() == built.scores(query).tolist()
    # written to a snapshot file and read back: as made (it hands back its own columns), and
    # once changed (its documents decoded and written anew)
    again = pickle.loads(pickle.dumps(columns))
    _same(again, columns, query)
    changed = [index.evolve([1], [{"tea": 2.0, "kiln": 1.0}])[0] for index in (built, columns)]
    asked = [*query, "kiln"]
    assert changed[1].scores(asked).tolist() == changed[0].scores(asked).tolist()
    _same(pickle.loads(pickle.dumps(changed[1])), changed[1], asked)


def _same(one: LexicalIndex, other: LexicalIndex, query: list[str]) -> None:
    every = np.arange(other.size)
    assert one.size == other.size
    assert one.live == other.live
    assert one.scores(query).tolist() == other.scores(query).tolist()
    assert [one.document(i) for i in range(other.size)] == [
        other.document(i) for i in range(other.size)
    ]
    assert one.lengths(every).tolist() == other.lengths(every).tolist()


def test_the_shared_stem_cache_stays_bounded_while_one_tokenizer_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Queries stem new words on a long-lived tokenizer: the bound holds there too."""
    from ramem_core.index import text as bm25

    monkeypatch.setattr(bm25, "_STEMS", {})
    monkeypatch.setattr(bm25, "_STEMS_LIMIT", 10)
    tokenize = Tokenizer()
    for n in range(50):
        assert tokenize(f"painting{n} gardens") == [f"painting{n}", "garden"]
        assert len(bm25._STEMS) <= 10


def _fresh(documents: list[dict[str, float]]) -> LexicalIndex:
    index = LexicalIndex()
    for counts in documents:
        index.add(counts)
    return index
