"""Memory units <-> Chroma records. Chroma is the single source of truth, so this is lossless.

Chroma metadata rules this follows: no ``None`` values (unknown times are ``0`` with a
``has_*`` flag), list values must be non-empty (participants and entities fall back to a
placeholder), and lists are filtered with ``$contains``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ramem_core.reading import Reading
from ramem_core.types import (
    EpisodicContext,
    Granularity,
    Kind,
    MemoryUnit,
    TimeMention,
    TimeSpan,
    from_epoch,
    to_epoch,
)

NONE = "-"  # placeholder for an empty list: Chroma rejects empty list metadata


def _span_fields(prefix: str, span: TimeSpan | None) -> dict[str, Any]:
    """A span as flat fields; with its middle and length too, which Chroma filters cannot
    compute from the bounds ("most of the event lies in the window")."""
    if span is None:
        return {
            f"has_{prefix}": False,
            f"{prefix}_start": 0,
            f"{prefix}_end": 0,
            f"{prefix}_mid": 0,
            f"{prefix}_length": 0,
            f"{prefix}_granularity": "",
        }
    start, end = to_epoch(span.start), to_epoch(span.end)
    return {
        f"has_{prefix}": True,
        f"{prefix}_start": start,
        f"{prefix}_end": end,
        f"{prefix}_mid": start + (end - start) // 2,
        f"{prefix}_length": end - start,
        f"{prefix}_granularity": span.granularity.value,
    }


def _span_from(prefix: str, meta: Mapping[str, Any]) -> TimeSpan | None:
    if not meta.get(f"has_{prefix}"):
        return None
    return TimeSpan(
        from_epoch(int(meta[f"{prefix}_start"])),
        from_epoch(int(meta[f"{prefix}_end"])),
        Granularity(meta[f"{prefix}_granularity"]),
    )


def to_metadata(unit: MemoryUnit) -> dict[str, Any]:
    """Flat Chroma metadata holding every episodic field of ``unit``."""
    ctx = unit.context
    mentions = [
        [
            m.text,
            to_epoch(m.span.start),
            to_epoch(m.span.end),
            m.span.granularity.value,
            m.char_start,
            m.char_end,
        ]
        for m in ctx.mentions
    ]
    return {
        "conversation_id": ctx.conversation_id,
        "session_id": ctx.session_id,
        "session_index": ctx.session_index,
        "turn_index": ctx.turn_index,
        **_span_fields("session", ctx.session_span),
        **_span_fields("event", ctx.event_time),
        "mentions": json.dumps(mentions),
        "participants": list(ctx.participants) or [NONE],
        "entities": list(ctx.entities) or [NONE],
        "speaker": ctx.speaker,
        "location": ctx.location or "",
        "topic": ctx.topic,
        "source_ids": list(unit.source_ids) or [NONE],
        "kind": ctx.kind.value,
        **({"state": ctx.state} if ctx.state else {}),
        **({"reading": ctx.reading.encode()} if ctx.reading is not None else {}),
        **({"payload": unit.payload} if unit.payload else {}),
    }


def _list(meta: Mapping[str, Any], key: str) -> tuple[str, ...]:
    return tuple(str(v) for v in meta.get(key) or () if v != NONE)


def from_record(unit_id: str, document: str, meta: Mapping[str, Any]) -> MemoryUnit:
    """Rebuild the :class:`MemoryUnit` stored under ``unit_id``."""
    stored = str(meta.get("mentions") or "[]")
    mentions = tuple(
        TimeMention(text, TimeSpan(from_epoch(s), from_epoch(e), Granularity(g)), cs, ce)
        for text, s, e, g, cs, ce in (json.loads(stored) if stored != "[]" else ())
    )
    context = EpisodicContext(
        session_id=str(meta["session_id"]),
        conversation_id=str(meta["conversation_id"]),
        session_span=_span_from("session", meta),
        event_time=_span_from("event", meta),
        mentions=mentions,
        participants=_list(meta, "participants"),
        location=str(meta.get("location") or "") or None,
        entities=_list(meta, "entities"),
        topic=str(meta.get("topic") or ""),
        speaker=str(meta.get("speaker") or ""),
        session_index=int(meta.get("session_index") or 0),
        turn_index=int(meta.get("turn_index") or 0),
        kind=Kind(str(meta.get("kind") or Kind.STATEMENT.value)),  # older records: statements
        state=str(meta.get("state") or ""),
        reading=Reading.decode(str(meta["reading"])) if meta.get("reading") else None,
    )
    return MemoryUnit(
        unit_id, document, context, _list(meta, "source_ids"), str(meta.get("payload") or "")
    )
