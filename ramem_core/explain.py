"""One self-contained HTML page that explains a recall: the namespace's timeline of sessions
and events as inline SVG, the question's recall frame drawn on it (grounded windows, the
anchor, now), and the ranked evidence with its "why valid" readings beside content-only's
ranking. No script, style sheet, font or image is loaded from anywhere: the page is one file.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from html import escape

from ramem_core.frames import RuleFrameInducer
from ramem_core.index.snapshot import Snapshot, session_spans
from ramem_core.memory import RaMem
from ramem_core.retrieval import CONTENT_ONLY, Retriever
from ramem_core.retrieval.supersession import asks_latest_value
from ramem_core.store.chroma import check_namespace
from ramem_core.synthesis import coordinates, validity
from ramem_core.temporal import describe
from ramem_core.types import DEFAULT_K, Evidence, MemoryUnit, Recall, RecallFrame, TimeConstraint
from ramem_core.validation import check_moment

WIDTH, LEFT, RIGHT, ROW, TOP = 1000, 150, 20, 44, 40
SESSION = "#4a78c2"
"""The sessions' colour (a browser test finds it in a screenshot)."""
WINDOW = "#2e9e5b"
"""A grounded window's colour (drawn at 25 % opacity)."""
NOW = "#d62728"
ANCHOR = "#8e44ad"
EVIDENCE = "#f39c12"


@dataclass(frozen=True, slots=True)
class SessionMark:
    """A session on the timeline: its conversation (the row), id and span."""

    conversation_id: str
    session_id: str
    start: datetime
    end: datetime


def sessions_of(units: Sequence[MemoryUnit]) -> list[SessionMark]:
    """The sessions the memories were said in, each spanning its memories' said times
    (:func:`~ramem_core.index.snapshot.session_spans`)."""
    return [
        SessionMark(conversation, session, span.start, span.end)
        for (conversation, session), span in sorted(session_spans(units).items())
    ]


class _Scale:
    def __init__(self, low: datetime, high: datetime) -> None:
        pad = max((high - low) * 0.03, timedelta(hours=12))
        self.low, self.high = low - pad, high + pad

    def x(self, moment: datetime) -> float:
        moment = min(max(moment, self.low), self.high)
        share = (moment - self.low) / (self.high - self.low)
        return round(LEFT + share * (WIDTH - LEFT - RIGHT), 1)


def _ticks(scale: _Scale) -> list[datetime]:
    days = (scale.high - scale.low).days
    step = 1 if days <= 400 else 3 if days <= 1500 else 12
    tick = datetime(scale.low.year, scale.low.month, 1)
    out = []
    while tick <= scale.high:
        if tick >= scale.low:
            out.append(tick)
        month = tick.month - 1 + step
        tick = datetime(tick.year + month // 12, month % 12 + 1, 1)
    return out


def timeline(sessions: Sequence[SessionMark], found: Recall, content: Sequence[Evidence]) -> str:
    """The SVG timeline: one row per conversation, its sessions, the top evidence, the
    frame's windows, its anchor and now."""
    frame = found.frame
    rows = sorted({s.conversation_id for s in sessions}) or [""]
    windows = [t for t in frame.times if t.window is not None]
    scale = _scale_of(sessions, windows, frame.now)
    height = TOP + ROW * len(rows) + 40
    bottom = TOP + ROW * len(rows)
    row_of = {name: i for i, name in enumerate(rows)}
    return "".join(
        [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
            f'viewBox="0 0 {WIDTH} {height}" role="img" aria-label="timeline">',
            f'<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="#ffffff"/>',
            *_windows(windows, scale, bottom),  # under everything else
            *_axis(rows, scale, bottom),
            *_sessions(sessions, row_of, scale),
            *_evidence(found.evidence[:10], row_of, scale),
            *_anchors(frame, [*found.evidence, *content], scale, bottom),
            "</svg>",
        ]
    )


def _scale_of(
    sessions: Sequence[SessionMark], windows: Sequence[TimeConstraint], now: datetime | None
) -> _Scale:
    moments = [m for s in sessions for m in (s.start, s.end)]
    moments += [m for t in windows if t.window is not None for m in (t.window.start, t.window.end)]
    if now is not None:
        moments.append(now)
    if not moments:
        moments = [datetime(2000, 1, 1), datetime(2000, 1, 2)]
    return _Scale(min(moments), max(moments))


def _windows(windows: Sequence[TimeConstraint], scale: _Scale, bottom: int) -> list[str]:
    parts = []
    for t in windows:
        assert t.window is not None
        x1, x2 = scale.x(t.window.start), scale.x(t.window.end)
        fill, opacity = (WINDOW, 0.25) if t.grounded else ("#999999", 0.15)
        label = f"{'window' if t.grounded else 'not used'}: {t.text}"
        parts.append(
            f'<rect class="window" x="{x1}" y="{TOP - 14}" width="{max(x2 - x1, 3)}" '
            f'height="{bottom - TOP + 18}" fill="{fill}" fill-opacity="{opacity}">'
            f"<title>{escape(label)} ({escape(describe(t.window))})</title></rect>"
            f'<text x="{x1 + 2}" y="{TOP - 18}" font-size="11" fill="#1d6b3c">'
            f"{escape(label[:60])}</text>"
        )
    return parts


def _axis(rows: Sequence[str], scale: _Scale, bottom: int) -> list[str]:
    parts = [
        f'<line x1="{LEFT}" y1="{bottom + 4}" x2="{WIDTH - RIGHT}" y2="{bottom + 4}" '
        'stroke="#444" stroke-width="1"/>'
    ]
    for tick in _ticks(scale):
        x = scale.x(tick)
        parts.append(
            f'<line x1="{x}" y1="{bottom + 4}" x2="{x}" y2="{bottom + 9}" stroke="#444"/>'
            f'<text x="{x}" y="{bottom + 22}" font-size="10" text-anchor="middle" '
            f'fill="#444">{tick:%b %Y}</text>'
        )
    for i, name in enumerate(rows):
        y = TOP + ROW * i
        parts.append(
            f'<text x="{LEFT - 8}" y="{y + 15}" font-size="11" text-anchor="end" '
            f'fill="#222">{escape(name[:22])}</text>'
        )
    return parts


def _sessions(sessions: Sequence[SessionMark], row_of: dict[str, int], scale: _Scale) -> list[str]:
    parts = []
    for s in sessions:
        y = TOP + ROW * row_of[s.conversation_id] + 4
        x1, x2 = scale.x(s.start), scale.x(s.end)
        parts.append(
            f'<rect class="session" x="{x1}" y="{y}" width="{max(x2 - x1, 5)}" height="14" '
            f'fill="{SESSION}"><title>session {escape(s.session_id)}: '
            f"{s.start:%d %b %Y} - {s.end:%d %b %Y}</title></rect>"
        )
    return parts


def _evidence(evidence: Sequence[Evidence], row_of: dict[str, int], scale: _Scale) -> list[str]:
    parts = []
    placed: dict[tuple[int, float], int] = {}  # memories of one session side by side
    for e in evidence:
        span = e.unit.context.session_span
        if span is None:
            continue
        row = row_of.get(e.unit.context.conversation_id, 0)
        at = scale.x(span.end)
        beside = placed[(row, at)] = placed.get((row, at), -1) + 1
        x = round(at + 15 * beside, 1)
        y = TOP + ROW * row + 30  # under the sessions
        parts.append(
            f'<circle class="evidence" cx="{x}" cy="{y}" r="7" fill="{EVIDENCE}" '
            f'stroke="#7a4d00"><title>#{e.rank}: {escape(e.unit.content[:120])}</title></circle>'
            f'<text x="{x}" y="{y + 4}" font-size="9" text-anchor="middle">{e.rank}</text>'
        )
    return parts


def _anchors(
    frame: RecallFrame, shown: Sequence[Evidence], scale: _Scale, bottom: int
) -> list[str]:
    """The frame's anchors (among the memories shown) and now."""
    parts = []
    for unit_id in {t.anchor_id for t in frame.times if t.anchor_id}:
        anchor = next((e.unit for e in shown if e.unit.id == unit_id), None)
        if anchor is not None and anchor.context.session_span is not None:
            x = scale.x(anchor.context.session_span.end)
            parts.append(
                f'<line class="anchor" x1="{x}" y1="{TOP - 10}" x2="{x}" y2="{bottom}" '
                f'stroke="{ANCHOR}" stroke-width="2" stroke-dasharray="5,3"/>'
                f'<text x="{x + 3}" y="{bottom - 2}" font-size="11" fill="{ANCHOR}">anchor</text>'
            )
    if frame.now is not None:
        x = scale.x(frame.now)
        parts.append(
            f'<line class="now" x1="{x}" y1="{TOP - 24}" x2="{x}" y2="{bottom + 4}" '
            f'stroke="{NOW}" stroke-width="2"/>'
            f'<text x="{x - 3}" y="{TOP - 27}" font-size="11" text-anchor="end" '
            f'fill="{NOW}">now</text>'
        )
    return parts


def _frame_lines(frame: RecallFrame) -> list[str]:
    lines = [f"need: {frame.need}"]
    if frame.now is not None:
        lines.append(f"now: {frame.now.day} {frame.now:%B %Y, %H:%M}")
    for t in frame.times:
        window = describe(t.window) if t.window is not None else "-"
        state = "grounded" if t.grounded else "not used"
        lines.append(f"time {t.text!r} -> {window} ({state}: {t.reason})")
    if frame.participants:
        lines.append(f"participants: {', '.join(frame.participants)}")
    if frame.asks_now:
        lines.append(
            "asks about now: the latest statement of each superseded state first, and a value"
            " restated on a later day read latest first"
        )
    elif asks_latest_value(frame):
        lines.append("asks for a value at no time in particular: its latest restatement first")
    lines.extend(f"part: {part}" for part in frame.parts)
    if not frame.is_grounded:
        lines.append("no grounded condition: content retrieval only")
    return lines


def _table(evidence: Sequence[Evidence], *, why: bool) -> str:
    head = "<tr><th>#</th><th>said</th><th>event</th><th>memory</th>"
    head += "<th>why valid</th></tr>" if why else "</tr>"
    rows = []
    for e in evidence:
        coords = coordinates(e.unit, said=e.said)
        cells = [
            str(e.rank),
            coords.get("said", "?"),
            coords.get("event", ""),
            e.unit.content,
        ]
        if why:
            readings = validity(e)
            cells.append(
                "; ".join(f"{label}: {text}" for label, text in readings) or "content match"
            )
        rows.append("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>")
    return f"<table>{head}{''.join(rows)}</table>"


_STYLE = """
body { font-family: sans-serif; margin: 24px; color: #222; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 24px; }
.frame { background: #f4f6f8; padding: 8px 12px; font-family: monospace; font-size: 13px; }
.columns { display: flex; gap: 24px; } .columns > div { flex: 1; min-width: 0; }
table { border-collapse: collapse; font-size: 12px; width: 100%; }
td, th { border: 1px solid #ccc; padding: 3px 5px; vertical-align: top; text-align: left; }
th { background: #eef1f4; }
.legend span { display: inline-block; margin-right: 14px; font-size: 12px; }
"""


def page(
    memory: RaMem,
    question: str,
    *,
    k: int = DEFAULT_K,
    at: datetime | None = None,
    namespace: str | None = None,
) -> str:
    """One self-contained HTML page explaining ``memory``'s recall of ``question``: the
    namespace's timeline of sessions and events (inline SVG) with the recall frame drawn on
    it (grounded windows, the anchor, now), and the ranked evidence with its "why valid"
    readings beside content-only's ranking. Nothing in it is loaded from the network, and
    nothing is read from the store beyond what the memory's cached snapshot holds."""
    ns = check_namespace(namespace) if namespace is not None else memory.namespace
    found = memory.recall(question, k=k, at=at, namespace=ns)
    moment = check_moment(at, "at") if at is not None else None
    # content-only's ranking over the memory's own snapshot, indexed by its own words alone
    units, vectors = memory.snapshots.read(ns, lambda snap: (list(snap.units), snap.vectors))
    plain_snap = Snapshot(units, vectors, CONTENT_ONLY.keys)
    content = Retriever(memory.retriever.embedder, CONTENT_ONLY)
    plain = content.recall(plain_snap, question, RuleFrameInducer(), k, at=moment)
    return render(question, found, plain.evidence, sessions_of(units), ns)


async def apage(
    memory: RaMem,
    question: str,
    *,
    k: int = DEFAULT_K,
    at: datetime | None = None,
    namespace: str | None = None,
) -> str:
    """:func:`page` in a worker thread."""
    return await asyncio.to_thread(page, memory, question, k=k, at=at, namespace=namespace)


def render(
    question: str,
    found: Recall,
    content: Sequence[Evidence],
    sessions: Sequence[SessionMark],
    namespace: str,
) -> str:
    """The whole HTML page (one string, nothing loaded from elsewhere)."""
    frame_html = "<br>".join(escape(line) for line in _frame_lines(found.frame))
    legend = "".join(
        f'<span><svg width="12" height="12"><rect width="12" height="12" fill="{color}"/>'
        f"</svg> {label}</span>"
        for color, label in (
            (SESSION, "session"),
            (WINDOW, "grounded window"),
            (EVIDENCE, "evidence (rank)"),
            (ANCHOR, "anchor"),
            (NOW, "now"),
        )
    )
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>RaMem explains: {escape(question)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{escape(question)}</h1>"
        f"<p>namespace <b>{escape(namespace)}</b>: {len(sessions)} sessions</p>"
        f"<h2>Recall frame</h2><div class='frame'>{frame_html}</div>"
        f"<h2>Timeline</h2><div class='legend'>{legend}</div>"
        f"{timeline(sessions, found, content)}"
        "<div class='columns'>"
        f"<div><h2>RaMem: valid first</h2>{_table(found.evidence, why=True)}</div>"
        f"<div><h2>Content-only (dense + BM25)</h2>{_table(content, why=False)}</div>"
        "</div></body></html>"
    )
