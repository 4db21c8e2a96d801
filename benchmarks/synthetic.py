"""The synthetic memories and questions the scale benchmarks share (``bench_core.py``,
``ab_recall.py``, ``bench_live.py``, ``bench_parts.py``, the audit's latency): one home, so
those scripts need not import each other."""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from ramem_core import Conversation, Session, Turn

NAMES = ["Alice", "Ben", "Carol", "Dmitri", "Elena", "Farah", "Gus", "Hana"]
TOPICS = [
    "the garden",
    "a marathon",
    "the new job",
    "a trip to Lisbon",
    "the doctor",
    "a painting class",
    "the dog",
    "a concert",
    "the kitchen renovation",
    "a birthday party",
    "the book club",
    "a camping weekend",
    "the wedding",
    "a cooking course",
    "the piano lessons",
]
TIMES = ["yesterday", "last week", "two days ago", "last month", "on the weekend", "", "", ""]
QUERIES = [
    "What did {name} say about {topic} last August?",
    "What happened with {topic} in March?",
    "How did {name} feel about {topic}?",
    "What did {name} do after {topic}?",
    "Tell me about {topic}.",
    "How many {topic} plans does {name} have now?",
]


def synthetic_conversation(turns: int, seed: int = 7) -> Conversation:
    """A long multi-session conversation over two years with recurring, confusable topics."""
    rng = random.Random(seed)
    start = datetime(2022, 1, 3, 18, 0)
    sessions = []
    per_session = 20
    for s in range(max(1, turns // per_session)):
        when = start + timedelta(days=s * 730 / max(1, turns // per_session), hours=rng.random())
        sid = f"S{s + 1}"
        session_turns = []
        for t in range(per_session):
            speaker = rng.choice(NAMES)
            other = rng.choice(NAMES)
            topic = rng.choice(TOPICS)
            time_words = rng.choice(TIMES)
            text = (
                f"{other}, {time_words} I kept thinking about {topic} "
                f"and item {rng.randint(1, 999)}"
                f", it was {rng.choice(['great', 'hard', 'fun', 'strange', 'calm'])}."
            )
            session_turns.append(Turn(f"{sid}:{t + 1}", speaker, text))
        sessions.append(Session(sid, tuple(session_turns), when))
    return Conversation("synthetic", tuple(sessions), tuple(NAMES))


def distinct_queries(n: int, seed: int) -> list[str]:
    """``n`` different questions from the templates (at most 720), in random order: a timed
    recall must not find its question's vector cached from an earlier one."""
    combos = [(q, name, topic) for q in QUERIES for name in NAMES for topic in TOPICS]
    picked = random.Random(seed).sample(combos, min(n, len(combos)))
    return [q.format(name=name, topic=topic) for q, name, topic in picked]
