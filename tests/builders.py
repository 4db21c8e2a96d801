"""Builders for tests: conversations written as lines, and what a recall found.

``session("S1", datetime(2023, 2, 10, 19), "Alice: My doctor said ...", "Ben: I am ...")``
is a session whose turns are ``S1:1``, ``S1:2``, ... said by the name before the first
colon; ``conversation("friends", *sessions)`` names its participants in order of speaking.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from ramem_core import Conversation, Evidence, Session, Turn


def session(session_id: str, at: datetime, *lines: str) -> Session:
    """A session at ``at`` whose turns are ``lines`` ("Speaker: text"), numbered from 1."""
    turns = []
    for number, line in enumerate(lines, start=1):
        speaker, _, text = line.partition(": ")
        turns.append(Turn(f"{session_id}:{number}", speaker, text))
    return Session(session_id, tuple(turns), at)


def conversation(conversation_id: str, *sessions: Session) -> Conversation:
    """A conversation of ``sessions``; its participants are their speakers, first said first."""
    speakers = dict.fromkeys(t.speaker for s in sessions for t in s.turns)
    return Conversation(conversation_id, tuple(sessions), tuple(speakers))


def memory_for(turn_id: str, **extra: Any) -> dict[str, Any]:
    """An LLM anchorer's memory of one turn, as its prompt asks for it (no times, no people),
    with ``extra`` fields set or replaced."""
    item: dict[str, Any] = {
        "content": f"Restated {turn_id}.",
        "source_ids": [turn_id],
        "event_time": None,
        "mentions": [],
        "participants": [],
        "location": None,
        "entities": [],
        "topic": "",
    }
    item.update(extra)
    return item


def ids(found: Iterable[Evidence]) -> list[str]:
    """The ids of the memories found, in their order."""
    return [e.unit.id for e in found]


def texts(found: Iterable[Evidence]) -> list[str]:
    """The contents of the memories found, in their order."""
    return [e.unit.content for e in found]


def sources(found: Iterable[Evidence]) -> list[str]:
    """The first source turn of each memory found, in their order."""
    return [e.unit.source_ids[0] for e in found]
