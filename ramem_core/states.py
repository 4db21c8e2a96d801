"""States that hold until superseded: what a statement says that may change, and what a
question asks of it (now, or before).

A *state* is what a person says that stays true until they say otherwise: where they live,
their job, an appointment's date, a preference, a count they keep ("I have 25 titles on my
to-watch list"). A later statement by the same person about the same state supersedes it:
the earlier one was valid from when it was said until then. Nothing here is stored: the
retrieval stage derives supersession when it reads (:mod:`ramem_core.retrieval.passes`),
so deleting the later statement restores the earlier one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_STATE_WORDS = (
    r"liv(?:e|es|ed|ing)|mov(?:e|ed|es|ing)|relocat\w*|address|based\s+in|home\s+is"
    r"|job|work(?:s|ed|ing)?\s+(?:at|for|as)|employ\w*|position|role|promot\w*|hired|salary"
    r"|appointment|schedul\w*|reschedul\w*|booked|reservation|deadline"
    r"|favou?rite|prefer\w*|vegetarian|vegan|diet|allergic"
    r"|married|engaged|divorced|boyfriend|girlfriend|partner|dating"
    r"|current(?:ly)?|now|anymore|no\s+longer|switched|changed|updated?|upgraded|new\s+\w+"
    r"|usually|status|record|personal\s+best|so\s+far|in\s+total|total\s+of"
)
_STATE = re.compile(rf"\b(?:{_STATE_WORDS})\b", re.IGNORECASE)
_STRICT = re.compile(
    r"\b(?:liv(?:e|es|ing)\s+in|moved\s+(?:to|into)|relocated|job|work(?:s|ing)?\s+(?:at|for|as)"
    r"|favou?rite|vegetarian|vegan|married|engaged|dating)\b",
    re.IGNORECASE,
)
_COUNT = re.compile(
    r"\b(?:\d[\d,.]*|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty"
    r"|thirty|forty|fifty|hundred|thousand|dozen)\b",
    re.IGNORECASE,
)

_VALUE = re.compile(
    rf"\b(?:\d{{1,2}}:\d{{2}}|single|once|twice|couple|half)\b|{_COUNT.pattern}", re.IGNORECASE
)
"""A value a statement may state: a number, in digits or words, a time of day, "twice"."""
_ASKS_VALUE = re.compile(
    r"\bhow\s+(?:many|much|long|often|old|far|big|fast)\b|\bwhat\s+time\b"
    r"|\b(?:amount|number|total|price|cost|count|percentage|score|rating)\b",
    re.IGNORECASE,
)

_NOW = re.compile(
    r"\b(?:now|currently|current|these\s+days|at\s+the\s+moment|at\s+present|still|anymore"
    r"|any\s+more|so\s+far|to\s+date|latest|most\s+recent(?:ly)?|recent"
    r"|nowadays|presently|yet)\b",
    re.IGNORECASE,
)
_PRESENT = re.compile(
    r"\b(?:do|does|am|is|are|'m|'re|have|has|can)\s+(?:I|we|my|our|me)\b"
    r"|\b(?:is|are)\s+my\b",
    re.IGNORECASE,
)
"""A present-tense question about the asker: "What time do I wake up?", "How long have I had
my cat?", "How many coins do we have?", "How many nights can I redeem?"."""
_EARLIER = re.compile(
    r"\b(?:previous(?:ly)?|before\s+(?:I|the|my|it|we|that|moving|switching|changing)"
    r"|used\s+to|originally|at\s+first|first\s+(?:time|one)|former(?:ly)?|old\s+(?:job|address"
    r"|place|apartment|status|record)|earlier|initially|prior)\b",
    re.IGNORECASE,
)
_PAST = re.compile(
    r"\b(?:did|was|were)\s+(?:I|we|my|our)\b|\b(?:I|we)\s+(?:was|were|did)\b", re.IGNORECASE
)
"""A past-tense question about the asker ("Where did I live?", "the amount I was
pre-approved for"): it asks about then, not now."""


_KINDS = {
    "residence": re.compile(
        r"\b(?:liv(?:e|es|ed|ing)\s+(?:in|at|with)|mov(?:e|ed|ing)\s+(?:to|into|out)|relocat\w*"
        r"|address|apartment|flat|neighbou?rhood|home\s+is)\b",
        re.IGNORECASE,
    ),
    "work": re.compile(
        r"\b(?:job|work(?:s|ed|ing)?\s+(?:at|for|as)|employ\w*|hired|promot\w*|position|role"
        r"|salary|boss|company|career)\b",
        re.IGNORECASE,
    ),
    "appointment": re.compile(
        r"\b(?:appointment|reservation|booking|booked|schedul\w*|reschedul\w*|meeting"
        r"|deadline)\b",
        re.IGNORECASE,
    ),
    "preference": re.compile(
        r"\b(?:favou?rite|prefer\w*|vegetarian|vegan|diet|allergic|go-to)\b", re.IGNORECASE
    ),
    "relationship": re.compile(
        r"\b(?:married|engaged|divorced|boyfriend|girlfriend|partner|husband|wife|dating"
        r"|single)\b",
        re.IGNORECASE,
    ),
}
"""Kinds of state: two statements of one kind by one person are about the same state when
they are similar at all (``RetrievalConfig.state_kind_similarity``); other states need a
higher similarity (``state_similarity``)."""


_KEY_WORD = re.compile(r"(?:[^\W_]|')+")
"""A word of a key: letters and digits of any script, and apostrophes (for ASCII, exactly
``[a-z0-9']`` once case-folded)."""
_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'd|my|me|we|we're|our)\b", re.IGNORECASE)


def _folded(pattern: re.Pattern[str]) -> re.Pattern[str]:
    """``pattern`` (case-insensitive) for text already lower-cased: the same matches, about
    three times faster than ``re.IGNORECASE`` (every statement is read at each index build)."""
    if re.search(r"\\[A-Z]", pattern.pattern):  # \S, \W, \D, \B would change meaning
        msg = f"cannot fold {pattern.pattern!r}: it has an upper-case escape"
        raise ValueError(msg)
    return re.compile(pattern.pattern.lower(), pattern.flags & ~re.IGNORECASE)


_STATE_FOLDED, _COUNT_FOLDED = _folded(_STATE), _folded(_COUNT)
_STRICT_FOLDED, _FIRST_PERSON_FOLDED = _folded(_STRICT), _folded(_FIRST_PERSON)
_KINDS_FOLDED = {kind: _folded(pattern) for kind, pattern in _KINDS.items()}


def _alternatives(body: str) -> list[str] | None:
    """The top-level alternatives of a group's ``body``; ``None`` when ``body`` is not one
    group's inside (a ``)`` closes what it did not open)."""
    out, depth, start, i = [], 0, 0, 0
    while i < len(body):
        char = body[i]
        if char == "\\":
            i += 1  # the escaped character is never a bracket or a bar
        elif char == "[":  # a class, to its "]" ("[]...]" and "[^]...]" hold a first "]")
            i += 2 if body[i + 1 : i + 2] == "^" else 1
            i += 1 if body[i : i + 1] == "]" else 0
            while body[i] != "]":
                i += 2 if body[i] == "\\" else 1
        elif char in "()":
            depth += 1 if char == "(" else -1
            if depth < 0:
                return None
        elif char == "|" and depth == 0:
            out.append(body[start:i])
            start = i + 1
        i += 1
    out.append(body[start:])
    return out


def _by_first_letter(alternatives: list[str]) -> str:
    """``alternatives`` as one alternation that tries each first letter once: "live|love|job"
    becomes "l(?:ive|ove)|job", the same words (the engine tries every alternative at every
    word, stopping at a first letter that differs; a first letter that matches descends into
    its own)."""
    groups: dict[str, list[str]] = {}
    rest: list[str] = []
    for alternative in alternatives:
        head = alternative[:1]
        if head.isascii() and head.isalnum() and alternative[1:2] not in ("?", "*", "+", "{"):
            groups.setdefault(head, []).append(alternative[1:])
        else:  # an escape, a group or a class first, or a quantified first letter
            rest.append(alternative)
    merged = [h + (t[0] if len(t) == 1 else f"(?:{'|'.join(t)})") for h, t in groups.items()]
    return "|".join(merged + rest)


_WORDS = re.compile(r"\\b\(\?:(.*)\)\\b", re.DOTALL)
"""A pattern of whole words: ``\\b(?:...)\\b``."""
_REFERS = re.compile(r"\\[1-9]|\(\?\(")
"""A back reference or a conditional: a group numbered in its own pattern."""


def _any(patterns: Iterable[re.Pattern[str]]) -> re.Pattern[str]:
    """One pattern that matches where any of ``patterns`` does: a text none of them matches
    (most of a conversation) is read once, not once per pattern. They must share their
    flags (each is a plain alternation: no groups it refers back to). Patterns of whole words
    are joined into one alternation, tried by first letter (:func:`_by_first_letter`)."""
    patterns = list(patterns)
    flags = {p.flags for p in patterns}
    if len(flags) != 1 or any(p.groupindex or _REFERS.search(p.pattern) for p in patterns):
        raise ValueError("patterns with other flags or groups they refer to cannot be joined")
    flag = flags.pop()
    # a verbose pattern's spaces and any pattern's comments are not words: joined as written
    plain = bool(flag & re.VERBOSE) or any("(?#" in p.pattern for p in patterns)
    found = [None if plain else _WORDS.fullmatch(p.pattern) for p in patterns]
    words = [_alternatives(m.group(1)) if m else None for m in found]
    if all(w is not None for w in words):
        joined = _by_first_letter([a for w in words if w is not None for a in w])
        return re.compile(rf"\b(?:{joined})\b", flag)
    end = "\n" if flag & re.VERBOSE else ""  # a verbose pattern's last comment ends there
    return re.compile("|".join(f"(?:{p.pattern}{end})" for p in patterns), flag)


_STATES_FOLDED = _any((_STATE_FOLDED, _COUNT_FOLDED))
_ANY_KIND_FOLDED = _any(_KINDS_FOLDED.values())


KINDS = tuple(sorted(_KINDS))
"""The kinds of state, in the order of :func:`kind_bits`."""


def kind_bits(text: str) -> int:
    """:func:`state_kinds` as a bitmask over :data:`KINDS` (a per-memory column)."""
    return kind_bits_of(state_kinds(text))


def kind_bits_of(kinds: frozenset[str]) -> int:
    """Kinds of state as a bitmask over :data:`KINDS`."""
    return sum(1 << i for i, kind in enumerate(KINDS) if kind in kinds)


def state_kinds(text: str) -> frozenset[str]:
    """The kinds of state ``text`` says of its speaker (:data:`_KINDS`): "I moved to Porto"
    is about a residence, "my dentist appointment" about an appointment; a statement in
    which the speaker does not speak of themselves ("Ana moved to Porto") has none."""
    low = text.lower()
    if _FIRST_PERSON_FOLDED.search(low) is None or _ANY_KIND_FOLDED.search(low) is None:
        return frozenset()
    return frozenset(kind for kind, pattern in _KINDS_FOLDED.items() if pattern.search(low))


def states_something(text: str) -> bool:
    """True when ``text`` may state a state that a later statement can supersede: a state
    word ("live", "job", "currently", "switched") or a count."""
    return _STATES_FOLDED.search(text.lower()) is not None


def states_strictly(text: str) -> bool:
    """True when ``text`` states a lasting state in so many words ("I live in", "my job",
    "I'm vegetarian"): such a statement holds over time, not on its day only, so a question
    about a later time finds it valid until it is superseded. (An appointment is not lasting:
    it holds on its date.)"""
    return _STRICT_FOLDED.search(text.lower()) is not None


_ASKED_KINDS = {
    "residence": re.compile(r"\b(?:liv(?:e|ed|ing)|home|mov(?:e|ed)|address)\b", re.I),
    "work": re.compile(r"\b(?:work(?:ed|ing)?|job|employ\w*|company|position)\b", re.I),
    "preference": re.compile(r"\b(?:favou?rite|prefer\w*|diet|vegetarian|vegan)\b", re.I),
    "relationship": re.compile(r"\b(?:married|dating|boyfriend|girlfriend|partner)\b", re.I),
}


def asks_about_state(query: str) -> frozenset[str]:
    """The kinds of lasting state ``query`` asks about ("Where did I live in April?": a
    residence): a past-time question finds such a state valid over its interval."""
    return frozenset(kind for kind, pattern in _ASKED_KINDS.items() if pattern.search(query))


def asks_now(query: str) -> bool:
    """True when ``query`` asks about a state as it is now: "now", "currently", "so far",
    "still", or a present-tense question about the asker ("Where do I live?", "How many
    followers do I have?"), and not for an earlier value."""
    if asks_earlier(query):
        return False
    if _NOW.search(query):
        return True
    return _PRESENT.search(query) is not None and _PAST.search(query) is None


_PRESENT_WHEN_WHERE = re.compile(
    r"^\W*(?:when|where)(?:'s|\s+(?:is|are|does|do)\b)"
    r"|^\W*(?:what|which)\s+(?:time|day|date|city|place|venue)\s+(?:is|are|does|do)\b",
    re.IGNORECASE,
)


def asks_plan(query: str) -> bool:
    """True when ``query`` asks, in the present tense, when or where something is ("When is
    the family reunion?", "Where's the ski week?", "When does the bid close?"): of a plan still
    ahead it asks the plan as it stands now (:class:`~ramem_core.retrieval.passes.LatestFirst`
    reads it so only for a plan whose date lies after the moment of asking)."""
    if asks_earlier(query) or _PAST.search(query):
        return False
    return _PRESENT_WHEN_WHERE.search(query) is not None


def asks_value(query: str) -> bool:
    """True when ``query`` asks for a value: a count, an amount, a duration, a time of day
    ("How many coins do I have?", "What time do I wake up?", "the amount I was pre-approved
    for")."""
    return _ASKS_VALUE.search(query) is not None


def values(text: str) -> frozenset[str]:
    """The values ``text`` states (:data:`_VALUE`), lower-cased: "37", "nine", "7:30"."""
    return frozenset(m.group(0).lower() for m in _VALUE.finditer(text))


def asks_earlier(query: str) -> bool:
    """True when ``query`` asks for an earlier value ("previous", "before I moved", "used
    to", "originally"): superseded statements are its evidence and keep their place."""
    return _EARLIER.search(query) is not None


def state_key(state: str) -> int:
    """A named state ("where Alice lives") or a speaker's name as a number, equal for names
    that differ only in case, punctuation and spacing, in any script ("李雷" and "王芳" are
    two, "Zoë" and "Zoé" two); 0 for none."""
    import hashlib

    words = " ".join(_KEY_WORD.findall(state.casefold()))
    if not words:
        return 0
    digest = int.from_bytes(hashlib.blake2b(words.encode(), digest_size=8).digest(), "little")
    return (digest >> 1) or 1  # a positive int64, never 0
