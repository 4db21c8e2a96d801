"""The agent path: live replay, echoed replies and before/after questions on LoCoMo dev.

    python benchmarks/bench_agent_path.py            # all five LoCoMo dev conversations
    python benchmarks/bench_agent_path.py --limit 1  # one conversation (smoke)

1. **Bulk vs live**: each conversation is stored twice, with ``add_conversation`` and turn by
   turn with ``add_turn`` (session times, a new session at each LoCoMo session); every
   answerable question with evidence is asked of both. Evidence Recall@10 and D@1 (rank 1 from
   a session with no evidence) are compared, paired by question, with bootstrap 95% intervals.
2. **Echo**: each question then goes through ``create_agent`` with ``RaMemMiddleware`` and a
   scripted model whose reply restates the two memories it was shown in its own words (every
   fifth reply adds a wrong date); the middleware records the exchange. All questions are then
   asked again: Recall@10, D@1 and the share whose rank 1 is a recorded question or reply.
3. **Before/after**: of the questions whose frame grounds a before/after relation, the share
   whose rank-1 memory lies on the anchor's own side (it ends before an "after" window starts,
   or starts after a "before" window ends), for both settings of ``exclude_anchor``.

Prints a table and writes ``benchmarks/results/bench_agent_path.json``. Offline: the default
embedder (vectors cached under ``results/agent_path``) and LangChain's own agent loop.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ramem_core import Kind, RaMem, RetrievalConfig  # noqa: E402
from ramem_core.embedding import CachedEmbedder, MiniLMEmbedder  # noqa: E402
from ramem_core.evaluation import metrics  # noqa: E402
from ramem_core.evaluation.stats import paired_bootstrap  # noqa: E402
from ramem_core.loaders import locomo_conversation  # noqa: E402
from ramem_core.store.chroma import ChromaStore  # noqa: E402
from ramem_core.types import Evidence, Recall, Relation  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "locomo_dev.json"
_BODY = re.compile(r"<memory[^>]*>\s*(?P<body>.*?)\s*</memory>", re.DOTALL)


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


def _questions(sample: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        qa
        for qa in sample["qa"]
        if int(qa.get("category", 0)) in metrics.ANSWERABLE
        and metrics.parse_evidence(qa.get("evidence", []))
    ]


def _score(found: Recall, gold: list[str], turn_of: dict[str, str]) -> dict[str, Any]:
    """Recall@10, wrong episode at 1 and whether rank 1 is a recorded question or reply."""
    turns = [turn_of.get(e.unit.id, "") for e in found]
    sessions = {g.split(":")[0] for g in gold}
    top = found[0] if len(found) else None
    return {
        "recall_10": metrics.evidence_recall(gold, [t for t in turns[:10] if t]),
        "d_at_1": float(turns[0].split(":")[0] not in sessions) if turns else 1.0,
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


def _paired(a: list[float], b: list[float]) -> dict[str, float | int]:
    result = paired_bootstrap(a, b)
    return result.as_dict() if result is not None else {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, help="at most this many conversations")
    parser.add_argument("--out", default=str(ROOT / "results" / "agent_path"))
    args = parser.parse_args()
    if not DATA.exists():
        print("LoCoMo dev data not found under ../shared/data: nothing to run")
        return
    from langchain.agents import create_agent

    from langchain_ramem import MemoryContext, RaMemMiddleware
    from langchain_ramem.testing import ScriptedChatModel

    samples = json.loads(DATA.read_text(encoding="utf-8"))[: args.limit]
    out = Path(args.out)
    embedder = CachedEmbedder(MiniLMEmbedder(), out / "embeddings.sqlite")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="ramem-agent-path-") as tmp:
        store = ChromaStore.persistent(tmp, embedder)
        memory = RaMem(store)
        strict = RaMem(store, config=RetrievalConfig(exclude_anchor=True))
        for sample in samples:
            sid = sample["sample_id"]
            conversation = locomo_conversation(sample, sid)
            bulk_ns, live_ns = f"bulk-{sid}", f"live-{sid}"
            memory.add_conversation(conversation, namespace=bulk_ns)
            turn_of_bulk = {u.id: u.source_ids[0] for u in store.get(bulk_ns) if u.source_ids}
            turn_of_live: dict[str, str] = {}
            last = datetime(2000, 1, 1)
            for session in conversation.sessions:
                start = session.time or last + timedelta(days=1)
                for j, turn in enumerate(session.turns):
                    last = start + timedelta(seconds=30 * j)
                    unit = memory.add_turn(
                        turn.speaker,
                        turn.text or turn.image_caption or "",
                        at=last,
                        conversation_id=sid,
                        namespace=live_ns,
                        image_caption=turn.image_caption if turn.text else None,
                        new_session=j == 0,
                    )
                    turn_of_live[unit.id] = turn.id
            print(f"{sid}: {len(turn_of_live)} turns replayed live", flush=True)
            questions = _questions(sample)
            for qa in questions:
                gold = metrics.parse_evidence(qa["evidence"])
                bulk = memory.recall(qa["question"], namespace=bulk_ns)
                live = memory.recall(qa["question"], namespace=live_ns)
                rows.append(
                    {
                        "sample_id": sid,
                        "question": qa["question"],
                        "gold": gold,
                        "bulk": _score(bulk, gold, turn_of_bulk),
                        "live": _score(live, gold, turn_of_live),
                        "anchor_side": _anchor_side(bulk),
                        "anchor_side_strict": _anchor_side(
                            strict.recall(qa["question"], namespace=bulk_ns)
                        ),
                    }
                )
            # the agent path: each question through the middleware, the exchange recorded
            model = ScriptedChatModel(default=scripted_reply)
            clock = {"now": last + timedelta(days=1)}

            def tick(clock: dict[str, datetime] = clock) -> datetime:
                clock["now"] += timedelta(minutes=2)
                return clock["now"]

            agent = create_agent(
                model,
                middleware=[RaMemMiddleware(memory, clock=tick)],
                context_schema=MemoryContext,
            )
            for qa in questions:
                agent.invoke(
                    {"messages": [("user", qa["question"])]}, context=MemoryContext(live_ns)
                )
            for row, qa in zip(rows[-len(questions) :], questions, strict=True):
                echoed = memory.recall(qa["question"], namespace=live_ns)
                row["echo"] = _score(echoed, row["gold"], turn_of_live)
            print(f"{sid}: {len(questions)} questions asked, recorded and asked again", flush=True)
        store.close()

    def mean(key: str, field: str) -> float:
        return sum(r[key][field] for r in rows) / len(rows)

    table = {
        name: {
            "recall_10": mean(name, "recall_10"),
            "d_at_1": mean(name, "d_at_1"),
            "derived_at_1": mean(name, "derived_at_1"),
        }
        for name in ("bulk", "live", "echo")
    }
    paired = {
        f"{b} minus {a}": {
            field: _paired([r[b][field] for r in rows], [r[a][field] for r in rows])
            for field in ("recall_10", "d_at_1")
        }
        for a, b in (("bulk", "live"), ("live", "echo"))
    }
    sided = [r["anchor_side"] for r in rows if r["anchor_side"] is not None]
    strict_sided = [r["anchor_side_strict"] for r in rows if r["anchor_side_strict"] is not None]
    before_after = {
        "questions_default": len(sided),
        "anchor_side_at_1_default": sum(sided) / len(sided) if sided else None,
        "questions_exclude_anchor": len(strict_sided),
        "anchor_side_at_1_exclude_anchor": (
            sum(strict_sided) / len(strict_sided) if strict_sided else None
        ),
    }
    print(f"\n== the agent path on LoCoMo dev ({len(rows)} questions)")
    print(f"{'memory':8} {'Recall@10':>10} {'D@1':>7} {'recorded at 1':>14}")
    for name, values in table.items():
        print(
            f"{name:8} {values['recall_10']:>10.3f} {values['d_at_1']:>7.3f}"
            f" {values['derived_at_1']:>14.3f}"
        )
    for name, fields in paired.items():
        for field, p in fields.items():
            print(f"{name:16} {field:10} {p['diff']:+.3f} [{p['low']:+.3f}, {p['high']:+.3f}]")
    print(f"before/after: {before_after}")
    result = {
        "command": "python benchmarks/bench_agent_path.py",
        "questions": len(rows),
        "table": table,
        "paired": paired,
        "before_after": before_after,
    }
    path = ROOT / "benchmarks" / "results" / "bench_agent_path.json"
    path.write_text(json.dumps(result, indent=2))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
