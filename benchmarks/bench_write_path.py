"""RaMem's own work per live turn: does ``add_turn`` cost more as its session or its
namespace grows?

    python benchmarks/bench_write_path.py               # turns 10 / 1,500 / 10,000; 1 / 20k
    python benchmarks/bench_write_path.py --quick       # turns 10 / 1,500; 1 / 2k

Own time is an ``add_turn``'s wall time minus the time spent in the store's methods and in
the embedder (both timed by wrapping them): anchoring, session bookkeeping and the in-memory
index update. The store is the in-memory fake and the embedder the hashing fake (384
dimensions, as the default MiniLM), so the figures are RaMem's alone and the run takes
seconds; a real Chroma call and a real embedding are added to each turn in production
(``bench_live.py`` measures those).

Rows:

- one session continued at turn 10, 1,500 and 10,000 (the session before it is ingested in
  one write, then 50 turns are timed one by one);
- a new live session (turns 10-59) in a namespace holding 1 or 20,000 other memories.

Each row is the median and p95 of 50 turns, each scenario built afresh and run ``--repeats``
times (3; the row takes the run with the middle median), so one noisy run does not make a
row. Writes ``benchmarks/results/bench_write_path.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ramem_core import Conversation, RaMem, Session, Turn
from ramem_core.testing import HashEmbedder, InMemoryStore

ROOT = Path(__file__).resolve().parents[1]

RESULT = ROOT / "benchmarks" / "results" / "bench_write_path.json"
START = datetime(2030, 1, 1, 9, 0)
TIMED = 50
WORDS = [
    "garden",
    "job",
    "trip",
    "dentist",
    "sister",
    "piano",
    "lisbon",
    "porto",
    "bread",
    "coffee",
    "river",
    "paint",
]


class Clock:
    """Seconds spent inside wrapped calls."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def wrap(self, call: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            try:
                return call(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - t

        return timed


class TimedStore:
    """A store whose every method call is timed (attributes pass through)."""

    def __init__(self, store: InMemoryStore, clock: Clock) -> None:
        self._store, self._clock = store, clock

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._store, name)
        return self._clock.wrap(value) if callable(value) and name != "embedder" else value


def _text(i: int) -> str:
    a, b, c = (WORDS[(i * k) % len(WORDS)] for k in (1, 3, 7))
    return f"message {i}: I talked about the {a}, the {b} and the {c} today"


def _memory() -> tuple[RaMem, Clock]:
    clock = Clock()
    embedder = HashEmbedder(384)
    embedder.embed = clock.wrap(embedder.embed)  # type: ignore[method-assign]
    store = TimedStore(InMemoryStore(embedder), clock)
    return RaMem(store), clock  # type: ignore[arg-type]


def _session(cid: str, sid: str, turns: int, start: datetime, speaker: str = "user") -> Session:
    return Session(
        sid,
        tuple(
            Turn(f"{sid}:{i}", speaker, _text(i), start + timedelta(seconds=20 * i))
            for i in range(turns)
        ),
        start,
    )


def own_ms(memory: RaMem, clock: Clock, first: int, at: datetime, cid: str) -> list[float]:
    """Own milliseconds of :data:`TIMED` add_turn calls from turn ``first`` on."""
    out = []
    for i in range(first, first + TIMED):
        clock.seconds = 0.0
        t = time.perf_counter()
        memory.add_turn("user", _text(i), at=at + timedelta(seconds=20 * i), conversation_id=cid)
        out.append((time.perf_counter() - t - clock.seconds) * 1000)
    return out


def one_session(turns: int) -> list[float]:
    """A session of ``turns`` turns ingested at once, then continued turn by turn."""
    memory, clock = _memory()
    if turns:
        session = _session("live", "live-s1", turns, START)
        memory.add_conversation(Conversation("live", (session,), ("user",)))
    memory.recall("warm up the snapshot")
    return own_ms(memory, clock, turns, START, "live")


def in_namespace(others: int) -> list[float]:
    """A new live session (turns 10-59) beside ``others`` memories of another conversation."""
    memory, clock = _memory()
    per = 100
    sessions = tuple(
        _session("old", f"old-s{n}", min(per, others - n * per), START - timedelta(days=400 - n))
        for n in range((others + per - 1) // per)
    )
    if sessions:
        memory.add_conversation(Conversation("old", sessions, ("user",)))
    for i in range(10):
        memory.add_turn("user", _text(i), at=START + timedelta(seconds=20 * i))
    return own_ms(memory, clock, 10, START, "live")


def _row(name: str, values: list[float]) -> dict[str, Any]:
    ordered = sorted(values)
    return {
        "row": name,
        "own_ms_p50": round(statistics.median(values), 3),
        "own_ms_p95": round(ordered[int(0.95 * (len(ordered) - 1))], 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULT)
    args = parser.parse_args()
    session_sizes = (10, 1500) if args.quick else (10, 1500, 10_000)
    namespace_sizes = (1, 2000) if args.quick else (1, 20_000)

    def middle(runs: list[list[float]]) -> list[float]:
        return sorted(runs, key=statistics.median)[len(runs) // 2]

    rows = []
    for turns in session_sizes:
        print(f"one session at turn {turns:,} ...", flush=True)
        runs = [one_session(turns) for _ in range(args.repeats)]
        rows.append(_row(f"session turn {turns}", middle(runs)))
    for others in namespace_sizes:
        print(f"namespace of {others:,} memories ...", flush=True)
        runs = [in_namespace(others) for _ in range(args.repeats)]
        rows.append(_row(f"namespace {others} memories", middle(runs)))
    base = rows[0]["own_ms_p50"]
    for row in rows:
        row["ratio_to_turn_10"] = round(row["own_ms_p50"] / base, 2)
    print(f"\n{'row':<28} {'own p50 ms':>11} {'own p95 ms':>11} {'x turn 10':>10}")
    for row in rows:
        print(
            f"{row['row']:<28} {row['own_ms_p50']:>11.3f} {row['own_ms_p95']:>11.3f}"
            f" {row['ratio_to_turn_10']:>10.2f}"
        )
    result = {
        "command": "python benchmarks/bench_write_path.py" + (" --quick" if args.quick else ""),
        "timed_turns": TIMED,
        "repeats": args.repeats,
        "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
