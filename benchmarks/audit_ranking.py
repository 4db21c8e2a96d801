"""The ranking audit: every pass and every fitted constant, judged by cross-validation.

From the repository root::

    python benchmarks/audit_ranking.py

Folds: fold ``i`` is LoCoMo dev conversation ``i`` (leave one conversation out) together with
the ``i``-th fifth of all LongMemEval_S dev questions (dev30 + dev60 + dev120, answerable,
split per question type in file order: position ``% 5``). A question is only ever scored by
a system fitted on the other four folds:

- **the learned fusion** is refitted per fold (:func:`fit_fusion`): its loss and L2 chosen by
  3-fold CV inside the training folds, then its weights fitted on all of them; a variant that
  changes the episodic keys gets a fusion refitted with those keys;
- **each tuned constant** (:data:`GRIDS`) is chosen per fold on the training folds by
  :func:`objective` and scored on the held-out fold.

Per pass (:data:`PASSES`): the paired gain of RaMem with the pass over RaMem without it, per
question on its held-out fold, with paired bootstrap 95% intervals overall and per LoCoMo
category / LongMemEval question type: LoCoMo Recall@10 and D@1 (the share of questions whose
first memory is from a session without evidence; lower is better, so its gain is the fall),
LongMemEval turn@1, turn@10, session@5, and ``latest_first@10`` on the knowledge-update
questions whose evidence lies in sessions of two or more dates (the first evidence turn of the
top 10 is from the latest evidence date). The verdict (:func:`verdict`, the ruling at the head
of ``benchmarks/results/TUNING.md``): a challenger enters where the lower bound of its gain is
above 0 on a metric it exists for (:attr:`Pass.purpose`) and no group's upper bound is below
-0.01 on any metric; a shipped pass leaves only when every upper bound of its purpose is at
most +0.005 or some group's is below -0.01. ``--rejudge`` rewrites the verdicts of the stored
tables without a run. The cost: recall p95 at 10,000 memories with and without the pass
(``--latency``).

Writes ``benchmarks/results/audit/audit.json`` and ``audit.md`` (the table TUNING.md and
benchmarks/results_page.py take their figures from). Rankings per variant are cached under
``results/audit/runs``, keyed by the variant's config, the source of ``ramem_core`` and that of
this script (so an edit of either reruns them).
Skips cleanly without the dev data.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from bench_updates import EARLIER

from ramem_core.embedding import RecentQueries
from ramem_core.evaluation import harness, metrics
from ramem_core.evaluation.stats import paired_bootstrap
from ramem_core.frames import RuleFrameInducer
from ramem_core.index.episodic import CONTENT_KEYS, EpisodicKeys
from ramem_core.index.freshness import Freshness
from ramem_core.index.snapshot import Snapshot
from ramem_core.loaders import (
    locomo_conversation,
    longmemeval_conversation,
    longmemeval_evidence,
    longmemeval_sessions,
)
from ramem_core.retrieval import FUSION_FEATURES, Fusion, RetrievalConfig, Retriever
from ramem_core.retrieval.fusion import fit_listwise, matrix
from ramem_core.temporal import parse_timestamp
from ramem_core.types import Evidence

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
CACHE = ROOT / "results" / "audit"
OUT = ROOT / "benchmarks" / "results" / "audit"
FOLDS = 5
K = 10
LME_FILES = ("dev30", "dev60", "dev120")

# --------------------------------------------------------------------------- the questions


@dataclass
class Question:
    """One dev question: where it is, its fold, its group and what counts as evidence."""

    bench: str  # "locomo" | "lme"
    key: str
    fold: int
    group: str  # LoCoMo category / LongMemEval question type
    namespace: str
    text: str
    at: datetime | None
    gold: frozenset[str]  # evidence turn ids
    sessions: frozenset[str]  # evidence session ids
    latest: frozenset[str] | None = None  # latest-dated evidence sessions (knowledge updates)
    earlier: bool = False  # it asks for the earlier value (bench_updates.EARLIER)


def locomo_questions() -> tuple[list[Question], dict[str, Any]]:
    samples = json.loads((DATA / "locomo_dev.json").read_text(encoding="utf-8"))
    out = []
    for fold, sample in enumerate(samples):
        sid = sample["sample_id"]
        for n, qa in enumerate(sample["qa"]):
            category = int(qa.get("category", 0))
            gold = metrics.parse_evidence(qa.get("evidence", []))
            if category not in metrics.ANSWERABLE or not gold:
                continue
            out.append(
                Question(
                    "locomo",
                    f"{sid}#{n}",
                    fold,
                    metrics.LOCOMO_CATEGORIES[category],
                    harness._namespace(sid),
                    qa["question"],
                    None,
                    frozenset(gold),
                    frozenset(g.split(":")[0] for g in gold),
                )
            )
    return out, {s["sample_id"]: s for s in samples}


def lme_questions() -> tuple[list[Question], dict[str, Any]]:
    out, items = [], {}
    position: dict[str, int] = defaultdict(int)
    for name in LME_FILES:
        for item in json.loads((DATA / f"longmemeval_s_{name}.json").read_text("utf-8")):
            qid, kind = str(item["question_id"]), str(item.get("question_type"))
            gold = longmemeval_evidence(item, qid)
            if qid.endswith("_abs") or not gold:
                continue
            fold = position[kind] % FOLDS
            position[kind] += 1
            dates = {sid: parse_timestamp(str(d)) for sid, d, _ in longmemeval_sessions(item, qid)}
            sessions = {g.rsplit(":", 1)[0] for g in gold}
            latest = None
            days = {dates[s].date() for s in sessions if dates.get(s) is not None}
            if kind == "knowledge-update" and len(days) >= 2:
                last = max(dates[s] for s in sessions if dates.get(s) is not None)
                latest = frozenset(s for s in sessions if dates.get(s) == last)
            items[qid] = item
            out.append(
                Question(
                    "lme",
                    qid,
                    fold,
                    kind,
                    harness._namespace(qid),
                    item["question"],
                    parse_timestamp(str(item.get("question_date", ""))),
                    frozenset(gold),
                    frozenset(sessions),
                    latest,
                    qid in EARLIER,
                )
            )
    return out, items


def score(q: Question, found: Sequence[Evidence]) -> dict[str, float]:
    """The question's measures over the top ``K`` ``found``."""
    sources = [s for e in found[:K] for s in e.unit.source_ids]
    if q.bench == "locomo":
        wrong = float(found[0].unit.context.session_id not in q.sessions) if found else 1.0
        return {"R@10": metrics.evidence_recall(q.gold, sources), "D@1": wrong}
    turns = [s for e in found for s in e.unit.source_ids]
    sessions = metrics.dedupe(e.unit.context.session_id.split("~")[0] for e in found)
    out = {
        "turn@1": metrics.recall_any(turns[:1], q.gold, 1),
        "turn@10": metrics.recall_any(turns, q.gold, K),
        "session@5": metrics.recall_any(sessions, q.sessions, 5),
    }
    if q.latest is not None:
        first = next((s.rsplit(":", 1)[0] for s in sources if s in q.gold), None)
        out["latest_first@10"] = float(first is not None and first in q.latest)
        # item 5 of issue 39: the earlier-value questions keep an earlier statement first
        right = first is not None and (first not in q.latest if q.earlier else first in q.latest)
        out["right_first@10"] = float(right)
    return out


METRICS = ("R@10", "D@1", "turn@1", "turn@10", "session@5", "latest_first@10")
REPORTED = (*METRICS, "right_first@10")
"""RaMem's CV means: the metrics, and ``right_first@10`` (reported, judging no pass): on the
same questions as ``latest_first@10``, the first evidence turn of the top 10 is from the latest
evidence date, or from an earlier one for the four that ask for the earlier value
(:data:`bench_updates.EARLIER`, fixed before any run; one of them asks for the earlier value
and the present one, "how often previously and now", and counts as asking for the earlier).
``latest_first@10`` counts those four as misses when they are answered right: it is at most
27/31 = 0.871 for a ranking that keeps the earlier value first where it is asked for."""
LOWER_IS_BETTER = frozenset({"D@1"})


# --------------------------------------------------------------------------- the data


class Data:
    """The dev questions, ingested once (through the harness's store and embedding cache),
    and their snapshots per set of episodic keys, built once and held."""

    def __init__(self) -> None:
        self.questions: list[Question] = []
        self.benches: dict[str, Any] = {}
        self._snaps: dict[tuple[str, EpisodicKeys], dict[str, Snapshot]] = {}
        options = harness.EvalOptions(systems=("content",), ks=(1, 5, 10))
        locomo, samples = locomo_questions()
        lme, items = lme_questions()
        for bench in ("locomo", "lme"):
            self.benches[bench] = harness._open_bench(CACHE / bench, options, None, None)
        started = time.monotonic()
        for n, sample in enumerate(samples.values(), start=1):
            conversation = locomo_conversation(sample, sample["sample_id"])
            self.benches["locomo"].ingest(harness._namespace(sample["sample_id"]), conversation)
            _progress("ingest LoCoMo", n, len(samples), started)
        for n, (qid, item) in enumerate(items.items(), start=1):
            conversation = harness._user_side(longmemeval_conversation(item, qid))
            self.benches["lme"].ingest(harness._namespace(qid), conversation)
            _progress("ingest LongMemEval", n, len(items), started)
        self.questions = locomo + lme
        self.embedders = {b: RecentQueries(self.benches[b].store.embedder) for b in self.benches}

    def snapshot(self, q: Question, keys: EpisodicKeys) -> Snapshot:
        held = self._snaps.get((q.bench, keys))
        if held is None:
            self._snaps = {k: v for k, v in self._snaps.items() if k[1] == keys}
            held = self._snaps[(q.bench, keys)] = {}
        snap = held.get(q.namespace)
        if snap is None:
            fresh = Freshness(self.benches[q.bench].store, keys, refresh_seconds=1e9)
            snap = held[q.namespace] = fresh.get(q.namespace)
        return snap


def _progress(what: str, done: int, total: int, started: float) -> None:
    if done == total or done % 25 == 0:
        print(f"  {what}: {done}/{total} ({time.monotonic() - started:.0f} s)", flush=True)


# --------------------------------------------------------------------------- the fusion


@dataclass
class Candidates:
    """One question's fusion candidates: features (rows) and which are evidence."""

    bench: str
    fold: int
    features: npt.NDArray[np.float64]
    evidence: npt.NDArray[np.bool_]
    gold: int


def fusion_candidates(data: Data, keys: EpisodicKeys) -> list[Candidates]:
    """The fixed fusion's candidates of every question under ``keys`` (what
    ``benchmarks/fit_fusion.py`` fits on), read with the shipped candidate shape."""
    shipped = RetrievalConfig().fusion
    assert shipped is not None
    shape = Fusion(dict.fromkeys(FUSION_FEATURES, 0.0), shipped.candidates)
    inducer = RuleFrameInducer()
    out = []
    started = time.monotonic()
    for n, q in enumerate(data.questions, start=1):
        snap = data.snapshot(q, keys)
        config = replace(RetrievalConfig(), keys=keys, fusion=None, members=None)
        retriever = Retriever(data.embedders[q.bench], config)
        frame = retriever.frame(retriever.probe(snap, q.text), inducer, at=q.at)
        rows, named = retriever.fusion_candidates(snap, frame, shape)
        evidence = np.array([bool(set(snap.unit(r).source_ids) & q.gold) for r in rows])
        out.append(Candidates(q.bench, q.fold, matrix(named), evidence, len(q.gold)))
        _progress("fusion candidates", n, len(data.questions), started)
    return out


def fit(cands: Sequence[Candidates], l2: float, loss: str) -> Any:
    """The learned fusion's weights fitted on ``cands`` (:func:`~ramem_core.retrieval.fusion.
    fit_listwise`, the fit of ``benchmarks/fit_fusion.py``)."""
    return fit_listwise(
        [c.features for c in cands], [c.evidence for c in cands], [c.bench for c in cands], l2, loss
    )


def _fit_score(cands: Sequence[Candidates], w: Any) -> float:
    """``fit_fusion.py``'s choice: LoCoMo recall@1 and @10, LongMemEval any@1 and @10."""
    got: dict[str, list[float]] = defaultdict(list)
    for c in cands:
        hits = c.evidence[np.argsort(-(c.features @ w), kind="stable")]
        if c.bench == "locomo":
            got["r1"].append(min(1.0, hits[:1].sum() / c.gold))
            got["r10"].append(min(1.0, hits[:10].sum() / c.gold))
        else:
            got["a1"].append(float(hits[:1].any()))
            got["a10"].append(float(hits[:10].any()))
    return float(np.mean([np.mean(v) for v in got.values()]))


L2_GRID = (0.001, 0.01, 0.1)
LOSSES = ("any", "all")


def fit_fusion(cands: Sequence[Candidates], held_out: int) -> tuple[Fusion, dict[str, Any]]:
    """The fusion of fold ``held_out``: loss and L2 chosen by 3-fold CV over the training
    folds' questions (inner folds by position), then weights fitted on all of them."""
    train = [c for c in cands if c.fold != held_out]
    inner = [i % 3 for i in range(len(train))]
    best: tuple[float, float, str] | None = None
    for loss in LOSSES:
        for l2 in L2_GRID:
            scores = []
            for f in range(3):
                w = fit([c for c, i in zip(train, inner, strict=True) if i != f], l2, loss)
                scores.append(
                    _fit_score([c for c, i in zip(train, inner, strict=True) if i == f], w)
                )
            mean = float(np.mean(scores))
            if best is None or mean > best[0]:
                best = (mean, l2, loss)
    assert best is not None
    w = fit(train, best[1], best[2])
    shipped = RetrievalConfig().fusion
    assert shipped is not None
    weights = dict(zip(FUSION_FEATURES, (float(x) for x in w), strict=True))
    fusion = Fusion(weights, shipped.candidates)
    return fusion, {"l2": best[1], "loss": best[2], "inner_cv": round(best[0], 4)}


# --------------------------------------------------------------------------- running variants


def _source_digest() -> str:
    h = hashlib.sha256()
    for path in sorted((ROOT / "ramem_core").rglob("*.py")):
        h.update(path.read_bytes())
    for path in sorted((ROOT / "ramem_core" / "_data").glob("*.json")):
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


DIGEST = _source_digest()
SCORING = hashlib.sha256(Path(__file__).read_bytes() + repr(sorted(EARLIER)).encode()).hexdigest()
"""What a cached run's measures depend on besides the library: this script (the questions,
their folds and how they are scored) and the earlier-value questions it reads."""
Rows = list[dict[str, float]]


def run(data: Data, name: str, configs: Sequence[RetrievalConfig]) -> Rows:
    """Every question's measures under ``configs[its fold]`` (cached by the configs' text, the
    library's source and this script's, :data:`SCORING`)."""
    configs_text = "".join(repr(c) for c in configs)
    tag = hashlib.sha256((DIGEST + SCORING + configs_text).encode()).hexdigest()[:16]
    path = CACHE / "runs" / f"{tag}.json"  # a variant equal to another is run once
    if path.exists():
        cached: Rows = json.loads(path.read_text(encoding="utf-8"))
        return cached
    inducer = RuleFrameInducer()
    retrievers = {
        (b, f): Retriever(data.embedders[b], c.settled())
        for b in data.benches
        for f, c in enumerate(configs)
    }
    rows = []
    started = time.monotonic()
    for n, q in enumerate(data.questions, start=1):
        config = configs[q.fold]
        snap = data.snapshot(q, config.keys)
        found = retrievers[(q.bench, q.fold)].recall(snap, q.text, inducer, K, at=q.at).evidence
        rows.append(score(q, found))
        _progress(name, n, len(data.questions), started)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rows), encoding="utf-8")
    return rows


# --------------------------------------------------------------------------- passes and grids


@dataclass(frozen=True)
class Pass:
    """A pass of the ranking, the config without it, and what it exists for: (metric, group)
    pairs, ``None`` as the group for every question of the metric's benchmark."""

    name: str
    without: Callable[[RetrievalConfig], RetrievalConfig]
    purpose: tuple[tuple[str, str | None], ...]
    keys: bool = False  # it changes the episodic keys: the fusion is refitted without it
    elsewhere: str = ""  # what it earned on a benchmark outside the audit, with its command
    joint: tuple[str, ...] = ()  # passes of one purpose judged together (all removed at once)


def _keys(**changes: Any) -> Callable[[RetrievalConfig], RetrievalConfig]:
    return lambda c: replace(c, keys=replace(c.keys, **changes))


ALL_R10 = (("R@10", None), ("turn@1", None), ("turn@10", None))
TEMPORAL = (("R@10", "temporal"), ("D@1", None), ("turn@1", "temporal-reasoning"))
PASSES = (
    Pass("fusion", lambda c: replace(c, fusion=None), (*ALL_R10, ("D@1", None))),
    Pass(
        "context-ranking",
        lambda c: replace(c, context_ranking=False),
        (*TEMPORAL, ("R@10", None), ("turn@1", None)),
    ),
    Pass("session-context", lambda c: replace(c, session_context=False), TEMPORAL),
    Pass("when", lambda c: replace(c, time_weight=0.0), TEMPORAL),
    Pass("window-slots", lambda c: replace(c, window_slots=0), TEMPORAL),
    Pass(
        "when+window-slots",
        lambda c: replace(c, time_weight=0.0, window_slots=0),
        TEMPORAL,
        joint=("when", "window-slots"),
    ),
    Pass(
        "supersession",
        lambda c: replace(c, supersession=False),
        (("latest_first@10", None), ("turn@1", "knowledge-update")),
    ),
    Pass(
        "restate",
        lambda c: replace(c, restate_share=None),
        (("latest_first@10", None), ("turn@1", "knowledge-update")),
    ),
    Pass(
        "anchor-after",
        lambda c: replace(c, anchor_after=False),
        TEMPORAL,
        elsewhere=(
            "python benchmarks/bench_anchor.py: 'after X' scenarios, within_leads and"
            " anchor_labelled against no-anchor-after"
        ),
    ),
    Pass("second-round", lambda c: replace(c, members=None), (("R@10", "multi-hop"),)),
    Pass(
        "state-kinds",
        lambda c: replace(c, state_kind_vectors=None),
        (("latest_first@10", None), ("turn@1", "knowledge-update")),
        elsewhere=(
            "python benchmarks/bench_states.py: report half of the fixed phrasings, minus the"
            " words alone, now_leads, past_leads and labelled with lower bounds above 0"
        ),
    ),
    Pass(
        "lasting",
        lambda c: replace(c, lasting=None),
        (
            ("latest_first@10", None),
            ("turn@1", "knowledge-update"),
            ("turn@1", "temporal-reasoning"),
        ),
        elsewhere=(
            "python benchmarks/bench_events.py: one-off events told as held through a later"
            " window (event_held), against no-lasting"
        ),
    ),
    Pass("keys", lambda c: replace(c, keys=CONTENT_KEYS), ALL_R10, keys=True),
    Pass("neighbours-key", _keys(neighbours=()), ALL_R10, keys=True),
    Pass("window-key", _keys(window=0), ALL_R10, keys=True),
    Pass("speaker-key", _keys(speaker_weight=0.0), ALL_R10, keys=True),
)
"""Every switchable pass of the default ranking, as the ablation that removes it."""

CHALLENGERS: tuple[Pass, ...] = ()
"""Passes that are off by default, judged as additions (with minus without). The
session-document, own-words and speaker keys and the session's date words were judged and
removed (``benchmarks/results/TUNING.md``)."""


def _set(field_name: str) -> Callable[[RetrievalConfig, Any], RetrievalConfig]:
    return lambda c, v: replace(c, **{field_name: v})


def _members(c: RetrievalConfig, v: Any) -> RetrievalConfig:
    if v is None or c.members is None:
        return replace(c, members=None)
    return replace(c, members=replace(c.members, similarity=v))


GRIDS: dict[str, tuple[Callable[[RetrievalConfig, Any], RetrievalConfig], tuple[Any, ...]]] = {
    "restate_share": (_set("restate_share"), (None, 0.4, 0.5, 0.6, 0.7, 0.8)),
    "members.similarity": (_members, (None, 0.4, 0.5, 0.6)),
    "validity_pool": (_set("validity_pool"), (10, 20, 30)),
    "window_slots": (_set("window_slots"), (0, 1, 2, 3)),
    "time_weight": (_set("time_weight"), (0.0, 0.25, 0.5, 1.0)),
    "anchor_min_similarity": (_set("anchor_min_similarity"), (0.3, 0.35, 0.4)),
}
"""Each tuned constant's grid (the shipped value among them), chosen per fold."""


def objective(rows: Rows, questions: Sequence[Question], folds: Iterable[int]) -> float:
    """What a constant is chosen by on training folds: the mean of LoCoMo Recall@10,
    LongMemEval turn@1 and knowledge-update latest_first@10 over those folds' questions."""
    keep = set(folds)
    parts = []
    for metric in ("R@10", "turn@1", "latest_first@10"):
        values = [
            r[metric]
            for r, q in zip(rows, questions, strict=True)
            if q.fold in keep and metric in r
        ]
        parts.append(float(np.mean(values)) if values else 0.0)
    return float(np.mean(parts))


# --------------------------------------------------------------------------- statistics


def _mean(values: Sequence[float]) -> float | None:
    return round(float(np.mean(values)), 4) if values else None


def gains(
    with_: Rows, without: Rows, questions: Sequence[Question], measures: Sequence[str] = METRICS
) -> dict[str, dict[str, dict[str, Any]]]:
    """Per metric of ``measures`` and group ('all' and each category / question type): the
    two CV means and the paired bootstrap 95% interval of with minus without (for D@1:
    without minus with)."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for metric in measures:
        groups: dict[str, list[tuple[float, float]]] = defaultdict(list)
        for a, b, q in zip(with_, without, questions, strict=True):
            if metric not in a:
                continue
            pair = (b[metric], a[metric]) if metric in LOWER_IS_BETTER else (a[metric], b[metric])
            groups["all"].append(pair)
            groups[q.group].append(pair)
        cell = {}
        for group, pairs in sorted(groups.items()):
            paired = paired_bootstrap([x for x, _ in pairs], [y for _, y in pairs])
            assert paired is not None
            w, wo = (paired.b, paired.a) if metric in LOWER_IS_BETTER else (paired.a, paired.b)
            cell[group] = {
                "n": paired.n,
                "with": round(w, 4),
                "without": round(wo, 4),
                "gain": [round(paired.diff, 4), round(paired.low, 4), round(paired.high, 4)],
            }
        if cell:
            out[metric] = cell
    return out


LOSS = -0.01
"""A group whose gain's upper bound is below this loses beyond its interval (both rulings)."""
NOTHING = 0.005
"""A shipped pass whose gain's upper bound is at most this on every metric and category of its
purpose is shown to earn nothing there (the ruling of issue 54: a bound at 0.000 on five
conversations is what a small real effect looks like, so it is no verdict on its own)."""


def _purpose_cells(
    table: dict[str, dict[str, dict[str, Any]]], purpose: Sequence[tuple[str, str | None]]
) -> list[tuple[str, str]]:
    """The (metric, group) cells of ``purpose``: a purpose over every question of a metric
    holds its categories (question types) too."""
    cells = []
    for metric, group in purpose:
        if metric not in table:
            continue
        if group is not None:
            cells += [(metric, group)] if group in table[metric] else []
        else:
            cells += [(metric, g) for g in table[metric] if not g.startswith("file ")]
    return cells


def verdict(
    table: dict[str, dict[str, dict[str, Any]]],
    purpose: Sequence[tuple[str, str | None]],
    elsewhere: str = "",
    *,
    shipped: bool = False,
) -> dict[str, Any]:
    """The ruling (head of ``benchmarks/results/TUNING.md``), symmetric:

    - a pass **enters** (``shipped`` False, a challenger) when some purpose's gain has its
      lower bound above 0 (or ``elsewhere`` says what it earned on a benchmark outside the
      audit) and no group of any metric has its upper bound below :data:`LOSS`;
    - a pass **already shipped leaves** only when it is shown to earn nothing (the upper bound
      of its gain at most :data:`NOTHING` on every metric and category of its purpose, and
      nothing ``elsewhere``) or to cost (a group of any metric with its upper bound below
      :data:`LOSS`: it loses beyond its interval where it does not earn).

    A purpose over every question of a metric counts its categories too: removing a pass that
    one category relies on would lower that category's figure ("protects")."""
    earned = [
        f"{metric} {group or 'all'}"
        for metric, group in purpose
        if metric in table
        and (group or "all") in table[metric]
        and table[metric][group or "all"]["gain"][1] > 0
    ]
    if not earned:
        earned = [
            f"protects {metric} {name}"
            for metric, group in purpose
            if group is None and metric in table
            for name, stats in table[metric].items()
            if name != "all" and not name.startswith("file ") and stats["gain"][1] > 0
        ]
    earned += [elsewhere] if elsewhere else []
    hurt = [
        f"{metric} {group}"
        for metric, cell in table.items()
        for group, stats in cell.items()
        if stats["gain"][2] < LOSS
    ]
    if not shipped:
        return {"keep": bool(earned) and not hurt, "earned_by": earned, "hurts": hurt}
    may_earn = [
        f"{metric} {g} (upper bound {table[metric][g]['gain'][2]:+.3f})"
        for metric, g in _purpose_cells(table, purpose)
        if table[metric][g]["gain"][2] > NOTHING
    ]
    keep = bool(earned or may_earn) and not hurt
    return {
        "keep": keep,
        "earned_by": (earned or [f"may earn {', '.join(may_earn[:3])}"]) if keep else earned,
        "hurts": hurt,
    }


def jointly(passes: dict[str, dict[str, Any]]) -> None:
    """Passes of one purpose that each earn nothing alone but whose joint removal costs it
    (the joint pass keeps) are kept together: one alone can stand in for the other, and
    removing them one at a time would remove both."""
    for entry in (p for p in PASSES if p.joint and p.name in passes):
        joint = passes[entry.name]
        if not joint["keep"]:
            continue
        for name in entry.joint:
            alone = passes.get(name)
            if alone is not None and not alone["keep"] and not alone["hurts"]:
                alone["keep"] = True
                alone["earned_by"] = [f"jointly ({entry.name}: {'; '.join(joint['earned_by'])})"]


# --------------------------------------------------------------------------- latency


def latency(passes: Sequence[Pass], size: int = 10_000, queries: int = 100) -> dict[str, Any]:
    """Recall p50/p95 at ``size`` synthetic memories (``bench_core``'s store: anchored
    memories of the synthetic conversation, random vectors), RaMem and RaMem without each
    pass, in one run on one store; every timed question is new to its memory."""
    import tempfile

    from bench_core import build_scale_store
    from synthetic import distinct_queries

    from ramem_core.embedding import MiniLMEmbedder
    from ramem_core.memory import RaMem

    texts = distinct_queries(queries + 5, size)
    out: dict[str, Any] = {}
    variants = [
        ("ramem", RetrievalConfig()),
        *[(p.name, p.without(RetrievalConfig())) for p in passes],
    ]
    with tempfile.TemporaryDirectory() as tmp:
        base = build_scale_store(size, tmp, MiniLMEmbedder())
        for name, config in variants:
            memory = RaMem(base.store, config=config.settled(), namespace="bench", files=None)
            for text in texts[:5]:  # the snapshot and the second round's vocabulary
                memory.recall(text, K)
            times = []
            for text in texts[5:]:
                t0 = time.perf_counter()
                memory.recall(text, K)
                times.append(time.perf_counter() - t0)
            out[name] = {
                "p50_ms": round(1000 * float(np.percentile(times, 50)), 2),
                "p95_ms": round(1000 * float(np.percentile(times, 95)), 2),
            }
            print(f"  latency {name}: {out[name]}", flush=True)
    return out


# --------------------------------------------------------------------------- the audit


@dataclass
class Audit:
    data: Data
    fusions: dict[EpisodicKeys, list[Fusion]] = field(default_factory=dict)
    fits: dict[str, Any] = field(default_factory=dict)

    def configs(
        self, change: Callable[[RetrievalConfig], RetrievalConfig]
    ) -> list[RetrievalConfig]:
        """RaMem with ``change`` in each fold, its fusion refitted on the training folds with
        the keys it reads."""
        out = []
        for fold in range(FOLDS):
            config = change(RetrievalConfig())
            if config.fusion is not None:
                config = replace(config, fusion=self.fusion(config.keys, fold))
            out.append(config)
        return out

    def fusion(self, keys: EpisodicKeys, fold: int) -> Fusion:
        if keys not in self.fusions:
            cands = fusion_candidates(self.data, keys)
            fitted = [fit_fusion(cands, f) for f in range(FOLDS)]
            self.fusions[keys] = [f for f, _ in fitted]
            self.fits[repr(keys)] = [info for _, info in fitted]
        return self.fusions[keys][fold]


def refit_fusion(data: Data) -> None:
    """The shipped fusion (``ramem_core/_data/fusion.json``, loaded by name): the procedure
    the audit judges per fold (loss and L2 by inner 3-fold CV, then the weights), fitted on
    every dev question; the choice and the weights also go to ``fusion_fit.json``."""
    from ramem_core.retrieval.fusion import FUSION_FILE

    cands = fusion_candidates(data, RetrievalConfig().keys)
    fusion, info = fit_fusion(cands, held_out=-1)  # no fold is held out
    record = {
        "weights": {k: round(v, 4) for k, v in fusion.weights.items()},
        "candidates": fusion.candidates,
        "chosen": info,
        "fitted_by": "python benchmarks/audit_ranking.py --refit-fusion",
        "result": "benchmarks/results/audit/fusion_fit.json",
        "questions": {b: sum(c.bench == b for c in cands) for b in ("locomo", "lme")},
    }
    Fusion.from_dict(record)  # a missing or unknown feature name fails here
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "fusion_fit.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    target = ROOT / "ramem_core" / "_data" / FUSION_FILE
    target.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(f"chose {info}; wrote {target}")


def rejudge() -> None:
    """Rewrite ``audit.json``'s verdicts (and ``audit.md``) from its stored tables under the
    ruling of :func:`verdict`, the passes' purposes as they are now; nothing is run."""
    result = json.loads((OUT / "audit.json").read_text(encoding="utf-8"))
    passes = {p.name: p for p in (*PASSES, *CHALLENGERS)}
    for name, entry in result["passes"].items():
        p = passes.get(name)
        if p is None:
            continue  # a pass no longer in the code keeps its recorded verdict
        entry.update(verdict(entry["table"], p.purpose, p.elsewhere, shipped=p in PASSES))
        _print_pass(name, entry)
    result["ruling"] = "symmetric (issue 54): benchmarks/results/TUNING.md, head"
    (OUT / "audit.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    (OUT / "audit.md").write_text(markdown(result), encoding="utf-8")
    print(f"rewrote {OUT / 'audit.json'} and audit.md")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="comma-separated passes / constants")
    parser.add_argument("--no-grids", action="store_true", help="passes only")
    parser.add_argument("--latency", action="store_true", help="recall p95 at 10k per pass")
    parser.add_argument(
        "--refit-fusion",
        action="store_true",
        help="fit the shipped fusion on all the dev data (the audited procedure) and exit",
    )
    parser.add_argument(
        "--rejudge",
        action="store_true",
        help="the verdicts of audit.json's stored tables under the ruling now, rewritten; no run",
    )
    args = parser.parse_args()
    if args.rejudge:
        rejudge()
        return
    if not (DATA / "locomo_dev.json").exists():
        print(f"skipped: {DATA} has no dev data")
        return
    only = {n for n in args.only.split(",") if n}
    data = Data()
    if args.refit_fusion:
        refit_fusion(data)
        return
    qs = data.questions
    audit = Audit(data)
    result: dict[str, Any] = {
        "command": "python benchmarks/audit_ranking.py",
        "questions": {b: sum(q.bench == b for q in qs) for b in ("locomo", "lme")},
        "knowledge_update_dated": sum(q.latest is not None for q in qs),
        "earlier_value": sum(q.earlier and q.latest is not None for q in qs),
        "passes": {},
        "constants": {},
    }
    ramem = run(data, "ramem", audit.configs(lambda c: c))
    result["ramem"] = {m: _mean([r[m] for r in ramem if m in r]) for m in REPORTED}
    content = run(data, "content", [harness.SYSTEMS["content"]] * FOLDS)
    result["ramem_vs_content"] = gains(ramem, content, qs, REPORTED)
    for p in (*PASSES, *CHALLENGERS):
        if only and p.name not in only:
            continue
        other = run(data, f"no-{p.name}" if p in PASSES else p.name, audit.configs(p.without))
        table = gains(ramem, other, qs) if p in PASSES else gains(other, ramem, qs)
        judged = verdict(table, p.purpose, p.elsewhere, shipped=p in PASSES)
        result["passes"][p.name] = {"table": table, **judged}
        _print_pass(p.name, result["passes"][p.name])
    jointly(result["passes"])
    for name, (setter, grid) in GRIDS.items():
        if args.no_grids or (only and name not in only):
            continue
        runs = {
            v: run(data, f"{name}={v}", audit.configs(lambda c, v=v, s=setter: s(c, v)))
            for v in grid
        }
        chosen, cv_rows = [], [{} for _ in qs]
        for fold in range(FOLDS):
            train = [f for f in range(FOLDS) if f != fold]
            best = max(grid, key=lambda v: objective(runs[v], qs, train))
            chosen.append(best)
            for i, q in enumerate(qs):
                if q.fold == fold:
                    cv_rows[i] = runs[best][i]
        shipped: Any = RetrievalConfig()
        for part in name.split("."):  # "members.similarity": the shipped second round's
            shipped = getattr(shipped, part)
        table = gains(cv_rows, ramem, qs)
        result["constants"][name] = {
            "shipped": shipped,
            "chosen_per_fold": chosen,
            "grid": {
                str(v): {m: _mean([r[m] for r in runs[v] if m in r]) for m in METRICS} for v in grid
            },
            "cv_chosen_minus_shipped": table,
        }
        print(f"{name}: shipped {shipped}, chosen per fold {chosen}", flush=True)
    result["fusion_fits"] = audit.fits
    if args.latency:
        result["latency_10k"] = latency([p for p in PASSES if not only or p.name in only])
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "audit.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    (OUT / "audit.md").write_text(markdown(result), encoding="utf-8")
    print(markdown(result))
    print(f"wrote {OUT / 'audit.json'} and audit.md")


def _print_pass(name: str, entry: dict[str, Any]) -> None:
    head = {m: entry["table"][m]["all"]["gain"] for m in entry["table"]}
    line = "  ".join(f"{m} {g[0]:+.3f} [{g[1]:+.3f},{g[2]:+.3f}]" for m, g in head.items())
    print(f"{name:18} keep={entry['keep']}  {line}", flush=True)


def _cell(table: dict[str, Any], metric: str, group: str = "all") -> str:
    stats = table.get(metric, {}).get(group)
    if stats is None:
        return "–"
    d, lo, hi = stats["gain"]
    return f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]"


def markdown(result: dict[str, Any]) -> str:
    """The audit's tables: RaMem's CV means, each pass's gain and verdict, each constant."""
    lines = [
        f"Command: `{result['command']}`. Questions: LoCoMo {result['questions']['locomo']},"
        f" LongMemEval {result['questions']['lme']} (knowledge-update with dated evidence:"
        f" {result['knowledge_update_dated']}, of which {result['earlier_value']} ask for the"
        " earlier value). Folds: one LoCoMo conversation + a fifth of LongMemEval each;"
        " fusion and constants fitted on the other four.",
        "",
        "RaMem, CV means: "
        + ", ".join(f"{m} {v:.3f}" for m, v in result["ramem"].items() if v is not None),
        "",
        "| pass | LoCoMo R@10 | D@1 fall | turn@1 | turn@10 | session@5 | latest_first@10"
        " | verdict |",
        "|---|---|---|---|---|---|---|---|",
    ]
    rows = [("RaMem vs content-only", {"table": result["ramem_vs_content"], "keep": None})]
    rows += list(result["passes"].items())
    for name, entry in rows:
        t = entry["table"]
        if entry["keep"] is None:
            verdict_text = ""
        elif entry["keep"]:
            verdict_text = "keep: " + "; ".join(entry["earned_by"])
        else:
            why = ("hurts " + "; ".join(entry["hurts"])) if entry["hurts"] else "earns nothing"
            verdict_text = "remove: " + why
        cells = " | ".join(_cell(t, m) for m in METRICS)
        lines.append(f"| {name} | {cells} | {verdict_text} |")
    groups = sorted(
        {
            g
            for e in result["passes"].values()
            for m in ("R@10", "turn@1")
            for g in e["table"].get(m, {})
        }
        - {"all"}
    )
    if groups:
        lines += ["", "Per category / question type (LoCoMo R@10 or LongMemEval turn@1):", ""]
        lines.append("| pass | " + " | ".join(groups) + " |")
        lines.append("|---|" + "---|" * len(groups))
        for name, entry in result["passes"].items():
            t = entry["table"]
            cells = [
                _cell(t, "R@10", g) if g in t.get("R@10", {}) else _cell(t, "turn@1", g)
                for g in groups
            ]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    if result["constants"]:
        lines += [
            "",
            "| constant | shipped | chosen per fold | CV chosen − shipped: R@10 | turn@1"
            " | latest_first@10 |",
            "|---|---|---|---|---|---|",
        ]
        for name, entry in result["constants"].items():
            t = entry["cv_chosen_minus_shipped"]
            lines.append(
                f"| {name} | {entry['shipped']} | {entry['chosen_per_fold']} | "
                f"{_cell(t, 'R@10')} | {_cell(t, 'turn@1')} | {_cell(t, 'latest_first@10')} |"
            )
    if "latency_10k" in result:
        base = result["latency_10k"]["ramem"]["p95_ms"]
        lines += ["", "Recall p95 at 10k memories (ms), and with the pass removed:", ""]
        lines.append("| variant | p50 | p95 | p95 / RaMem |")
        lines.append("|---|---|---|---|")
        for name, t in result["latency_10k"].items():
            lines.append(f"| {name} | {t['p50_ms']} | {t['p95_ms']} | {t['p95_ms'] / base:.2f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
