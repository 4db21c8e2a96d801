"""The agent path: live replay, echoed replies and before/after questions, LoCoMo and LongMemEval.

    python benchmarks/bench_agent_path.py             # LoCoMo dev + LongMemEval_S dev30/dev60
    python benchmarks/bench_agent_path.py --limit 1   # one conversation / question each (smoke)

1. **Bulk vs live**: each conversation is stored twice, with ``add_conversation`` and turn by
   turn with ``add_turn`` (session times, a new session at each session of the data); every
   question is asked of both. Evidence Recall@10 and D@1 (rank 1 from a session with no
   evidence) are compared, paired by question, with bootstrap 95% intervals. LongMemEval:
   user turns only (the paper's corpus), the question's own date as the query time.
2. **Echo**: each question then goes through ``create_agent`` with ``RaMemMiddleware`` and a
   scripted model whose reply restates the two memories it was shown in its own words (every
   fifth reply adds a wrong date); the middleware records the exchange. All questions are then
   asked again: Recall@10, D@1 and the share whose rank 1 is a recorded question or reply, for
   the default settings and for each variant of :data:`ECHO_VARIANTS`, side by side.
3. **The live clock** (``--clock-only`` runs it alone): each LongMemEval question asked
   through ``create_agent`` + the middleware with its own question date as the clock; the
   model must see exactly ``recall(at=question date)`` (:func:`clock_replay`).
4. **Before/after**: of the questions whose frame grounds a before/after relation, the share
   whose rank-1 memory lies on the anchor's own side (it ends before an "after" window starts,
   or starts after a "before" window ends), Recall@10 and D@1, for the default and each
   setting of :data:`BEFORE_AFTER`.

Tables per dataset split (LoCoMo: conv-26/30/41 choose, conv-42/43 report; LongMemEval: dev30
choose, dev60 report) and per category / question type. Writes
``benchmarks/results/bench_agent_path.json``. Offline: the default embedder (vectors cached
under ``results/agent_path``) and LangChain's own agent loop.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ramem_core import Kind, RaMem, RetrievalConfig
from ramem_core.embedding import CachedEmbedder, MiniLMEmbedder
from ramem_core.evaluation import metrics
from ramem_core.evaluation.harness import LOCOMO_HOLDOUT
from ramem_core.evaluation.stats import paired_bootstrap
from ramem_core.loaders import (
    locomo_conversation,
    longmemeval_conversation,
    longmemeval_evidence,
)
from ramem_core.store.chroma import ChromaStore
from ramem_core.temporal import parse_timestamp
from ramem_core.types import Conversation, Evidence, Recall, Relation, Session

ROOT = Path(__file__).resolve().parents[1]

DATA = ROOT.parent / "shared" / "data"
LOCOMO = DATA / "locomo_dev.json"
LONGMEMEVAL = {
    "choose": DATA / "longmemeval_s_dev30.json",
    "report": DATA / "longmemeval_s_dev60.json",
}
_BODY = re.compile(r"<memory[^>]*>\s*(?P<body>.*?)\s*</memory>", re.DOTALL)

#: retrieval settings the echoed memory is also asked with (default first)
ECHO_VARIANTS: dict[str, RetrievalConfig] = {
    "default": RetrievalConfig(),
    "derived_yield off": RetrievalConfig(derived_yield=False),
    "derived_yield_all": RetrievalConfig(derived_yield_all=True),
    "derived_last 0.4": RetrievalConfig(derived_last=0.4),
    "derived_last 0.6": RetrievalConfig(derived_last=0.6),
}
#: before/after settings compared with the default (exclude_anchor off)
BEFORE_AFTER = {
    "exclude_anchor": RetrievalConfig(exclude_anchor=True),
}


def scripted_reply(messages: list[Any]) -> str:
    """A reply that restates the first two injected memories in its own words; every fifth
    one also states a wrong date (a model that got the episode wrong)."""
    system = next((str(m.content) for m in messages if m.type == "system"), "")
    bodies = [m.group("body") for m in _BODY.finditer(system)][:2]
    restated = [re.sub(r"^[^:]{1,40}:\s*", "", b).replace(" (= ", " (") for b in bodies]
    reply = "From what you told me: " + " Also, ".join(restated) if restated else "I don't know."
    scripted_reply.count = getattr(scripted_reply, "count", 0) + 1  # type: ignore[attr-defined]
    if scripted_reply.count % 5 == 0:  # type: ignore[attr-defined]
        reply += " That was on 3 March 2021."
    return reply


def evidence_score(
    found: Recall, gold: list[str], turn_of: dict[str, list[str]]
) -> dict[str, float]:
    """Recall@10 (LoCoMo: share of the evidence turns; LongMemEval: any evidence turn), wrong
    episode at 1 and whether rank 1 is a recorded question or reply."""
    turns = [turn_of.get(e.unit.id, []) for e in found]
    top10 = [t for ts in turns[:10] for t in ts]
    sessions = {g.split(":")[0] for g in gold}
    top = found[0] if len(found) else None
    first = [t.split(":")[0] for t in turns[0]] if turns else []
    return {
        "recall_10": metrics.evidence_recall(gold, top10),
        "any_10": float(bool(set(gold) & set(top10))),
        "d_at_1": float(not (set(first) & sessions)),
        "derived_at_1": float(top is not None and top.unit.context.kind is not Kind.STATEMENT),
    }


def _anchor_side(found: Recall) -> bool | None:
    """True when rank 1 lies on the anchor's own side of a grounded before/after window."""
    relations = [
        t
        for t in found.frame.grounded_times
        if t.relation in (Relation.BEFORE, Relation.AFTER) and t.window is not None
    ]
    if not relations or not len(found):
        return None
    top: Evidence = found[0]
    span = top.unit.context.event_time or top.unit.context.session_span
    if span is None:
        return None
    t = relations[0]
    assert t.window is not None
    return span.end < t.window.start if t.relation is Relation.AFTER else span.start > t.window.end


def paired_dict(a: list[float], b: list[float]) -> dict[str, float | int]:
    result = paired_bootstrap(a, b)
    return result.as_dict() if result is not None else {}


def _replay(
    memory: RaMem, conversation: Conversation, namespace: str
) -> tuple[dict[str, list[str]], datetime]:
    """``conversation`` through ``add_turn``, session by session; the memory ids' turn ids and
    the time of the last turn."""
    turn_of: dict[str, list[str]] = {}
    last = datetime(2000, 1, 1)
    for session in conversation.sessions:
        start = session.time or last + timedelta(days=1)
        for j, turn in enumerate(session.turns):
            last = start + timedelta(seconds=30 * j)
            unit = memory.add_turn(
                turn.speaker,
                turn.text or turn.image_caption or "",
                at=last,
                conversation_id=conversation.id,
                namespace=namespace,
                image_caption=turn.image_caption if turn.text else None,
                new_session=j == 0,
            )
            turn_of[unit.id] = [turn.id]
    return turn_of, last


class Bench:
    """One store, the default memory and a memory per variant over it."""

    def __init__(self, store: ChromaStore) -> None:
        from langchain_ramem.testing import ScriptedChatModel

        self.store = store
        # every memory read settled: a question waits for the second round's term vectors
        self.memory = RaMem(store, config=RetrievalConfig().settled())
        # other memories read the live namespaces right after the default one writes them
        self.variants = {
            name: RaMem(store, config=config.settled(), refresh_seconds=0)
            for name, config in ECHO_VARIANTS.items()
            if name != "default"
        }
        self.before_after = {
            name: RaMem(store, config=config.settled(), refresh_seconds=0)
            for name, config in BEFORE_AFTER.items()
        }
        self.model = ScriptedChatModel(default=scripted_reply)

    def run(
        self,
        sid: str,
        conversation: Conversation,
        questions: list[dict[str, Any]],
        at: Callable[[dict[str, Any]], datetime | None],
    ) -> list[dict[str, Any]]:
        """Bulk, live, echo and before/after for one conversation; one row per question
        (``question``, ``gold`` turn ids and a ``meta`` dict given)."""
        from langchain.agents import create_agent

        from langchain_ramem import MemoryContext, RaMemMiddleware

        memory = self.memory
        bulk_ns, live_ns = f"bulk-{sid}", f"live-{sid}"
        memory.add_conversation(conversation, namespace=bulk_ns)
        turn_of_bulk = {u.id: list(u.source_ids) for u in self.store.get(bulk_ns)}
        turn_of_live, last = _replay(memory, conversation, live_ns)
        rows = []
        for qa in questions:
            q, gold, when = qa["question"], qa["gold"], at(qa)
            bulk = memory.recall(q, namespace=bulk_ns, at=when)
            others = {
                name: other.recall(q, namespace=bulk_ns, at=when)
                for name, other in self.before_after.items()
            }
            rows.append(
                {
                    **qa["meta"],
                    "question": q,
                    "gold": gold,
                    "bulk": evidence_score(bulk, gold, turn_of_bulk),
                    "live": evidence_score(
                        memory.recall(q, namespace=live_ns, at=when), gold, turn_of_live
                    ),
                    "anchor_side": {
                        "default": _anchor_side(bulk),
                        **{name: _anchor_side(found) for name, found in others.items()},
                    },
                    "before_after": {
                        name: evidence_score(found, gold, turn_of_bulk)
                        for name, found in others.items()
                    },
                }
            )
        # the agent path: each question through the middleware, the exchange recorded
        for qa in questions:
            when = at(qa) or last + timedelta(days=1)
            clock = {"now": when}

            def tick(clock: dict[str, datetime] = clock) -> datetime:
                clock["now"] += timedelta(minutes=2)
                return clock["now"]

            agent = create_agent(
                self.model,
                middleware=[RaMemMiddleware(memory, clock=tick)],
                context_schema=MemoryContext,
            )
            agent.invoke({"messages": [("user", qa["question"])]}, context=MemoryContext(live_ns))
        for row, qa in zip(rows, questions, strict=True):
            when = at(qa)
            echoed = memory.recall(qa["question"], namespace=live_ns, at=when)
            row["echo"] = {"default": evidence_score(echoed, row["gold"], turn_of_live)}
            for name, variant in self.variants.items():
                found = variant.recall(qa["question"], namespace=live_ns, at=when)
                row["echo"][name] = evidence_score(found, row["gold"], turn_of_live)
        return rows


def locomo_questions(store: ChromaStore, samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each LoCoMo sample ingested whole into ``store`` (its id as the namespace), and its
    answerable questions with evidence: ``sid``, ``question``, ``gold``, ``turn_of`` (memory
    id -> source turns, for :func:`evidence_score`), ``split`` and ``category``."""
    questions = []
    for sample in samples:
        sid = sample["sample_id"]
        RaMem(store).add_conversation(locomo_conversation(sample, sid), namespace=sid)
        turn_of = {u.id: list(u.source_ids) for u in store.get(sid)}
        for qa in sample["qa"]:
            gold = metrics.parse_evidence(qa.get("evidence", []))
            category = int(qa.get("category", 0))
            if category in metrics.ANSWERABLE and gold:
                questions.append(
                    {
                        "sid": sid,
                        "question": qa["question"],
                        "gold": gold,
                        "turn_of": turn_of,
                        "split": "report" if sid in LOCOMO_HOLDOUT else "choose",
                        "category": metrics.LOCOMO_CATEGORIES[category],
                    }
                )
    return questions


def locomo_rows(bench: Bench, limit: int | None) -> list[dict[str, Any]]:
    samples = json.loads(LOCOMO.read_text(encoding="utf-8"))[:limit]
    rows: list[dict[str, Any]] = []
    for sample in samples:
        sid = sample["sample_id"]
        questions = [
            {
                "question": qa["question"],
                "gold": metrics.parse_evidence(qa["evidence"]),
                "meta": {
                    "dataset": "locomo",
                    "split": "report" if sid in LOCOMO_HOLDOUT else "choose",
                    "category": metrics.LOCOMO_CATEGORIES[int(qa["category"])],
                    "sample_id": sid,
                },
            }
            for qa in sample["qa"]
            if int(qa.get("category", 0)) in metrics.ANSWERABLE
            and metrics.parse_evidence(qa.get("evidence", []))
        ]
        rows += bench.run(sid, locomo_conversation(sample, sid), questions, lambda qa: None)
        print(f"locomo {sid}: {len(questions)} questions, live, echoed and asked again", flush=True)
    return rows


def _user_side(conversation: Conversation) -> Conversation:
    sessions = tuple(
        Session(s.id, tuple(t for t in s.turns if t.speaker == "user"), s.time)
        for s in conversation.sessions
    )
    return Conversation(conversation.id, tuple(s for s in sessions if s.turns), ("user",))


def longmemeval_rows(bench: Bench, limit: int | None) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for split, path in LONGMEMEVAL.items():
        if not path.exists():
            print(f"{path.name} not found: LongMemEval {split} part skipped")
            continue
        items = json.loads(path.read_text(encoding="utf-8"))[:limit]
        for n, item in enumerate(items, start=1):
            qid = str(item["question_id"])
            gold = longmemeval_evidence(item, qid)
            if qid.endswith("_abs") or not gold:
                continue
            question = {
                "question": item["question"],
                "gold": gold,
                "at": parse_timestamp(str(item.get("question_date", ""))),
                "meta": {
                    "dataset": "longmemeval",
                    "split": split,
                    "category": item.get("question_type"),
                    "sample_id": qid,
                },
            }
            conversation = _user_side(longmemeval_conversation(item, qid))
            rows += bench.run(qid, conversation, [question], lambda qa: qa["at"])
            if n % 10 == 0 or n == len(items):
                print(f"longmemeval {split}: {n}/{len(items)} questions", flush=True)
    return rows


def _mean(rows: list[dict[str, Any]], get: Callable[[dict[str, Any]], float]) -> float:
    return sum(get(r) for r in rows) / len(rows) if rows else float("nan")


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Means, paired intervals and before/after shares of ``rows`` (one group)."""
    recall = "recall_10" if rows and rows[0]["dataset"] == "locomo" else "any_10"
    table: dict[str, dict[str, float]] = {}
    columns = {"bulk": lambda r: r["bulk"], "live": lambda r: r["live"]}
    for name in ECHO_VARIANTS:
        columns[f"echo {name}"] = lambda r, name=name: r["echo"][name]
    for name, get in columns.items():
        table[name] = {
            field: _mean(rows, lambda r, f=field, g=get: g(r)[f])  # type: ignore[misc]
            for field in (recall, "d_at_1", "derived_at_1")
        }
    paired = {
        f"{b} minus {a}": {
            field: paired_dict(
                [columns[b](r)[field] for r in rows], [columns[a](r)[field] for r in rows]
            )
            for field in (recall, "d_at_1")
        }
        for a, b in (
            ("bulk", "live"),
            ("live", "echo default"),
            ("echo derived_yield off", "echo default"),
        )
    }
    sided = [r for r in rows if r["anchor_side"]["default"] is not None]
    before_after: dict[str, Any] = {"questions": len(sided)}
    for name in ("default", *BEFORE_AFTER):
        side = [r for r in rows if r["anchor_side"][name] is not None]
        before_after[f"anchor_side_at_1 {name}"] = _mean(
            side, lambda r, n=name: float(r["anchor_side"][n])
        )
        before_after[f"{recall} {name}"] = _mean(
            sided,
            lambda r, n=name: (r["bulk"] if n == "default" else r["before_after"][n])[recall],
        )
        before_after[f"d_at_1 {name}"] = _mean(
            sided,
            lambda r, n=name: (r["bulk"] if n == "default" else r["before_after"][n])["d_at_1"],
        )
    before_after["all questions, minus default"] = {
        name: {
            field: paired_dict(
                [r["before_after"][name][field] for r in rows],
                [r["bulk"][field] for r in rows],
            )
            for field in (recall, "d_at_1")
        }
        for name in BEFORE_AFTER
    }
    return {
        "questions": len(rows),
        "recall": recall,
        "table": table,
        "paired": paired,
        "before_after": before_after,
    }


def _print(title: str, summary: dict[str, Any]) -> None:
    recall = summary["recall"]
    label = "Recall@10" if recall == "recall_10" else "turn any@10"
    print(f"\n== {title} ({summary['questions']} questions)")
    print(f"{'memory':24} {label:>11} {'D@1':>7} {'recorded at 1':>14}")
    for name, values in summary["table"].items():
        print(
            f"{name:24} {values[recall]:>11.3f} {values['d_at_1']:>7.3f}"
            f" {values['derived_at_1']:>14.3f}"
        )
    for name, fields in summary["paired"].items():
        for field, p in fields.items():
            if p:
                print(
                    f"  {name:42} {field:10} {p['diff']:+.3f} [{p['low']:+.3f}, {p['high']:+.3f}]"
                )
    ba = summary["before_after"]
    if ba["questions"]:
        print(f"  before/after ({ba['questions']} q): rank 1 on the anchor's side, {label}, D@1")
        for name in ("default", *BEFORE_AFTER):
            print(
                f"    {name:22} {ba[f'anchor_side_at_1 {name}']:.2f}"
                f" {ba[f'{recall} {name}']:.3f} {ba[f'd_at_1 {name}']:.3f}"
            )


def asked_through_agent(
    memory: RaMem, question: str, namespace: str, at: datetime
) -> tuple[bool, Any]:
    """``question`` through ``create_agent`` + ``RaMemMiddleware`` with ``at`` as the clock:
    whether the model saw exactly ``recall(question, at=at)`` (the same memories in the same
    order, and their block in its system message), and the block it saw."""
    from langchain.agents import create_agent

    from langchain_ramem import MemoryContext, RaMemMiddleware
    from langchain_ramem.testing import ScriptedChatModel
    from ramem_core.synthesis import system_context

    blocks: list[Any] = []
    situate = memory.situate

    def recorded(*args: Any, **kwargs: Any) -> Any:
        blocks.append(situate(*args, **kwargs))
        return blocks[-1]

    seen: list[str] = []

    def reply(messages: list[Any]) -> str:
        seen.append(next((str(m.content) for m in messages if m.type == "system"), ""))
        return "Noted."

    memory.situate = recorded  # type: ignore[method-assign]
    try:
        middleware = RaMemMiddleware(memory, k=10, max_tokens=None, clock=lambda: at, record="none")
        agent = create_agent(
            ScriptedChatModel(default=reply), middleware=[middleware], context_schema=MemoryContext
        )
        agent.invoke({"messages": [("user", question)]}, context=MemoryContext(namespace))
    finally:
        memory.situate = situate  # type: ignore[method-assign]
    [block] = blocks
    expected = memory.recall(question, 10, at=at, namespace=namespace)
    same = [e.unit.id for e in block.included] == [e.unit.id for e in expected]
    return same and bool(seen) and system_context(block) in seen[0], block


def clock_replay(embedder: Any, limit: int | None) -> dict[str, Any]:
    """Every LongMemEval_S dev30/dev60 question asked through the agent at its own question
    date (:func:`asked_through_agent`): the share whose model saw exactly
    ``recall(at=question date)``, per part. ``latest_first@10`` on this path is measured by
    ``bench_updates.py`` (the knowledge-update questions it is defined on)."""
    from ramem_core.testing import InMemoryStore

    memory = RaMem(InMemoryStore(embedder), config=RetrievalConfig().settled())
    out: dict[str, Any] = {}
    for split, path in LONGMEMEVAL.items():
        if not path.exists():
            continue
        same: list[bool] = []
        for item in json.loads(path.read_text(encoding="utf-8"))[:limit]:
            qid = str(item["question_id"])
            at = parse_timestamp(str(item.get("question_date", "")))
            if qid.endswith("_abs") or at is None:
                continue
            namespace = re.sub(r"[^A-Za-z0-9._-]", "-", f"clock-{qid}")
            memory.add_conversation(
                _user_side(longmemeval_conversation(item, qid)), namespace=namespace
            )
            same.append(asked_through_agent(memory, item["question"], namespace, at)[0])
            memory.drop(namespace=namespace)
            if len(same) % 10 == 0:
                print(f"clock replay {split}: {len(same)} questions", flush=True)
        out[split] = {"questions": len(same), "same_as_recall": sum(same) / max(len(same), 1)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, help="at most this many conversations per file")
    parser.add_argument("--out", default=str(ROOT / "results" / "agent_path"))
    parser.add_argument(
        "--clock-only",
        action="store_true",
        help="only the live-clock replay (written to results/agent_clock_replay.json)",
    )
    args = parser.parse_args()
    if args.clock_only:
        embedder = CachedEmbedder(MiniLMEmbedder(), Path(args.out) / "embeddings.sqlite")
        replay = clock_replay(embedder, args.limit)
        print(json.dumps(replay, indent=1))
        target = ROOT / "benchmarks" / "results" / "agent_clock_replay.json"
        result = {"command": "python benchmarks/bench_agent_path.py --clock-only", **replay}
        target.write_text(json.dumps(result, indent=1) + "\n")
        return
    if not LOCOMO.exists() and not any(p.exists() for p in LONGMEMEVAL.values()):
        print("no LoCoMo or LongMemEval dev data under ../shared/data: nothing to run")
        return
    out = Path(args.out)
    embedder = CachedEmbedder(MiniLMEmbedder(), out / "embeddings.sqlite")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="ramem-agent-path-") as tmp:
        store = ChromaStore.persistent(tmp, embedder)
        bench = Bench(store)
        if LOCOMO.exists():
            rows += locomo_rows(bench, args.limit)
        rows += longmemeval_rows(bench, args.limit)
        store.close()
    groups: dict[str, dict[str, Any]] = {}
    for dataset in ("locomo", "longmemeval"):
        mine = [r for r in rows if r["dataset"] == dataset]
        if not mine:
            continue
        groups[dataset] = summarize(mine)
        for split in ("choose", "report"):
            part = [r for r in mine if r["split"] == split]
            if part:
                groups[f"{dataset} {split}"] = summarize(part)
        for category in sorted({r["category"] for r in mine}):
            groups[f"{dataset} {category}"] = summarize(
                [r for r in mine if r["category"] == category]
            )
    for title, summary in groups.items():
        _print(title, summary)
    result = {
        "command": "python benchmarks/bench_agent_path.py",
        "splits": {
            "locomo": {"choose": "conv-26/30/41", "report": "conv-42/43"},
            "longmemeval": {"choose": "dev30", "report": "dev60"},
        },
        "groups": groups,
        "clock_replay": clock_replay(embedder, args.limit),
    }
    path = ROOT / "benchmarks" / "results" / "bench_agent_path.json"
    path.write_text(json.dumps(result, indent=2))
    (out / "rows.jsonl").write_text("".join(json.dumps(r, default=str) + "\n" for r in rows))
    print(f"\nwrote {path} and {out / 'rows.jsonl'}")


if __name__ == "__main__":
    main()
