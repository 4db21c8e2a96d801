"""A learned fusion: the content ranking's best statements re-ranked by a linear score over
the signals that ranking already computed, each a named column.

The weights are data, keyed by feature name, written by ``benchmarks/audit_ranking.py
--refit-fusion`` to ``ramem_core/_data/fusion.json`` and loaded by name (:func:`load_fusion`):
a name missing from the file, or one the code does not compute, is an error, never a silent
zero.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from importlib import resources
from typing import Any

import numpy as np
import numpy.typing as npt

from ramem_core.errors import InvalidInputError
from ramem_core.index.bm25 import Scores
from ramem_core.index.snapshot import Mask, Snapshot
from ramem_core.retrieval.ranking import Ranking

Column = npt.NDArray[np.float64]

FUSION_FEATURES = (
    "dense",
    "lexical",
    "speaker",
    "cosine",
    "dense_raw",
    "lexical_raw",
    "length",
    "dense_long",
    "lexical_long",
    "timed",
    "place",
)
"""What a learned fusion reads of each candidate, by name (:func:`fusion_features`)."""

FUSION_FILE = "fusion.json"
"""The file under ``ramem_core/_data/`` that ``audit_ranking.py --refit-fusion`` writes."""


@dataclass(frozen=True, slots=True)
class Fusion:
    """A learned re-ranking of the content ranking's best statements: each one's score is the
    sum of ``weights[name] * feature[name]``; they take their places again in that order.

    Attributes:
        weights: one per feature of :data:`FUSION_FEATURES`, by name (a missing or an unknown
            name raises :class:`~ramem_core.errors.InvalidInputError`).
        candidates: how many of the content ranking's best statements are re-ranked.
    """

    weights: Mapping[str, float]
    candidates: int = 50

    def __post_init__(self) -> None:
        if not isinstance(self.weights, Mapping):
            msg = f"a fusion's weights map feature names to weights, got {self.weights!r}"
            raise InvalidInputError(msg)
        missing = [name for name in FUSION_FEATURES if name not in self.weights]
        extra = sorted(set(self.weights) - set(FUSION_FEATURES))
        if missing or extra:
            msg = f"a fusion needs a weight for every feature: missing {missing}, unknown {extra}"
            raise InvalidInputError(msg)
        object.__setattr__(self, "weights", {n: float(self.weights[n]) for n in FUSION_FEATURES})
        if self.candidates < 1:
            msg = f"a fusion needs candidates >= 1: {self}"
            raise InvalidInputError(msg)

    def __hash__(self) -> int:
        return hash((tuple(self.weights.items()), self.candidates))

    @property
    def vector(self) -> Column:
        """The weights in :data:`FUSION_FEATURES` order (the columns of :func:`matrix`)."""
        return np.asarray([self.weights[name] for name in FUSION_FEATURES], dtype=np.float64)

    def rows(self, ranking: Ranking, statements: Mask) -> list[int]:
        """The rows it re-ranks, in the content ranking's order."""
        return ranking.top(self.candidates, among=statements)

    def scores(self, features: Mapping[str, Column]) -> Column:
        """Each candidate's learned score."""
        return matrix(features) @ self.vector

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Fusion:
        """A fusion from the fields ``audit_ranking.py --refit-fusion`` writes."""
        return cls(dict(data["weights"]), candidates=int(data.get("candidates", 50)))


def load_fusion(name: str = FUSION_FILE) -> Fusion:
    """The fusion stored in ``ramem_core/_data/<name>`` (written by the audited fit)."""
    text = (
        resources.files("ramem_core").joinpath("_data").joinpath(name).read_text(encoding="utf-8")
    )
    return Fusion.from_dict(json.loads(text))


LEARNED_FUSION = load_fusion()
"""Fitted on every dev question by ``benchmarks/audit_ranking.py --refit-fusion``, the procedure
the audit judges by cross-validation."""


def matrix(features: Mapping[str, Column]) -> npt.NDArray[np.float64]:
    """The named columns stacked in :data:`FUSION_FEATURES` order, one row per candidate."""
    columns = [features[name] for name in FUSION_FEATURES]
    n = len(columns[0])
    return np.stack(columns, axis=1) if n else np.zeros((0, len(columns)))


def fusion_features(
    ranking: Ranking,
    rows: Sequence[int],
    snap: Snapshot,
    cosines: Scores,
    asks_when: bool,
    rrf_k: int,
) -> dict[str, Column]:
    """The :data:`FUSION_FEATURES` of the memories at ``rows`` (the content ranking's best,
    best first), by name: every signal's reciprocal rank scaled to (0, 1], the raw cosines and
    BM25 (scaled by the candidates' best), the own words' count (log, scaled) and its products
    with the rank signals (long, self-contained memories may trust their own content more),
    whether the memory says when for a question asking when, and its place."""
    at = np.asarray(rows, dtype=np.int64)
    n, scale = len(at), float(rrf_k + 1)
    zero = np.zeros(n)

    def part(name: str, factor: float = scale) -> Column:
        values = ranking.parts.get(name)
        return zero if values is None else np.asarray(values[at], dtype=np.float64) * factor

    lexical = zero if ranking.lexical is None else np.asarray(ranking.lexical[at], np.float64)
    length = np.log1p(snap.index.own_lengths(at)) / np.log1p(100.0)
    out = {
        "dense": part("dense"),
        "lexical": part("lexical"),
        "speaker": part("speaker", 1.0),
        "cosine": np.asarray(cosines[at], dtype=np.float64),
        "dense_raw": (
            zero if ranking.dense is None else np.asarray(ranking.dense[at], np.float64) / 2
        ),
        "lexical_raw": lexical / lexical.max() if n and lexical.max() > 0 else zero,
        "length": np.asarray(length, dtype=np.float64),
    }
    for name in ("dense", "lexical"):
        out[f"{name}_long"] = out[name] * out["length"]
    out["timed"] = np.asarray(snap.timed[at], dtype=np.float64) if asks_when else zero
    out["place"] = scale / (scale + np.arange(n))
    return out


def fit_listwise(
    features: Sequence[npt.NDArray[np.float64]],
    evidence: Sequence[npt.NDArray[np.bool_]],
    groups: Sequence[str],
    l2: float,
    loss: str = "any",
    steps: int = 600,
) -> npt.NDArray[np.float64]:
    """Weights of a learned fusion (in :data:`FUSION_FEATURES` order): a listwise softmax over
    each question's candidates (``features``: one row per candidate; ``evidence``: which are
    evidence), by Adam from the fixed order (the weight of ``place`` alone), each of
    ``groups`` (a question's benchmark) weighted equally; questions without evidence are left
    out. ``loss``: "any" maximises the softmax mass of the evidence as a whole (one evidence
    memory on top is enough); "all" the mass of each evidence memory alike (ListNet with a
    uniform target over the evidence)."""
    used = [i for i, e in enumerate(evidence) if e.any()]
    width = max(len(evidence[i]) for i in used)
    x = np.zeros((len(used), width, len(FUSION_FEATURES)))
    y = np.zeros((len(used), width))
    mask = np.zeros((len(used), width), dtype=bool)
    for q, i in enumerate(used):
        n = len(evidence[i])
        x[q, :n], y[q, :n], mask[q, :n] = features[i], evidence[i], True
    counts: dict[str, int] = {}
    for i in used:
        counts[groups[i]] = counts.get(groups[i], 0) + 1
    share = np.array([1.0 / (len(counts) * counts[groups[i]]) for i in used])
    w = np.zeros(len(FUSION_FEATURES))
    w[FUSION_FEATURES.index("place")] = 1.0
    m, v = np.zeros_like(w), np.zeros_like(w)
    uniform = y / y.sum(axis=1, keepdims=True)
    for t in range(1, steps + 1):
        s = np.where(mask, x @ w, -np.inf)
        p = np.exp(s - s.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        if loss == "any":
            target = p * y
            target /= target.sum(axis=1, keepdims=True)
        else:
            target = uniform
        grad = l2 * w + np.einsum("qcd,qc->d", x, share[:, None] * (p - target))
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad * grad
        w = w - 0.05 * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
    return w


def reranked(ranking: Ranking, rows: Sequence[int], learned: Column) -> Ranking:
    """``ranking`` with the memories at ``rows`` reordered by their ``learned`` scores among
    their own fused scores: the places they held are theirs again, best learned first, and
    every other memory (a recorded question or reply, one below the candidates) keeps its
    place and score."""
    if len(rows) < 2:
        return ranking
    at = np.asarray(rows, dtype=np.int64)
    fused = ranking.fused.copy()
    fused[at[np.argsort(-learned, kind="stable")]] = np.sort(fused[at])[::-1]
    return replace(ranking, fused=fused)
