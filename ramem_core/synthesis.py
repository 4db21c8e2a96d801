"""Stage 4 of RaMem: context-preserved synthesis.

The chosen memories reach the generator *with* their coordinates (session date, event time,
resolved mentions, participants, location) in a stable, compact form, cut to a token budget.
Memory text is quoted data: angle brackets inside it are neutralised so that nothing in a memory
can close its tag or pose as the prompt's own instructions.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from ramem_core.errors import InvalidInputError, ModelReplyError, reply_text
from ramem_core.prompts import ANSWER_PROMPT, CONTEXT_PROMPT
from ramem_core.protocols import LLM, TokenCounter
from ramem_core.temporal import describe
from ramem_core.types import Evidence, Granularity, MemoryUnit

_OPEN = "<‹＜﹤〈〈⟨❬❮⟪《˂ᐸ⧼⦉"
_CLOSE = ">›＞﹥〉〉⟩❭❯⟫》˃ᐳ⧽⦊"
_QUOTES = '"＂“”„‟'
_NEUTRAL = str.maketrans(
    {**dict.fromkeys(_OPEN, "&lt;"), **dict.fromkeys(_CLOSE, "&gt;"), **dict.fromkeys(_QUOTES, "'")}
)
_HIDDEN = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\ufeff\ufff9-\ufffb\ud800-\udfff]"
)
"""Controls but tab and newline, zero-width, bidi and other invisible format characters."""


_TAG = re.compile(r"[a-z][a-z0-9_-]{0,30}")


def quote(text: str, *, one_line: bool = False) -> str:
    """Memory text made inert for a prompt.

    Angle brackets and their look-alikes (``‹ ›``, fullwidth ``＜ ＞``, ``〈 〉`` ...) become
    ``&lt;`` and ``&gt;``, so nothing in a memory can open or close a tag; double quotes become
    single ones; control, zero-width and bidi characters are removed. ``one_line`` also folds
    every line break and run of spaces into one space (for coordinates, which are attributes).
    """
    text = _HIDDEN.sub("", text.translate(_NEUTRAL))
    return " ".join(text.split()) if one_line else text


_ECHO_BLOCK = re.compile(
    r"(?:<|&lt;)(memory|evidence)\b.*?(?:<|&lt;)/\1(?:>|&gt;)", re.DOTALL | re.IGNORECASE
)
_ECHO_TAG = re.compile(r"(?:<|&lt;)/?(?:memory|memories|evidence|ramem)\b.*?(?:>|&gt;)", re.I)
_ECHO_NOTE = re.compile(r"\s*\(= [^()]*\)")
_ECHO_ATTR = re.compile(r'\b(?:n|said|session|event|who|where)="[^"]*"')


def strip_echo(text: str) -> str:
    """A model's reply without what it echoed of the memories it was shown: whole memory
    elements, stray memory tags, coordinate attributes and resolved-time notes ("last week
    (= 4 March 2024 - 10 March 2024)"), which would otherwise be stored as if said again."""
    for pattern in (_ECHO_BLOCK, _ECHO_TAG, _ECHO_ATTR):
        text = pattern.sub(" ", text)
    return " ".join(_ECHO_NOTE.sub("", text).split())


def resolved_content(unit: MemoryUnit) -> str:
    """The content with each resolved mention annotated: "yesterday (= 7 May 2023)"."""
    content = unit.content
    mentions = sorted(
        (m for m in unit.context.mentions if 0 <= m.char_start < m.char_end <= len(content)),
        key=lambda m: m.char_start,
        reverse=True,
    )
    for m in mentions:
        if content[m.char_start : m.char_end] == m.text:
            note = f" (= {describe(m.span)})"
            content = content[: m.char_end] + note + content[m.char_end :]
    return content


def coordinates(
    unit: MemoryUnit, *, session_context: bool = True, said: datetime | None = None
) -> dict[str, str]:
    """The episodic coordinates of ``unit`` as short strings (empty ones left out); ``said``:
    when the memory itself was said, shown instead of its session's start where the session
    is timed to the minute (a live session's turns each have their own time)."""
    ctx = unit.context
    span = ctx.session_span
    when = ""
    if session_context and span is not None:
        when = describe(span)
        if said is not None and span.granularity is Granularity.INSTANT:
            when = f"{said.day} {said:%B %Y}, {said:%H:%M}"
    fields = {
        "said": when,
        "session": ctx.session_id if session_context else "",
        "event": describe(ctx.event_time) if ctx.event_time else "",
        "who": ", ".join(ctx.participants),
        "where": ctx.location or "",
    }
    return {k: v for k, v in fields.items() if v}


def render(
    evidence: Evidence,
    number: int,
    *,
    with_context: bool = True,
    session_context: bool = True,
    tag: str = "memory",
) -> str:
    """One memory as the generator sees it; ``with_context=False`` gives plain text only.

    The memory is data on one line: nothing in it (a caption's line break, an echoed tag)
    can start a line of its own or close the tag. ``tag`` names the element (a framework that
    wraps the block in its own ``<memory>`` gets another name, so tags never nest)."""
    if not _TAG.fullmatch(tag):
        msg = f"tag must be a lower-case element name, got {tag!r}"
        raise InvalidInputError(msg)
    if not with_context:
        return f"- {quote(evidence.unit.content, one_line=True)}"
    attrs = " ".join(
        f'{k}="{quote(v, one_line=True)}"'
        for k, v in coordinates(
            evidence.unit, session_context=session_context, said=evidence.said
        ).items()
    )
    lines = [f'<{tag} n="{number}" {attrs}>', quote(resolved_content(evidence.unit), one_line=True)]
    lines += [f"{name}: {quote(text, one_line=True)}" for name, text in validity(evidence)]
    return "\n".join([*lines, f"</{tag}>"])


def validity(evidence: Evidence) -> list[tuple[str, str]]:
    """Why ``evidence`` applies, one line each: the frame's conditions it meets ("valid"),
    for a state statement, the later statement of the same kind that may have replaced it, and
    since when ("superseded", said as a possibility: statements that replace nothing are
    linked too), and
    for a memory the second round added, the member of the set asked about it names
    ("member"), and for the memory that tells of a before/after relation's anchor event, that
    it is the point the relation is measured from ("anchor")."""
    out = []
    if evidence.anchor is not None:
        out.append(("anchor", f"the point {evidence.anchor!r} is measured from"))
    if evidence.satisfied:
        out.append(("valid", "; ".join(evidence.satisfied)))
    if evidence.superseded is not None:
        later = evidence.superseded
        said = f"{later.on.day} {later.on:%B %Y}"
        if later.since is None or describe(later.since) == said:
            line = f"possibly, on {said}, by {later.content!r}"
        else:  # the successor says when its state begins: valid until then, if it replaced it
            began = describe(later.since)
            line = f"possibly, since {began}, by {later.content!r} (said {said})"
        line += ": if that later statement replaced this one, this held until then"
        out.append(("superseded", line))
    if evidence.member is not None:
        member = evidence.member
        out.append(("member", f"names {member.word!r}, one of the {member.kind} asked about"))
    return out


Scalar = str | int | float | bool


def evidence_metadata(evidence: Evidence) -> dict[str, Scalar]:
    """Evidence as flat metadata (scalars only) for framework documents and nodes.

    Times are ISO 8601 strings; lists are joined with ``"; "``; unknown values are omitted.
    """
    unit, ctx = evidence.unit, evidence.unit.context
    meta: dict[str, Scalar] = {
        "id": unit.id,
        "rank": evidence.rank,
        "score": evidence.score,
        "contextual": evidence.contextual,
        "satisfied": "; ".join(evidence.satisfied),
        "conversation_id": ctx.conversation_id,
        "session_id": ctx.session_id,
        "source_ids": "; ".join(unit.source_ids),
        "speaker": ctx.speaker,
        "kind": ctx.kind.value,  # statement, question or reply
        "participants": "; ".join(ctx.participants),
        "topic": ctx.topic,
        "content": quote(unit.content, one_line=True),  # data, as in the rendering
    }
    if evidence.said is not None:
        meta["said_at"] = evidence.said.isoformat()
    if evidence.anchor is not None:
        meta["anchor_of"] = evidence.anchor
    if evidence.member is not None:
        meta["member"] = evidence.member.word
        meta["member_of"] = evidence.member.kind
    if evidence.dense_score is not None:
        meta["dense_score"] = evidence.dense_score
    if evidence.lexical_score is not None:
        meta["lexical_score"] = evidence.lexical_score
    if ctx.location:
        meta["location"] = ctx.location
    for prefix, span in (("session", ctx.session_span), ("event", ctx.event_time)):
        if span is not None:
            meta[f"{prefix}_start"] = span.start.isoformat()
            meta[f"{prefix}_end"] = span.end.isoformat()
            meta[f"{prefix}_time"] = describe(span)
    if ctx.mentions:
        meta["mentions"] = "; ".join(f"{m.text} = {describe(m.span)}" for m in ctx.mentions)
    if evidence.superseded is not None:
        meta["superseded_by"] = evidence.superseded.by
        meta["superseded_on"] = evidence.superseded.on.isoformat()
        if evidence.superseded.since is not None:
            meta["superseded_since"] = evidence.superseded.since.start.isoformat()
    return meta


@dataclass(frozen=True, slots=True)
class ContextBlock:
    """Rendered memories that fit the budget, and what was cut.

    Attributes:
        text: the memories as handed to the generator.
        included: evidence rendered into ``text``, in rank order.
        omitted: evidence cut by the budget.
        tokens: tokens of ``text``.
        now: when the question was asked (the recall frame's now), if known.
    """

    text: str
    included: tuple[Evidence, ...]
    omitted: tuple[Evidence, ...]
    tokens: int
    now: datetime | None = None


def fit_budget(
    evidence: Sequence[Evidence],
    counter: TokenCounter,
    max_tokens: int | None = None,
    *,
    with_context: bool = True,
    session_context: bool = True,
    tag: str = "memory",
    now: datetime | None = None,
) -> ContextBlock:
    """Render ``evidence`` in rank order until ``max_tokens`` would be exceeded (``tag``: see
    :func:`render`); ``now``: when the question was asked, kept with the block."""
    parts: list[str] = []
    included: list[Evidence] = []
    omitted: list[Evidence] = []
    used = 0
    for item in evidence:
        text = render(
            item,
            len(included) + 1,
            with_context=with_context,
            session_context=session_context,
            tag=tag,
        )
        cost = counter.count(text) + (1 if parts else 0)
        if omitted or (max_tokens is not None and used + cost > max_tokens):
            omitted.append(item)  # keep rank order: once one is cut, later ones are cut too
            continue
        parts.append(text)
        included.append(item)
        used += cost
    return ContextBlock("\n".join(parts), tuple(included), tuple(omitted), used, now)


@dataclass(frozen=True, slots=True)
class Answer:
    """A generated answer with the prompt and the memories behind it."""

    text: str
    prompt: str
    context: ContextBlock


def build_prompt(question: str, context: ContextBlock, now: datetime | None) -> str:
    """The answer prompt for ``question`` over ``context``."""
    when = f"{now.day} {now:%B %Y}" if now else "unknown"
    memories = context.text or "(no memories)"
    return ANSWER_PROMPT.format(now=when, memories=memories, question=quote(question))


def answer(question: str, context: ContextBlock, llm: LLM, now: datetime | None) -> Answer:
    """Ask ``llm`` to answer ``question`` from ``context``."""
    prompt = build_prompt(question, context, now)
    text = reply_text(llm.complete(prompt), llm).strip()
    if not text:
        msg = f"the model {type(llm).__name__} returned an empty answer"
        raise ModelReplyError(msg)
    return Answer(text, prompt, context)


def system_context(context: ContextBlock) -> str:
    """The memory section an agent's system prompt gets, with the date of asking; empty
    when nothing was recalled."""
    if not context.text:
        return ""
    return CONTEXT_PROMPT.format(now=asked_on(context.now), memories=context.text)


def dated(context: ContextBlock) -> str:
    """The memories after the date of asking (what a tool result or a chain's memory
    variable holds); empty when nothing was recalled."""
    return f"Asked on: {asked_on(context.now)}.\n{context.text}" if context.text else ""


def asked_on(now: datetime | None) -> str:
    """The moment of asking in words ("Tuesday 5 December 2023, 14:05"), or "unknown"."""
    if now is None:
        return "unknown"
    return f"{now:%A} {now.day} {now:%B %Y, %H:%M}"


# --------------------------------------------------------------------------- scores shown

SCORE_FEATURES = ("cosine", "reciprocal_rank", "contextual")
"""What a calibrated score is made of: the memory's cosine to the question, its reciprocal
rank in RaMem's list, and whether it meets the recall frame (1 or 0)."""
SCORE_CALIBRATION = "minilm-evidence-balanced-v1"
"""The calibration framework adapters show scores with, fitted by
``benchmarks/fit_scores.py`` into ``ramem_core/_data/score_calibration.json``."""


@functools.cache
def _calibration(name: str) -> tuple[str, tuple[float, ...], float]:
    """The embedder, feature weights and intercept of the calibration ``name``."""
    from importlib import resources

    from ramem_core.errors import ModelUnavailableError

    path = resources.files("ramem_core").joinpath("_data").joinpath("score_calibration.json")
    try:
        entry = json.loads(path.read_text(encoding="utf-8"))[name]
        weights = tuple(float(entry["weights"][f]) for f in SCORE_FEATURES)
        return str(entry["embedder"]), weights, float(entry["intercept"])
    except (OSError, KeyError, TypeError, ValueError) as exc:
        msg = f"score calibration {name!r} is not in {path}: run benchmarks/fit_scores.py"
        raise ModelUnavailableError(msg) from exc


def calibrated_score(evidence: Evidence, embedder: str, name: str = SCORE_CALIBRATION) -> float:
    """How likely ``evidence`` is to be evidence for its question, on a 0-1 scale where 0.5
    separates nodes more like evidence from the rest (:data:`SCORE_CALIBRATION`: a logistic
    of :data:`SCORE_FEATURES`, the two classes weighted equally). Calibrated for the shipped
    MiniLM; with another ``embedder`` the score is the cosine itself, clipped to 0-1
    (uncalibrated)."""
    cosine = evidence.dense_score if evidence.dense_score is not None else 0.0
    fitted_for, weights, intercept = _calibration(name)
    if embedder != fitted_for:
        return min(1.0, max(0.0, cosine))
    features = (cosine, 1.0 / evidence.rank, 1.0 if evidence.contextual else 0.0)
    z = intercept + sum(w * x for w, x in zip(weights, features, strict=True))
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))
