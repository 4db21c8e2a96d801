"""RaMem's public boundary: the named limits every input is checked against.

Every entry point (the :class:`~ramem_core.memory.RaMem` facade, the file loaders, the CLI)
checks its inputs here, before anything is written, and raises
:class:`~ramem_core.errors.InvalidInputError` (or a subclass) naming the value and what is
wrong with it. The loaders add the file, session and turn.

Rules:

- **Texts** (turn text, image caption, query) are strings of at most their limit, in a form
  UTF-8 can store (no lone surrogate). Control characters other than tab, newline and carriage
  return (NUL, U+0002 ...) are dropped. A turn needs at least one visible character: NULs,
  zero-width and bidi marks alone are empty.
- **Names** (speakers, participants) are one line: no control, zero-width or bidi character.
- **Ids** (conversation, session, turn) have no control, zero-width or bidi character, so the
  separator RaMem joins them with cannot occur inside one.
- **Times** are naive datetimes on one clock: UTC. An aware datetime or a string with an offset
  is converted to UTC, the same way in files, :meth:`RaMem.add_turn` and ``at=``; a time
  without a zone is taken as it is. Times outside :data:`EARLIEST`-:data:`LATEST` are refused.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone

from ramem_core.errors import InvalidInputError
from ramem_core.types import EpisodicContext, Evidence, MemoryUnit

MAX_TEXT_CHARS = 1_000_000
"""Longest turn text: a hard limit far above what people paste into a chat (LongMemEval_S
holds a 76,560-character user turn). A long turn is stored as several memory units
(:data:`ramem_core.anchoring.PIECE_CHARS`), so nothing below this is refused or lost."""
MAX_CAPTION_CHARS = 2_000
"""Longest image caption (LoCoMo's BLIP captions are under 200 characters)."""
MAX_UNIT_CHARS = 1_000_000
"""Longest memory unit content :meth:`RaMem.add_units` accepts (a unit may restate several
turns)."""
MAX_NAME_CHARS = 100
"""Longest speaker or participant name."""
MAX_ID_CHARS = 200
"""Longest conversation, session or turn id."""
MAX_QUERY_CHARS = 4_000
"""Longest query :meth:`RaMem.recall` accepts (recall time grows with the query: this keeps
one recall under a second); :meth:`RaMem.situate`, which the agent adapters call with whole
chat messages, keeps the last ``MAX_QUERY_CHARS`` characters instead of refusing."""
EARLIEST = datetime(1900, 1, 1)
"""The earliest time a turn, a session or a query may carry."""
LATEST = datetime(2200, 1, 1)
"""The latest time a turn, a session or a query may carry (``datetime.max`` would break every
later recall of the namespace: spans are widened and shifted by days)."""

_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
"""Controls (Unicode category Cc) but tab, newline and carriage return."""
_SURROGATE = re.compile("[\ud800-\udfff]")
"""Lone surrogates (category Cs): UTF-8 cannot store them."""


def _describe(char: str) -> str:
    category = unicodedata.category(char)
    kind = {"Cs": "a lone surrogate", "Cc": "the control character"}.get(
        category, "the invisible format character"
    )
    return f"{kind} U+{ord(char):04X}"


def _bad_char(text: str) -> tuple[int, str] | None:
    """The first control, format or surrogate character of ``text``, with its position."""
    for position, char in enumerate(text):
        if unicodedata.category(char) in {"Cs", "Cc", "Cf"}:
            return position, _describe(char)
    return None


def visible(text: str) -> bool:
    """True when ``text`` has a character other than spaces, controls and format marks."""
    return any(not char.isspace() and unicodedata.category(char)[0] != "C" for char in text)


def check_text(value: object, what: str, *, limit: int, required: bool = True) -> str:
    """``value`` as an acceptable text (see the module docstring), else an error.

    Control characters other than tab, newline and carriage return carry nothing and are
    dropped (real chat logs hold a few); what is returned is the text to store.
    """
    if not isinstance(value, str):
        msg = f"{what} must be a string, got {type(value).__name__}"
        raise InvalidInputError(msg)
    if len(value) > limit:
        msg = f"{what} has {len(value):,} characters (limit {limit:,})"
        raise InvalidInputError(msg)
    if (found := _SURROGATE.search(value)) is not None:
        msg = f"{what} holds {_describe(found.group())} at position {found.start()}"
        raise InvalidInputError(msg)
    text = _CONTROL.sub("", value)
    if required and not visible(text):
        msg = f"{what} is empty (no visible character)"
        raise InvalidInputError(msg)
    return text


def check_name(value: object, what: str, *, limit: int = MAX_NAME_CHARS) -> str:
    """``value`` if it is a one-line, non-empty name of at most ``limit`` characters."""
    if not isinstance(value, str):
        msg = f"{what} must be a string, got {type(value).__name__}"
        raise InvalidInputError(msg)
    if not visible(value):
        raise InvalidInputError(f"{what} is empty")
    if len(value) > limit:
        msg = f"{what} has {len(value):,} characters (limit {limit:,})"
        raise InvalidInputError(msg)
    if (bad := _bad_char(value)) is not None:
        msg = f"{what} {value[:40]!r} holds {bad[1]} at position {bad[0]}"
        raise InvalidInputError(msg)
    return value


def check_id(value: object, what: str) -> str:
    """``value`` if it can be an id: a one-line, non-empty string of at most
    :data:`MAX_ID_CHARS` characters."""
    return check_name(value, what, limit=MAX_ID_CHARS)


RESERVED_ID_PREFIX = "~ramem"
"""Ids that start with this are RaMem's own records (a namespace's write versions): never a
memory's id, so a caller can neither store nor delete one."""


def check_unit_ids(ids: object, what: str = "unit_ids") -> list[str]:
    """``ids`` as a list of memory ids: non-empty strings, none of them reserved
    (:data:`RESERVED_ID_PREFIX`); a lone string is refused (it would be read one character
    at a time)."""
    if isinstance(ids, str | bytes) or not isinstance(ids, list | tuple):
        msg = f"{what} must be a list of non-empty strings, got {type(ids).__name__} {ids!r}"
        raise InvalidInputError(msg[:200])
    for unit_id in ids:
        if not isinstance(unit_id, str) or not unit_id:
            msg = f"{what} must be a list of non-empty strings, got {unit_id!r} in it"
            raise InvalidInputError(msg[:200])
        if unit_id.startswith(RESERVED_ID_PREFIX):
            msg = f"memory id {unit_id!r} starts with {RESERVED_ID_PREFIX!r}, which RaMem reserves"
            raise InvalidInputError(msg[:200])
    return list(ids)


def check_moment(value: object, what: str) -> datetime:
    """``value`` as a naive UTC datetime within :data:`EARLIEST`-:data:`LATEST`."""
    if not isinstance(value, datetime):
        msg = f"{what} must be a datetime, got {type(value).__name__} {value!r}"[:160]
        raise InvalidInputError(msg)
    try:
        moment = to_utc(value)
    except (OverflowError, ValueError) as exc:
        # year 1 with an offset: before the first moment a datetime holds, in UTC
        msg = f"{what} {value.date().isoformat()} lies outside {EARLIEST:%Y}-{LATEST:%Y}"
        raise InvalidInputError(msg) from exc
    if not EARLIEST <= moment <= LATEST:
        msg = f"{what} {moment:%Y-%m-%d} lies outside {EARLIEST:%Y}-{LATEST:%Y}"
        raise InvalidInputError(msg)
    return moment


def to_utc(moment: datetime) -> datetime:
    """The naive UTC form of ``moment``: aware times are converted, naive ones kept."""
    if moment.tzinfo is not None and moment.utcoffset() is not None:
        return moment.astimezone(timezone.utc).replace(tzinfo=None)
    return moment.replace(tzinfo=None)


def check_count(value: object, what: str) -> int:
    """``value`` if it is a whole number of at least 1 (``True`` and ``2.5`` are not)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        msg = f"{what} must be a positive integer, got {value!r}"[:160]
        raise InvalidInputError(msg)
    return value


def check_query(value: object) -> str:
    """``value`` if it can be a query: visible text of at most :data:`MAX_QUERY_CHARS`."""
    if isinstance(value, str) and not visible(value):
        raise InvalidInputError("the query is empty")
    return check_text(value, "the query", limit=MAX_QUERY_CHARS)


_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
"""An HTTP header name (RFC 9110's token)."""


def check_server(
    host: object,
    port: object,
    *,
    ssl: object = False,
    headers: object = None,
    tenant: object = None,
    database: object = None,
) -> None:
    """How to reach a Chroma server, checked before any connection: a host name or address
    (not a URL), a port in 1-65535, ``ssl`` a bool, ``headers`` a mapping of header names to
    one-line strings, ``tenant`` and ``database`` one-line names when given."""
    name = check_name(host, "host", limit=253)
    if "/" in name or any(c.isspace() for c in name):
        msg = f"host must be a host name or address, not a URL or a path: {host!r}"
        raise InvalidInputError(msg)
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        msg = f"port must be an integer in 1-65535, got {port!r}"
        raise InvalidInputError(msg)
    if not isinstance(ssl, bool):
        msg = f"ssl must be True or False, got {ssl!r}"
        raise InvalidInputError(msg)
    if headers is not None:
        if not isinstance(headers, Mapping):
            msg = f"headers must map header names to strings, got {type(headers).__name__}"
            raise InvalidInputError(msg)
        for header, value in headers.items():
            if not isinstance(header, str) or not _HEADER_NAME.match(header):
                raise InvalidInputError(f"headers: {header!r} is not an HTTP header name")
            if not isinstance(value, str):
                msg = f"headers: the value of {header!r} must be a string, got {value!r}"
                raise InvalidInputError(msg)
            if "\r" in value or "\n" in value or _CONTROL.search(value):
                raise InvalidInputError(f"headers: the value of {header!r} holds a control")
    for what, value in (("tenant", tenant), ("database", database)):
        if value is not None:
            check_name(value, what, limit=MAX_ID_CHARS)


def check_units(units: object) -> list[MemoryUnit]:
    """``units`` as a list of :class:`MemoryUnit` with one-line ids, conversation and session
    ids, and non-empty contents (units anchored elsewhere, before they are written)."""
    if not isinstance(units, list | tuple):
        msg = f"units must be a list of MemoryUnit, got {type(units).__name__}"
        raise InvalidInputError(msg)
    for position, unit in enumerate(units):
        if not isinstance(unit, MemoryUnit) or not isinstance(unit.context, EpisodicContext):
            msg = f"units[{position}] must be a MemoryUnit, got {type(unit).__name__}"
            raise InvalidInputError(msg)
        check_id(unit.id, f"units[{position}].id")
        check_unit_ids([unit.id], f"units[{position}].id")
        check_id(unit.context.conversation_id, f"units[{position}] conversation id")
        check_id(unit.context.session_id, f"units[{position}] session id")
        check_text(unit.content, f"units[{position}].content", limit=MAX_UNIT_CHARS)
    return list(units)


def check_evidence(evidence: object) -> Sequence[Evidence]:
    """``evidence`` as recall returned it: a :class:`~ramem_core.types.Recall` or a list of
    :class:`Evidence`."""
    if isinstance(evidence, str | bytes) or not isinstance(evidence, Sequence):
        msg = f"format needs the evidence recall returned, got {type(evidence).__name__}"
        raise InvalidInputError(msg)
    for position, item in enumerate(evidence):
        if not isinstance(item, Evidence):
            msg = f"evidence[{position}] must be an Evidence, got {type(item).__name__}"
            raise InvalidInputError(msg)
    return evidence
