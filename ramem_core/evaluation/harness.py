"""Evaluation on LoCoMo and LongMemEval: systems and ablations on identical memory units.

Every system reads the same stored units; they differ only in their retrieval configuration:

- ``ramem``: all four stages (context-consistent candidates first, episodic reinstatement);
- ``content``: hybrid dense + BM25 content retrieval only (SimpleMem-style, no LLM planner);
- ``dense`` and ``bm25``: one retriever alone.

Ablations are configurations too: ``shuffle-context`` (episodic contexts permuted among units,
contents kept; stored in a second namespace), ``no-session`` (session spans unused),
``no-context-ranking`` (the recall frame unused), ``no-keys`` (no episodic keys: the frame
alone), ``no-neighbours``, ``no-window`` and ``no-speaker`` (one episodic key off each),
``no-when`` (no bonus
for memories that say when, on questions asking when), ``no-slots`` (no window memories from
below the relevant pool), ``no-second-round`` (no second round for questions about several
things of one kind, :mod:`ramem_core.retrieval.members`) and ``no-context-synthesis``
(the generator gets plain text; differs from ``ramem`` only in tokens and answers).

Every "RaMem minus content-only" figure comes with a paired bootstrap 95% interval over
questions, overall and per category / question type; LoCoMo figures are also given for the
split that parameters were chosen on and the split kept for reporting (``holdout``).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from ramem_core.anchoring import PIECE_CHARS, LLMAnchorer, RuleAnchorer
from ramem_core.errors import ConversationFormatError, InvalidInputError
from ramem_core.evaluation import metrics
from ramem_core.evaluation.stats import paired_bootstrap
from ramem_core.frames import LLMFrameInducer
from ramem_core.index.episodic import CONTENT_KEYS, EpisodicKeys
from ramem_core.llm import MeteredLLM
from ramem_core.loaders import (
    detect_format,
    locomo_conversation,
    longmemeval_conversation,
    longmemeval_evidence,
    read_json,
)
from ramem_core.memory import RaMem
from ramem_core.protocols import LLM, Embedder, TokenCounter
from ramem_core.retrieval import CONTENT_ONLY, Conditions, RetrievalConfig
from ramem_core.store.chroma import ChromaStore
from ramem_core.synthesis import answer, fit_budget
from ramem_core.temporal import parse_timestamp
from ramem_core.types import Conversation, Evidence, MemoryUnit, Session

SYSTEMS: dict[str, RetrievalConfig] = {
    "ramem": RetrievalConfig(),
    "content": CONTENT_ONLY,
    "dense": replace(CONTENT_ONLY, lexical=False),
    "bm25": replace(CONTENT_ONLY, dense=False),
}
ABLATIONS: dict[str, RetrievalConfig] = {
    "shuffle-context": RetrievalConfig(),
    "no-session": RetrievalConfig(session_context=False),
    "no-context-ranking": RetrievalConfig(context_ranking=False),
    "no-keys": RetrievalConfig(keys=CONTENT_KEYS),
    "no-neighbours": RetrievalConfig(keys=EpisodicKeys(neighbours=())),
    "no-window": RetrievalConfig(keys=EpisodicKeys(window=0)),
    "no-speaker": RetrievalConfig(keys=EpisodicKeys(speaker_weight=0.0)),
    "no-when": RetrievalConfig(time_weight=0.0),
    "no-slots": RetrievalConfig(window_slots=0),
    "no-fusion": RetrievalConfig(fusion=None),
    "no-supersession": RetrievalConfig(supersession=False),
    "no-restate": RetrievalConfig(restate_share=None),
    "no-second-round": RetrievalConfig(members=None),
    "no-context-synthesis": RetrievalConfig(),
}


def view_config(run: str) -> RetrievalConfig:
    """The retrieval config of ``run`` (a system or an ablation) as an evaluation reads it: a
    question waits for every term vector of the second round
    (:class:`~ramem_core.retrieval.members.TermVectors`), as a live store's questions read
    them once its background embedding is done, so rankings never depend on timing."""
    return (SYSTEMS.get(run) or ABLATIONS[run]).settled()


LOCOMO_HOLDOUT = ("conv-42", "conv-43")
"""LoCoMo dev conversations kept for reporting: parameters are chosen on the others."""
Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class EvalOptions:
    """What to run.

    Attributes:
        systems: systems to compare (keys of ``SYSTEMS``).
        ks: cut-offs for recall tables.
        ablations: ablations to add (keys of ``ABLATIONS``).
        limit: at most this many questions (in file order), for smoke runs.
        llm: a model for answers (QA metrics); ``None`` evaluates retrieval only.
        answer_k: memories handed to the generator for answers.
        seed: the shuffle-context permutation seed.
        llm_stages: also use ``llm`` for anchoring (all runs share the LLM's units) and for
            RaMem's recall frames.
        decompose: with ``llm_stages``, the frame inducer also splits a question about
            several things into parts (:class:`~ramem_core.frames.LLMFrameInducer`).
        model_name: the model's name, part of the LLM cache key.
        holdout: LoCoMo sample ids reported apart from the ones parameters were chosen on.
        piece_chars: the rule anchorer's long-turn piece length (``None``: never split).
    """

    systems: tuple[str, ...] = ("ramem", "content", "dense", "bm25")
    ks: tuple[int, ...] = (5, 10, 20)
    ablations: tuple[str, ...] = ()
    limit: int | None = None
    llm: LLM | None = None
    answer_k: int = 10
    seed: int = 13
    llm_stages: bool = False
    decompose: bool = False
    model_name: str = "llm"
    holdout: tuple[str, ...] = LOCOMO_HOLDOUT
    piece_chars: int | None = PIECE_CHARS

    def __post_init__(self) -> None:
        unknown = [s for s in self.systems if s not in SYSTEMS]
        unknown += [a for a in self.ablations if a not in ABLATIONS]
        if unknown:
            known = ", ".join([*SYSTEMS, *ABLATIONS])
            msg = f"unknown system or ablation: {', '.join(unknown)} (known: {known})"
            raise InvalidInputError(msg)
        if self.llm_stages and self.llm is None:
            msg = "llm_stages needs an llm"
            raise InvalidInputError(msg)
        if self.decompose and not self.llm_stages:
            msg = "decompose needs llm_stages (the frame inducer's model splits the questions)"
            raise InvalidInputError(msg)

    @property
    def runs(self) -> tuple[str, ...]:
        """Every system and ablation evaluated, in order."""
        return (*self.systems, *self.ablations)


def _shuffled(units: Sequence[MemoryUnit], seed: int) -> list[MemoryUnit]:
    """Units with their episodic contexts permuted among them (contents and ids kept)."""
    contexts = [u.context for u in units]
    random.Random(seed).shuffle(contexts)
    return [replace(u, context=c) for u, c in zip(units, contexts, strict=True)]


@dataclass(slots=True)
class _Bench:
    """One benchmark run: a store, the stages, one RaMem view per run, and usage counts."""

    store: ChromaStore
    options: EvalOptions
    counter: TokenCounter
    anchorer: RuleAnchorer | LLMAnchorer
    inducer: LLMFrameInducer | None = None
    answerer: MeteredLLM | None = None
    turns: int = 0
    queries: int = 0
    views: dict[str, RaMem] = field(default_factory=dict)

    def view(self, run: str) -> RaMem:
        if run not in self.views:
            config = view_config(run)
            inducer = None if run in ("content", "dense", "bm25") else self.inducer
            self.views[run] = RaMem(
                self.store, config=config, counter=self.counter, inducer=inducer
            )
        return self.views[run]

    def ingest(self, namespace: str, conversation: Conversation) -> list[MemoryUnit]:
        memory = self.view("content")
        units = self.anchorer.anchor(conversation)
        self.turns += sum(len(s.turns) for s in conversation.sessions)
        stored = set(self.store.existing_ids(namespace, [u.id for u in units]))
        if len(stored) != len(units):  # cheap rerun: ingest is idempotent, skip when complete
            memory.add_units(units, namespace=namespace)
        if "shuffle-context" in self.options.ablations:
            shuffled_ns = f"{namespace}.shuffled"
            if memory.store.count(shuffled_ns) != len(units):
                shuffled = _shuffled(units, self.options.seed)
                vectors = memory.embedder.embed([u.content for u in shuffled])
                memory.snapshots.write(shuffled_ns, shuffled, vectors)
        return units

    def recall(
        self, run: str, namespace: str, query: str, k: int, at: datetime | None = None
    ) -> list[Evidence]:
        ns = f"{namespace}.shuffled" if run == "shuffle-context" else namespace
        if run == self.options.runs[0]:
            self.queries += 1
        return list(self.view(run).recall(query, k, at=at, namespace=ns))

    def tokens(self, run: str, evidence: Sequence[Evidence]) -> int:
        plain = run == "no-context-synthesis"
        return fit_budget(evidence, self.counter, None, with_context=not plain).tokens

    def answer(
        self, run: str, question: str, evidence: Sequence[Evidence], now: datetime | None
    ) -> str:
        assert self.answerer is not None
        plain = run == "no-context-synthesis"
        block = fit_budget(
            evidence[: self.options.answer_k], self.counter, None, with_context=not plain
        )
        return answer(question, block, self.answerer, now).text

    def usage(self) -> dict[str, Any]:
        """LLM calls and tokens per ingested turn and per query, by stage."""

        def per(usage: dict[str, int], n: int) -> dict[str, Any]:
            tokens = usage["prompt_tokens"] + usage["completion_tokens"]
            return usage | {
                "calls_per_unit": usage["calls"] / n if n else None,
                "tokens_per_unit": tokens / n if n else None,
            }

        report: dict[str, Any] = {"ingested_turns": self.turns, "queries": self.queries}
        if isinstance(self.anchorer, LLMAnchorer):
            report["anchoring_per_turn"] = per(self.anchorer.llm.usage.as_dict(), self.turns)
            report["anchoring_report"] = self.anchorer.report.as_dict()
        else:
            report["anchoring_per_turn"] = "rule-based: no LLM call"
        if self.inducer is not None:
            report["frames_per_query"] = per(self.inducer.llm.usage.as_dict(), self.queries)
            report["frame_fallbacks"] = self.inducer.fallbacks
        else:
            report["frames_per_query"] = "rule-based: no LLM call"
        if self.answerer is not None:
            calls = len(self.options.runs) * self.queries
            report["answers_per_query_and_run"] = per(self.answerer.usage.as_dict(), calls)
        return report


def _open_bench(
    out: Path, options: EvalOptions, embedder: Embedder | None, counter: TokenCounter | None
) -> _Bench:
    from ramem_core.embedding import CachedEmbedder, MiniLMEmbedder
    from ramem_core.tokens import TiktokenCounter

    inner = embedder or MiniLMEmbedder()
    cached = CachedEmbedder(inner, out / "cache" / "embeddings.sqlite")
    tokens = counter or TiktokenCounter()
    suffix = "-llm" if options.llm_stages else ""
    store = ChromaStore.persistent(out / "cache" / f"store{suffix}", cached)

    def metered() -> MeteredLLM | None:
        # each stage meters its own calls; all share one on-disk cache
        if options.llm is None:
            return None
        return MeteredLLM(
            options.llm,
            model_name=options.model_name,
            counter=tokens,
            cache_path=out / "cache" / "llm.sqlite",
        )

    anchor_llm, frame_llm = (metered(), metered()) if options.llm_stages else (None, None)
    return _Bench(
        store,
        options,
        tokens,
        LLMAnchorer(anchor_llm) if anchor_llm else RuleAnchorer(piece_chars=options.piece_chars),
        LLMFrameInducer(frame_llm, decompose=options.decompose) if frame_llm else None,
        metered(),
    )


def _namespace(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "-", name).strip("-._") or "q"


def _retrieved(evidence: Sequence[Evidence]) -> list[dict[str, Any]]:
    return [
        {
            "id": e.unit.id,
            "source_ids": list(e.unit.source_ids),
            "session_id": e.unit.context.session_id,
            "contextual": e.contextual,
        }
        for e in evidence
    ]


def _frame_row(
    memory: RaMem,
    namespace: str,
    question: str,
    evidence_units: Sequence[MemoryUnit],
    is_evidence: Callable[[MemoryUnit], bool],
    at: datetime | None = None,
) -> dict[str, Any]:
    """The recall frame of a question, whether the gold evidence meets it, and whether each
    relation's anchor memory is evidence (a proxy for "the anchor was located right")."""
    frame = memory.frame(question, at=at, namespace=namespace)
    config = memory.retriever.config
    # the windows as ranking uses them (padded), not as the labels state them (exact)
    padded = Conditions.of(frame, config.session_context, config.window_padding)
    conditions = replace(padded, exact=None)
    snap = memory.snapshots.get(namespace)
    anchors = [
        {
            "anchor": t.anchor,
            "relation": t.relation.value if t.relation else None,
            "correct": is_evidence(snap.unit(snap.position[t.anchor_id])),
        }
        for t in frame.times
        if t.anchor_id is not None and t.anchor_id in snap.position
    ]
    return {
        "grounded": frame.is_grounded,
        "times": [t.text for t in frame.grounded_times],
        "participants": list(frame.participants),
        "distance": any("distance" in t.reason for t in frame.times),
        "anchors": anchors,
        "evidence_valid": bool(conditions) and any(conditions.satisfied(u) for u in evidence_units),
    }


def _load(path: str | Path | Sequence[str | Path], kind: str) -> list[Any]:
    """The items of one or more benchmark files of ``kind`` ("locomo", "longmemeval"),
    concatenated.

    Raises:
        ConversationFormatError: a file is missing, not JSON, or not a ``kind`` file.
    """
    paths = [path] if isinstance(path, (str, Path)) else list(path)
    items: list[Any] = []
    for one in paths:
        data = read_json(one)
        if not isinstance(data, list) or not data or detect_format(data) != kind:
            found = detect_format(data) if data else "empty"
            msg = f"not a {kind} file (a JSON list of {kind} items; this looks like {found})"
            raise ConversationFormatError(msg, source=str(one))
        items.extend({**item, "_source": Path(one).stem} for item in data)
    return items


def _paired(
    rows: Sequence[dict[str, Any]],
    run: str,
    baseline: str,
    metric: Callable[[dict[str, Any]], float | None],
    groups: dict[str, Callable[[dict[str, Any]], bool]],
) -> dict[str, Any]:
    """Paired bootstrap of ``metric`` for ``run`` minus ``baseline`` within each group.

    Rows of two runs pair up by position: the harness writes every run of a question in turn.
    """
    mine = [r for r in rows if r["system"] == run]
    theirs = [r for r in rows if r["system"] == baseline]
    out: dict[str, Any] = {}
    for name, member in groups.items():
        a, b = [], []
        for x, y in zip(mine, theirs, strict=True):
            if member(x) and (u := metric(x)) is not None and (v := metric(y)) is not None:
                a.append(u)
                b.append(v)
        result = paired_bootstrap(a, b)
        out[name] = result.as_dict() if result is not None else None
    return out


def anchor_accuracy(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """How often a relation's anchor was located in memory, how often the anchor memory is
    evidence, and how often the relation's window holds the evidence."""
    mine = [r for r in rows if r["system"] == "ramem"]
    found = [a for r in mine for a in r.get("frame", {}).get("anchors", [])]
    correct = sum(a["correct"] for a in found)
    anchored = [r for r in mine if r.get("frame", {}).get("anchors")]
    holds = sum(bool(r["frame"]["evidence_valid"]) for r in anchored)
    return {
        "located": len(found),
        "on_evidence": correct,
        "share": correct / len(found) if found else None,
        "questions_with_anchor": len(anchored),
        "window_holds_evidence": holds,
        "window_share": holds / len(anchored) if anchored else None,
        "distance_questions": sum(bool(r.get("frame", {}).get("distance")) for r in mine),
    }


def failure_kinds(rows: Sequence[dict[str, Any]], k: int = 10) -> dict[str, int]:
    """Why RaMem missed evidence at ``k`` (answerable questions with evidence)."""
    kinds: dict[str, int] = {}
    for r in rows:
        if r["system"] != "ramem" or r["category"] not in metrics.ANSWERABLE or not r["evidence"]:
            continue
        score = r["recall"][k]
        frame = r.get("frame", {})
        if score == 1.0:
            kind = "all evidence found"
        elif frame.get("grounded") and not frame.get("evidence_valid"):
            kind = "grounded frame excluded the evidence (wrong or too narrow window)"
        elif frame.get("grounded"):
            kind = "evidence valid but outranked inside the frame"
        elif score > 0.0:
            kind = "partial: some evidence turns missing (no grounded frame)"
        else:
            kind = "content miss (no grounded frame)"
        kinds[kind] = kinds.get(kind, 0) + 1
    return dict(sorted(kinds.items(), key=lambda kv: -kv[1]))


def _mean(values: Iterable[float]) -> float | None:
    items = list(values)
    return float(np.mean(items)) if items else None


# --------------------------------------------------------------------------- LoCoMo


Rows = list[dict[str, Any]]


def _evaluate(
    benchmark: str,
    path: str | Path | Sequence[str | Path],
    out: str | Path,
    options: EvalOptions,
    plan: Callable[[list[Any], _Bench], tuple[Sequence[Any], Callable[[Any], Rows]]],
    summarize: Callable[[Rows], dict[str, Any]],
    *,
    embedder: Embedder | None,
    counter: TokenCounter | None,
    progress: Progress | None,
) -> dict[str, Any]:
    """The one evaluation skeleton: load the file (a bad one fails before anything is
    written), open the runs, ``plan`` the questions (ingesting what they need), write each
    question's rows to ``questions.jsonl`` as they come, then ``summary.json``."""
    items = _load(path, benchmark)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    bench = _open_bench(out, options, embedder, counter)
    questions, rows_of = plan(items, bench)
    rows: Rows = []
    with (out / "questions.jsonl").open("w", encoding="utf-8") as sink:
        for done, question in enumerate(questions, start=1):
            for row in rows_of(question):
                sink.write(json.dumps(row) + "\n")
                rows.append(row)
            if progress is not None:
                progress(done, len(questions))
    summary = summarize(rows)
    summary["llm_usage"] = bench.usage()
    (out / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return summary


def evaluate_locomo(
    path: str | Path | Sequence[str | Path],
    out: str | Path,
    options: EvalOptions | None = None,
    *,
    embedder: Embedder | None = None,
    counter: TokenCounter | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Evaluate on a LoCoMo file; writes ``questions.jsonl`` and ``summary.json`` to ``out``.

    Returns:
        The summary: per run, evidence Recall@K by category and overall (categories 1-4),
        D@1 and rank gap on the context-confusable subset, tokens per question, the K-budget
        curve, and QA F1/BLEU-1 by category when an LLM is given.
    """
    chosen = options or EvalOptions()

    def plan(samples: list[Any], bench: _Bench) -> tuple[Sequence[Any], Callable[[Any], Rows]]:
        questions = [(s, qa) for s in samples for qa in s.get("qa", [])]
        if chosen.limit is not None:
            questions = questions[: chosen.limit]
        needed = dict.fromkeys(s["sample_id"] for s, _ in questions)
        units = {
            s["sample_id"]: bench.ingest(
                _namespace(s["sample_id"]), locomo_conversation(s, s["sample_id"])
            )
            for s in samples
            if s["sample_id"] in needed
        }
        references = {
            sid: metrics.ReferenceBM25([u.id for u in us], [u.content for u in us])
            for sid, us in units.items()
        }
        return questions, lambda q: _locomo_rows(
            bench, chosen, q, units[q[0]["sample_id"]], references[q[0]["sample_id"]]
        )

    return _evaluate(
        "locomo",
        path,
        out,
        chosen,
        plan,
        lambda rows: summarize_locomo(rows, chosen),
        embedder=embedder,
        counter=counter,
        progress=progress,
    )


def _locomo_rows(
    bench: _Bench,
    options: EvalOptions,
    question: tuple[dict[str, Any], dict[str, Any]],
    units: list[MemoryUnit],
    reference: metrics.ReferenceBM25,
) -> Rows:
    """One LoCoMo question's row per run: its recall at every depth, its confusion, and its
    frame and answer where asked."""
    sample, qa = question
    depth = max(20, *options.ks)
    sid, category = sample["sample_id"], int(qa.get("category", 0))
    gold = metrics.parse_evidence(qa.get("evidence", []))
    session_of = {u.id: u.context.session_id for u in units}
    evidence_units = {u.id for u in units if set(u.source_ids) & set(gold)}
    evidence_sessions = {g.split(":")[0] for g in gold}
    confusable = (
        category in metrics.ANSWERABLE
        and bool(evidence_units)
        and metrics.is_confusable(
            reference.ranking(qa["question"]), session_of, evidence_units, evidence_sessions
        )
    )
    rows = []
    for run in options.runs:
        evidence = bench.recall(run, _namespace(sid), qa["question"], depth)
        source_lists = [list(e.unit.source_ids) for e in evidence]
        row: dict[str, Any] = {
            "system": run,
            "sample_id": sid,
            "split": "report" if sid in options.holdout else "choose",
            "question": qa["question"],
            "category": category,
            "category_name": metrics.LOCOMO_CATEGORIES.get(category, "?"),
            "answer": qa.get("answer", qa.get("adversarial_answer")),
            "evidence": gold,
            "retrieved": _retrieved(evidence),
            "recall": {
                k: metrics.evidence_recall(gold, [s for ids in source_lists[:k] for s in ids])
                for k in range(1, depth + 1)
            },
            "confusable": confusable,
            "top1_wrong_episode": (
                float(evidence[0].unit.context.session_id not in evidence_sessions)
                if evidence and evidence_units
                else None
            ),
            "tokens": {k: bench.tokens(run, evidence[:k]) for k in options.ks},
        }
        if run == "ramem":
            row["frame"] = _frame_row(
                bench.view(run),
                _namespace(sid),
                qa["question"],
                [u for u in units if u.id in evidence_units],
                lambda u, gold=gold: bool(set(u.source_ids) & set(gold)),  # type: ignore[misc]
            )
        if confusable:
            sessions = [e.unit.context.session_id for e in evidence]
            is_ev = [e.unit.id in evidence_units for e in evidence]
            row["d_at_1"], row["rank_gap"] = metrics.confusion(sessions, is_ev, evidence_sessions)
        if options.llm is not None:
            last = bench.view(run).snapshots.get(_namespace(sid)).last_session_end
            prediction = bench.answer(run, qa["question"], evidence, last)
            row["prediction"] = prediction
            row["f1"] = metrics.locomo_f1(prediction, row["answer"], category)
            row["bleu1"] = metrics.bleu1(prediction, str(row["answer"]))
        rows.append(row)
    return rows


def summarize_locomo(rows: Sequence[dict[str, Any]], options: EvalOptions) -> dict[str, Any]:
    """Aggregate per-question rows into the summary tables."""
    depth = max(20, *options.ks)
    summary: dict[str, Any] = {
        "benchmark": "locomo",
        "ks": list(options.ks),
        "systems": list(options.systems),
        "runs": {},
    }
    for run in options.runs:
        mine = [r for r in rows if r["system"] == run]
        answerable = [r for r in mine if r["category"] in metrics.ANSWERABLE and r["evidence"]]
        confusable = [r for r in mine if r.get("confusable")]
        entry: dict[str, Any] = {
            "questions": len(mine),
            "answerable_with_evidence": len(answerable),
            "recall": _recall_by_category(answerable, options.ks),
            "multi_hop_all_evidence": _all_evidence(answerable, options.ks),
            "multi_hop_by_sessions": by_evidence_sessions(answerable, 10),
            "budget_curve": [
                _mean(r["recall"][k] for r in answerable) for k in range(1, depth + 1)
            ],
            "confusable": {
                "questions": len(confusable),
                "d_at_1": _mean(r["d_at_1"] for r in confusable),
                "rank_gap": _mean(r["rank_gap"] for r in confusable),
            },
            "tokens": {str(k): _mean(r["tokens"][k] for r in mine) for k in options.ks},
        }
        if any("f1" in r for r in mine):
            entry["qa"] = {
                name: {
                    "f1": _mean(r["f1"] for r in mine if r["category"] == c),
                    "bleu1": _mean(r["bleu1"] for r in mine if r["category"] == c),
                }
                for c, name in metrics.LOCOMO_CATEGORIES.items()
            }
            entry["qa"]["overall"] = {
                "f1": _mean(r["f1"] for r in mine if r["category"] in metrics.ANSWERABLE),
                "bleu1": _mean(r["bleu1"] for r in mine if r["category"] in metrics.ANSWERABLE),
            }
        entry["d_at_1_all"] = _wrong_episode_at_1(answerable)
        entry["splits"] = {}
        for split in ("choose", "report"):
            part = [r for r in answerable if r.get("split") == split]
            entry["splits"][split] = {
                "questions": len(part),
                "recall": _recall_by_category(part, options.ks),
                "multi_hop_all_evidence": _all_evidence(part, options.ks),
                "d_at_1_all": _wrong_episode_at_1(part),
            }
        summary["runs"][run] = entry
    if "content" in options.runs:
        summary["paired_vs_content"] = {
            run: _locomo_paired(rows, run, options) for run in options.runs if run != "content"
        }
    if "ramem" in options.runs:
        summary["ramem_failures_at_10"] = failure_kinds(rows, 10)
        summary["anchors"] = anchor_accuracy(rows)
    return summary


def _recall_by_category(
    rows: Sequence[dict[str, Any]], ks: Sequence[int]
) -> dict[str, dict[str, float | None]]:
    """Mean evidence Recall@k per answerable category and overall, for each k."""
    recall: dict[str, dict[str, float | None]] = {}
    for k in ks:
        by_category = {
            name: _mean(r["recall"][k] for r in rows if r["category"] == c)
            for c, name in LOCOMO_ANSWERABLE
        }
        by_category["overall"] = _mean(r["recall"][k] for r in rows)
        recall[str(k)] = by_category
    return recall


def evidence_sessions(row: dict[str, Any]) -> int:
    """How many sessions a question's evidence turns lie in (LoCoMo turn ids: ``D<s>:<t>``)."""
    return len({str(turn).split(":")[0] for turn in row["evidence"]})


def by_evidence_sessions(rows: Sequence[dict[str, Any]], k: int) -> dict[str, dict[str, Any]]:
    """Multi-hop questions by how many sessions their evidence spans (1, 2, 3, 4 or more):
    how many, their Recall@k, the share with all evidence in the top ``k``, and why RaMem
    missed (:func:`failure_kinds`, for RaMem's rows)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if r["category"] == MULTI_HOP and r["evidence"]:
            n = evidence_sessions(r)
            groups.setdefault(str(n) if n < 4 else "4+", []).append(r)
    return {
        name: {
            "questions": len(group),
            "recall": _mean(r["recall"][k] for r in group),
            "all_evidence": _mean(float(r["recall"][k] == 1.0) for r in group),
            "failures": failure_kinds(group, k),
        }
        for name, group in sorted(groups.items())
    }


def _all_evidence(rows: Sequence[dict[str, Any]], ks: Sequence[int]) -> dict[str, float | None]:
    """Share of multi-hop questions with *all* their evidence in the top k, for each k (a
    multi-hop answer found in pieces is not found)."""
    multi = [r for r in rows if r["category"] == MULTI_HOP]
    return {str(k): _mean(float(r["recall"][k] == 1.0) for r in multi) for k in ks}


MULTI_HOP = next(c for c, name in metrics.LOCOMO_CATEGORIES.items() if name == "multi-hop")


def _wrong_episode_at_1(rows: Sequence[dict[str, Any]]) -> float | None:
    """Share of questions whose top memory comes from a session without evidence."""
    return _mean(r["top1_wrong_episode"] for r in rows if r.get("top1_wrong_episode") is not None)


LOCOMO_ANSWERABLE = [
    (c, n) for c, n in metrics.LOCOMO_CATEGORIES.items() if c in metrics.ANSWERABLE
]


def _locomo_paired(
    rows: Sequence[dict[str, Any]], run: str, options: EvalOptions
) -> dict[str, Any]:
    """``run`` minus content-only with paired 95% intervals: Recall@10 (all, per split, per
    category) and D@1 over all answerable questions and on the confusable subset."""
    k = 10 if 10 in options.ks else max(options.ks)

    def answerable(r: dict[str, Any]) -> bool:
        return r["category"] in metrics.ANSWERABLE and bool(r["evidence"])

    groups: dict[str, Callable[[dict[str, Any]], bool]] = {
        "all": answerable,
        "choose split": lambda r: answerable(r) and r.get("split") == "choose",
        "report split": lambda r: answerable(r) and r.get("split") == "report",
    }
    for c, name in LOCOMO_ANSWERABLE:
        groups[name] = lambda r, c=c: answerable(r) and r["category"] == c  # type: ignore[misc]
    return {
        f"recall@{k}": _paired(rows, run, "content", lambda r: r["recall"][k], groups),
        "d_at_1_all": _paired(
            rows,
            run,
            "content",
            lambda r: r.get("top1_wrong_episode"),
            {"all": answerable, "report split": groups["report split"]},
        ),
        "d_at_1_confusable": _paired(
            rows,
            run,
            "content",
            lambda r: r.get("d_at_1"),
            {"all": lambda r: bool(r.get("confusable"))},
        ),
    }


# --------------------------------------------------------------------------- LongMemEval

LME_KS = (1, 3, 5, 10, 30, 50)


def _ranking_metrics(
    ranked: Sequence[str], gold: Sequence[str], ks: Iterable[int]
) -> dict[int, dict[str, float]]:
    return {
        k: {
            "recall_any": metrics.recall_any(ranked, gold, k),
            "recall_all": metrics.recall_all(ranked, gold, k),
            "ndcg_any": metrics.ndcg_any(ranked, gold, k),
        }
        for k in ks
    }


def _user_side(conversation: Conversation) -> Conversation:
    """The conversation with user turns only (LongMemEval's retrieval corpus)."""
    sessions = tuple(
        Session(s.id, tuple(t for t in s.turns if t.speaker == "user"), s.time)
        for s in conversation.sessions
    )
    return replace(conversation, sessions=tuple(s for s in sessions if s.turns))


def evaluate_longmemeval(
    path: str | Path | Sequence[str | Path],
    out: str | Path,
    options: EvalOptions | None = None,
    *,
    embedder: Embedder | None = None,
    counter: TokenCounter | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Evaluate retrieval on a LongMemEval file with the paper's conventions.

    Corpus: user turns; gold: evidence sessions and turns; the question's own date is the query
    time; abstention questions and questions whose evidence is only on the assistant side are
    skipped (and counted).
    """
    chosen = options or EvalOptions(ks=LME_KS)
    skipped = {"abstention": 0, "assistant-only evidence": 0}

    def plan(items: list[Any], bench: _Bench) -> tuple[Sequence[Any], Callable[[Any], Rows]]:
        items = items[: chosen.limit] if chosen.limit is not None else items
        return items, lambda item: _longmemeval_rows(bench, chosen, item, skipped)

    return _evaluate(
        "longmemeval",
        path,
        out,
        chosen,
        plan,
        lambda rows: summarize_longmemeval(rows, chosen, skipped),
        embedder=embedder,
        counter=counter,
        progress=progress,
    )


def _longmemeval_rows(
    bench: _Bench, options: EvalOptions, item: dict[str, Any], skipped: dict[str, int]
) -> Rows:
    """One LongMemEval question's row per run (none for a skipped one, which is counted)."""
    qid = str(item["question_id"])
    gold_turns = longmemeval_evidence(item, qid)
    if qid.endswith("_abs") or not gold_turns:
        skipped["abstention" if qid.endswith("_abs") else "assistant-only evidence"] += 1
        return []
    depth = max(50, *options.ks)
    ks = sorted({*options.ks, 1, 5, 10})  # the headline cut-offs are always computed
    namespace = _namespace(qid)
    units = bench.ingest(namespace, _user_side(longmemeval_conversation(item, qid)))
    evidence_units = [u for u in units if set(u.source_ids) & set(gold_turns)]
    gold_sessions = list(item.get("answer_session_ids") or [])
    at = parse_timestamp(str(item.get("question_date", "")))
    rows = []
    for run in options.runs:
        evidence = bench.recall(run, namespace, item["question"], depth, at=at)
        turns = [sid for e in evidence for sid in e.unit.source_ids]
        sessions = metrics.dedupe(e.unit.context.session_id.split("~")[0] for e in evidence)
        row: dict[str, Any] = {
            "system": run,
            "question_id": qid,
            "source": item.get("_source"),
            "question_type": item.get("question_type"),
            "question": item["question"],
            "answer": item.get("answer"),
            "evidence": gold_sessions,
            "evidence_turns": gold_turns,
            "retrieved": _retrieved(evidence),
            "session": _ranking_metrics(sessions, gold_sessions, ks),
            "turn": _ranking_metrics(turns, gold_turns, ks),
            "tokens": {k: bench.tokens(run, evidence[:k]) for k in options.ks},
        }
        if run == "ramem":
            row["frame"] = _frame_row(
                bench.view(run),
                namespace,
                item["question"],
                evidence_units,
                lambda u, gold=gold_sessions: (  # type: ignore[misc]
                    u.context.session_id.split("~")[0] in gold
                ),
                at,
            )
        if options.llm is not None:
            row["prediction"] = bench.answer(run, item["question"], evidence, at)
            row["judged_correct"] = metrics.judge(
                bench.answerer,
                str(item.get("question_type")),
                item["question"],
                str(item.get("answer")),
                row["prediction"],
            )
        rows.append(row)
    return rows


def summarize_longmemeval(
    rows: Sequence[dict[str, Any]], options: EvalOptions, skipped: dict[str, int]
) -> dict[str, Any]:
    """Aggregate per-question rows into the summary tables."""
    summary: dict[str, Any] = {
        "benchmark": "longmemeval",
        "ks": list(options.ks),
        "skipped": skipped,
        "runs": {run: _longmemeval_entry(rows, run, options) for run in options.runs},
    }
    if "content" in options.runs:
        types = sorted({str(r["question_type"]) for r in rows})
        groups: dict[str, Callable[[dict[str, Any]], bool]] = {"all": lambda r: True}
        sources = sorted({str(r.get("source")) for r in rows})
        for source in sources if len(sources) > 1 else ():
            groups[f"file {source}"] = lambda r, f=source: str(r.get("source")) == f  # type: ignore[misc]
        for t in types:
            groups[t] = lambda r, t=t: r["question_type"] == t  # type: ignore[misc]
        summary["paired_vs_content"] = {
            run: {
                name: _paired(rows, run, "content", metric, groups)
                for name, metric in LME_HEADLINE.items()
            }
            for run in options.runs
            if run != "content"
        }
    if "ramem" in options.runs:
        summary["anchors"] = anchor_accuracy(rows)
    return summary


def _longmemeval_entry(
    rows: Sequence[dict[str, Any]], run: str, options: EvalOptions
) -> dict[str, Any]:
    mine = [r for r in rows if r["system"] == run]
    entry: dict[str, Any] = {"questions": len(mine)}
    for level in ("session", "turn"):
        entry[level] = {
            str(k): {
                m: _mean(r[level][k][m] for r in mine)
                for m in ("recall_any", "recall_all", "ndcg_any")
            }
            for k in options.ks
        }
    entry["tokens"] = {str(k): _mean(r["tokens"][k] for r in mine) for k in options.ks}
    types = sorted({str(r["question_type"]) for r in mine})
    if any("judged_correct" in r for r in mine):
        entry["qa_accuracy"] = {
            t: _mean(float(r["judged_correct"]) for r in mine if r["question_type"] == t)
            for t in types
        }
        entry["qa_accuracy"]["overall"] = _mean(float(r["judged_correct"]) for r in mine)
    entry["by_type"] = {
        t: {
            "questions": len([r for r in mine if r["question_type"] == t]),
            **{
                name: _mean(metric(r) for r in mine if r["question_type"] == t)
                for name, metric in LME_HEADLINE.items()
            },
        }
        for t in types
    }
    return entry


LME_HEADLINE: dict[str, Callable[[dict[str, Any]], float]] = {
    "turn recall_any@1": lambda r: r["turn"][1]["recall_any"],
    "turn recall_any@10": lambda r: r["turn"][10]["recall_any"],
    "session recall_any@5": lambda r: r["session"][5]["recall_any"],
}
"""The LongMemEval figures reported per question type, with paired intervals."""
