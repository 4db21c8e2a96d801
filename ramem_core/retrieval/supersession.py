"""States over time in stage 3: which candidate statements supersede which, a question about
now that takes the latest of each chain first, and a question about a past time that finds a
lasting state valid until it was superseded.

Supersession is derived here, when a question is read, from the candidates' readings (whose
state, how it is said: :mod:`ramem_core.reading`), words, speakers, times and vectors, weighed
by the replacement model (:mod:`ramem_core.replacement`); nothing is stored, so deleting the
later statement restores the earlier one. A replacement the model finds likely enough to be
told (:attr:`~ramem_core.replacement.Replacement.label`) labels the earlier statement; one
likely enough to order by (:attr:`~ramem_core.replacement.Replacement.order`) only puts the
later first for a question about now. It only adds: a superseded memory stays in the
list, right after its successor, labelled (:class:`~ramem_core.types.Supersession`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import numpy.typing as npt

from ramem_core.index.snapshot import Snapshot
from ramem_core.reading import PLAIN
from ramem_core.replacement import Replacement, may_replace, statements
from ramem_core.retrieval.conditions import Conditions
from ramem_core.retrieval.kinds import Kinds
from ramem_core.states import asks_value, values
from ramem_core.temporal import day_span, describe
from ramem_core.types import MemoryUnit, RecallFrame, Supersession, TimeSpan


def _said(unit: MemoryUnit) -> tuple[datetime, int]:
    """When ``unit`` was said, as an order: its own stored span's end, then its turn."""
    span = unit.context.session_span
    return (span.end if span is not None else datetime.min, unit.context.turn_index)


def _began(snap: Snapshot, row: int, kinds: Kinds | None = None) -> TimeSpan | None:
    """When the lasting state stated at ``row`` begins, when it says so ("I moved to Porto
    last week!": the week before it was said; "I start at Google next month": that month):
    its event time; else ``None`` (an appointment's event time is the appointment, not when
    it was set)."""
    began = snap.units[row].context.event_time
    lasting = kinds.lasting if kinds is not None else snap.columns["lasting"]
    return began if began is not None and lasting[row] else None


@dataclass(frozen=True, slots=True)
class Chains:
    """For each candidate statement that a later one may have replaced, those later ones in
    the order they were said, each with the probability that it did
    (:class:`~ramem_core.replacement.Replacement`) and whether the two speak of one kind of
    state (:mod:`ramem_core.retrieval.kinds`)."""

    later: Mapping[int, list[tuple[int, float, bool]]] = field(default_factory=dict)

    def at(self, threshold: float) -> dict[int, list[int]]:
        """The chains of the replacements at least ``threshold`` likely."""
        return self._where(lambda row, later, p, kind: p >= threshold)

    def ordered(
        self,
        threshold: float,
        bits: npt.NDArray[np.int64],
        asked: int,
        any_kind: float | None = None,
    ) -> dict[int, list[int]]:
        """The chains to order a question about now by: the replacements at least
        ``threshold`` likely between statements of one kind of state, or, when the question
        asks about a kind (``asked``, bits), between a statement of that kind and one whose
        kind was not read at all ("Ski week is Banff now" names no date, so no appointment;
        "Got the keys to a cottage in Haarlem" no home); and those at least ``any_kind``
        likely whatever their kinds (:attr:`~ramem_core.retrieval.config.RetrievalConfig.
        order_any_kind`). ``bits``: each row's kinds."""
        anyway = math.inf if any_kind is None else max(any_kind, threshold)
        return self._where(
            lambda row, later, p, kind: (
                p >= anyway
                or (
                    p >= threshold
                    and (kind or _one_unread(int(bits[row]), int(bits[later]), asked))
                )
            )
        )

    def _where(self, keep: Callable[[int, int, float, bool], bool]) -> dict[int, list[int]]:
        """Each chain cut to the later statements ``keep(row, later, p, one_kind)`` keeps."""
        out = {}
        for row, found in self.later.items():
            rows = [r for r, p, kind in found if keep(row, r, p, kind)]
            if rows:
                out[row] = rows
        return out


def _one_unread(a: int, b: int, asked: int) -> bool:
    """One of two statements' kinds (bits ``a``, ``b``) is one asked about, the other's was
    not read."""
    return bool(asked) and ((a & asked != 0 and b == 0) or (b & asked != 0 and a == 0))


def chains(
    snap: Snapshot,
    rows: Iterable[int],
    model: Replacement,
    kinds: Kinds | None = None,
) -> Chains:
    """The statements among ``rows`` that later ones may have replaced: each pair of
    statements by one speaker, the later said after the earlier, that may speak of one
    owner's state and is no story of a time before the earlier was said
    (:func:`~ramem_core.replacement.may_replace`), weighed by ``model``; a
    pair that names the same state (the LLM anchorer's ``updates``:
    :attr:`~ramem_core.types.EpisodicContext.state`) is a replacement whatever its words,
    unless that model said the later one replaces nothing
    (:attr:`~ramem_core.reading.Reading.replaces`). ``kinds``: the kinds of state of the
    memories (:class:`~ramem_core.retrieval.kinds.Kinds`; by default their words')."""
    if snap.vectors is None:
        return Chains()
    at = np.fromiter(dict.fromkeys(rows), dtype=np.int64)
    at = at[~snap.derived[at]] if len(at) else at
    if len(at) < 2:
        return Chains()
    columns = snap.columns
    said_at = np.asarray(columns["said_at"][at], dtype=np.int64)
    said = said_at * 100_000 + np.asarray(columns["turn"][at], dtype=np.int64)  # then the turn
    speaker = columns["speaker"][at]
    later = (speaker[:, None] == speaker[None, :]) & (said[None, :] > said[:, None])
    i, j = np.nonzero(later)
    if not len(i):
        return Chains()
    bits = (kinds or Kinds.of_words(snap, "")).bits
    s = statements([snap.units[int(r)] for r in at], snap.vectors[at], bits[at])
    p = np.zeros(len(i))
    keep = may_replace(s, i, j)
    p[keep] = model.probabilities(s, i[keep], j[keep])
    keys = columns["state_key"][at]
    named = (keys[i] == keys[j]) & (keys[i] != 0)  # one named state: as the model answered
    if named.any():  # None: not asked (a record of before), a replacement as ever
        answer = {
            b: (snap.units[int(at[b])].context.reading or PLAIN).replaces
            for b in set(j[named].tolist())
        }
        denied = np.array([answer.get(b) is False for b in j.tolist()])
        p[named] = np.where(denied[named], 0.0, 1.0)
    shared = ((s.kinds[i] & s.kinds[j]) != 0) | named
    found: dict[int, list[tuple[int, float, bool]]] = {}
    pairs = zip(i.tolist(), j.tolist(), p.tolist(), shared.tolist(), strict=True)
    for a, b, q, kind in sorted(pairs, key=lambda t: said[t[1]]):
        if q > 0:
            found.setdefault(int(at[a]), []).append((int(at[b]), q, kind))
    return Chains(found)


def _of_kind(snap: Snapshot, rows: Sequence[int], asked: int, kinds: Kinds | None) -> list[int]:
    """The rows among ``rows`` that speak of a kind of state in ``asked`` (bits), or all of
    them when ``asked`` is none or none does ("I live in Lisbon and work at Acme" is
    superseded as a home by "I moved to Porto", as a job by "I start at Google")."""
    bits = (kinds or Kinds.of_words(snap, "")).bits
    fitting = [row for row in rows if asked & int(bits[row])] if asked else []
    return fitting or list(rows)


def successors_for(
    snap: Snapshot,
    chain: Mapping[int, list[int]],
    query: str,
    now: datetime | None = None,
    kinds: Kinds | None = None,
) -> dict[int, int]:
    """For each superseded statement of ``chain`` (:func:`chains`), the latest successor of
    the kind of state ``query`` asks about (any kind when it asks about none); with ``now``,
    only successors whose state has begun by then ("I start at Google next month" does not
    yet supersede "I work at Acme" before that month). ``kinds``: as :func:`chains`."""
    kinds = kinds or Kinds.of_words(snap, query)
    out = {}
    for row, later in chain.items():
        if now is not None:
            later = [
                r for r in later if (began := _began(snap, r, kinds)) is None or began.start <= now
            ]
        if later:
            out[row] = _of_kind(snap, later, kinds.asked, kinds)[-1]
    return out


def asks_latest_value(frame: RecallFrame) -> bool:
    """True when the latest restatement answers ``frame``: it asks about now ("How many coins
    do I have?"), or for a value at no time in particular (no grounded time: "How many
    sessions did I attend?", "the amount I was pre-approved for": a person's latest account of
    a count corrects the earlier ones); never when it asks for the earlier value."""
    if frame.asks_earlier:
        return False
    return frame.asks_now or (not frame.grounded_times and asks_value(frame.query))


def restated(
    snap: Snapshot, frame: RecallFrame, rows: Sequence[int], share: float
) -> list[tuple[list[int], list[int]]]:
    """For a question about a value as it is now ("How many coins do I have?", "What time do I
    wake up on Saturdays?"), the statements among ``rows`` that state it, as one chain per
    speaker: statements whose own words hold at least ``share`` of the question's words,
    weighted by rarity (BM25's idf over the namespace), and which state a value of their own
    (:func:`~ramem_core.states.values`, not one the question names) when the question asks
    for one (:func:`~ramem_core.states.asks_value`). A chain needs statements said on two or
    more days; those said on the latest of them restate the value last ("I have 37 coins",
    days later "I have 38"). Each chain as (its statements of the latest day, those of
    earlier days), for :func:`latest_day_first`. Read off the pool's own words: nothing is
    stored."""
    index = snap.index
    counts = index.own_counts
    states = snap.columns["states"]
    # statements of something that can change, not questions or replies
    statements = [row for row in dict.fromkeys(rows) if states[row] and not snap.derived[row]]
    said = set().union(*(counts[row].keys() for row in statements))
    # the question's words some statement holds: the others tell no statement from another
    words = index.tokenize(frame.need or frame.query)
    asked = [term for term in dict.fromkeys(words) if term in said]
    weight = {term: index.own.idf(term) for term in asked}
    total = sum(weight.values())
    if len(asked) < 2 or total <= 0:
        return []
    value = asks_value(frame.query)
    named = values(frame.query)
    speakers = snap.columns["speaker"]  # as chains tell speakers: case, punctuation aside
    members: dict[int, list[tuple[datetime, int]]] = {}
    for row in statements:
        unit = snap.units[row]
        said_here = counts[row]  # (decoded once: a loaded snapshot reads it off its file)
        covered = sum(weight[t] for t in asked if t in said_here)
        if covered < share * total or (value and not values(unit.content) - named):
            continue
        members.setdefault(int(speakers[row]), []).append((_said(unit)[0], row))
    out = []
    for chain in members.values():
        last_day = max(said.date() for said, _ in chain)
        later = [row for said, row in chain if said.date() == last_day]
        earlier = [row for said, row in chain if said.date() < last_day]
        if earlier:
            out.append((later, earlier))
    return out


def held_through(
    snap: Snapshot,
    frame: RecallFrame,
    conditions: Conditions,
    rows: Sequence[int],
    chain: Mapping[int, list[int]],
    kinds: Kinds | None = None,
) -> dict[int, str]:
    """The rows among ``rows`` that state a lasting state ("I live in Lisbon") of the kind
    the question asks about ("Where did I live in April?") held during one of the frame's
    windows: from when it was said, or when it says the state began ("I moved to Porto last
    week"), when it is said as a fact of the speaker's own (:mod:`ramem_core.reading`: never
    "back in 2016 I worked at a bakery", "I might apply to Globex" or "my husband started at
    Initech"), until it was first superseded as that kind of state (``chain``: when the
    successor's state began, if it says, else when the successor was said; one of the kind
    asked about if any, else any that may have replaced it: a kind missed must not make the
    state look held) or until the question's now; with the reason in words."""
    kinds = kinds or Kinds.of_words(snap, frame.query)
    asked = kinds.asked
    if not conditions.windows or conditions.exact is None or not asked:
        return {}  # only a question about a lasting state reads one over its interval
    now = frame.now or datetime.max
    out: dict[int, str] = {}
    for row in rows:
        ctx = snap.unit(row).context
        if ctx.session_span is None or not kinds.lasting[row]:
            continue  # a statement of a lasting state (never a question or a reply)
        if not asked & int(kinds.bits[row]):
            continue  # a lasting state of another kind than the question asks about
        reading = ctx.reading or PLAIN
        if reading.mood or reading.owner:
            continue  # a story of back then, a maybe, a plan, a question; somebody else's
        began = _began(snap, row, kinds)  # "I moved to Porto last week": held from that week on
        start = began.start if began is not None else ctx.session_span.start
        begun_by = (began or ctx.session_span).end  # "last week": by the end of that week
        end, until = now, ""
        if row in chain:  # until the first successor's state began, or else was said
            later = _of_kind(snap, chain[row], asked, kinds)[0]
            ended = _began(snap, later, kinds)
            end = ended.start if ended is not None else _said(snap.units[later])[0]
            until = describe(ended if ended is not None else day_span(end))
        if end < start:
            continue
        held = TimeSpan(start, end, ctx.session_span.granularity)
        since = f"began {describe(began)}" if began else f"stated {describe(ctx.session_span)}"
        for text, window in conditions.exact:
            if held.overlaps(window) and end > window.start:  # not ended as it began
                out[row] = _held(since, until, text, begun_by, end, window)
                break
    return out


def _held(
    since: str, until: str, asked: str, begun_by: datetime, end: datetime, window: TimeSpan
) -> str:
    """Why a lasting state counts as held at the asked time, and what that rests on. Every
    "found" is an inference: a change said in words no rule links is missed. The state held
    through the window when it had begun by its start (``begun_by``: the latest it may have
    begun) and lasted past its end; during part of it when it began inside it (or may have:
    "may have held" when it may have begun only after); during at least part of it when a
    later statement may have ended it inside; "so far" when the window runs past the moment
    of asking (``end`` is then that moment)."""
    ended_inside = end < window.end
    if not until:
        reason = "; no later change of it found"
    elif ended_inside:
        reason = f", until {until} if that later statement changed it then"
    else:
        reason = f"; no change of it found before {until}"
    if begun_by > window.end:
        cover = f"may have held during part of {asked!r}"
    elif begun_by > window.start:
        cover = f"held during part of {asked!r}"
    elif not ended_inside:
        cover = f"held through {asked!r}"
    elif until:
        cover = f"held during at least part of {asked!r}"
    else:
        cover = f"held through {asked!r} so far"
    return f"{since}{reason}, so {cover}"


def supersession(
    snap: Snapshot, row: int, successor: Mapping[int, int], kinds: Kinds | None = None
) -> Supersession | None:
    """The label of a superseded memory: by which later statement, said when, and since when
    its state held when it says so."""
    later = successor.get(row)
    if later is None:
        return None
    unit = snap.units[later]
    return Supersession(unit.id, _said(unit)[0], unit.content, _began(snap, later, kinds))
