"""Ordinal events: "his third tourney", "my first full screenplay", "her second puppy".

A question that asks about the Nth event of a kind is grounded by what memory *states* about
that kind's order (:meth:`ramem_core.frames.RuleFrameInducer.induce`): a memory that says "I
won my second tournament" fixes when the second one happened, so the third lies between the
second and the fourth, and the memory that says "my third" is the third. Only stated ordinals
count: memories that merely mention the kind do not say which one of a series they are.

This module reads the ordinals in a text and tells whether two of them are of the same kind.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ramem_core.index.text import Tokenizer

ORDINALS = {
    "first": 1,
    "second": 2,
    "third": 3,
    "fourth": 4,
    "fifth": 5,
    "sixth": 6,
    "seventh": 7,
    "eighth": 8,
    "ninth": 9,
    "tenth": 10,
    "1st": 1,
    "2nd": 2,
    "3rd": 3,
    **{f"{n}th": n for n in range(4, 11)},
}
ORDINAL_WORDS = " ".join(ORDINALS)
"""Every ordinal word, as one lexical query: the memories it matches are the only ones that
can state an ordinal."""

# an ordinal of a thing someone has: "my first", "his 3rd", "Nate's second", "the fourth"
_ORDINAL = re.compile(
    r"\b(?:the|my|his|her|their|our|your|its|[A-Z][a-z]+'s)\s+"
    rf"(?P<ordinal>{'|'.join(sorted(ORDINALS, key=len, reverse=True))})\s+"
    r"(?P<rest>[A-Za-z][A-Za-z'-]*(?:\s+[A-Za-z][A-Za-z'-]*){0,2})",
    re.IGNORECASE,
)
# what follows an ordinal but names no kind of event: "the first time", "the first half of
# May" (a time, read by the temporal patterns), "the first two turtles" (a count, not one event)
_NO_KIND = frozenset(
    re.findall(
        r"\S+",
        "time times half place thing things step steps one ones day days week weeks month months"
        " year years sight glance two three four five six seven eight nine ten few couple",
    )
)
# words that end a kind besides the stop words: pronouns and times ("my first tournament last
# week", "the first issue I had")
_END = frozenset(
    re.findall(
        r"\S+",
        "i me you he she we they it last next this yesterday today tonight ago recently"
        " already just",
    )
)
_ROOT = 5
"""Characters of a word's stem that decide its kind: "tourney" and "tournament" are one kind
("tourn"). Not tuned: the shortest prefix that keeps the dev data's kinds apart by reading."""


@dataclass(frozen=True, slots=True)
class Ordinal:
    """One ordinal in a text: "third tourney" is ``Ordinal(3, ("tourney",), ...)``.

    Attributes:
        number: the position it names (1 for "first").
        kind: the words after it up to the first stop word (at most three): what it counts.
        text: the ordinal and those words, as written.
        start: where the ordinal phrase starts in the text.
        end: where it ends.
    """

    number: int
    kind: tuple[str, ...]
    text: str
    start: int
    end: int

    @property
    def head(self) -> str:
        """The last word of the kind, usually its noun ("tournament" of "video game
        tournament")."""
        return self.kind[-1]


@lru_cache(maxsize=1)
def _tokenizer() -> Tokenizer:
    return Tokenizer()


def _root(word: str) -> str:
    stems = _tokenizer()(word)
    return stems[0][:_ROOT] if stems else ""


def ordinals(text: str) -> list[Ordinal]:
    """The ordinals of ``text`` that count something ("my second tournament"), in order."""
    found = []
    stop = _tokenizer().stop_words | _END
    for m in _ORDINAL.finditer(text):
        kind: list[str] = []
        for word in m.group("rest").split():
            if word.lower() in stop:
                break
            kind.append(word.lower().removesuffix("'s"))
        if not kind or kind[0] in _NO_KIND:
            continue
        end = m.start("rest") + len(" ".join(m.group("rest").split()[: len(kind)]))
        number = ORDINALS[m.group("ordinal").lower()]
        found.append(Ordinal(number, tuple(kind), text[m.start("ordinal") : end], m.start(), end))
    return found


def same_kind(asked: Ordinal, stated: Ordinal) -> bool:
    """True when ``stated`` counts what ``asked`` counts: the head word of one is among the
    words of the other, compared by the first :data:`_ROOT` characters of their stems
    ("third tourney" and "my fourth video game tournament")."""
    asked_roots = {_root(w) for w in asked.kind} - {""}
    stated_roots = {_root(w) for w in stated.kind} - {""}
    return _root(asked.head) in stated_roots or _root(stated.head) in asked_roots
