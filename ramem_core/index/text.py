"""Text helpers of the index: the tokenizer every lexical key and rule reads words with, and
weighted term counts."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_WRITTEN = re.compile(_WORD.pattern, re.IGNORECASE)  # the same words, as written


STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "is",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
    ]
)
"""The English stop words left out of every lexical key: bm25s's ``STOPWORDS_EN`` (Lucene's
33), held here so that reading words never imports bm25s, and with it scipy (0.3-0.4 s of a
process's first recall). A test keeps them equal to bm25s's."""


_STEMS: dict[str, str] = {}  # word -> stem, shared by every tokenizer (a rebuild re-stems none)
_STEMS_LIMIT = 500_000  # words kept; beyond it the cache starts again (~60 MB at most)


class Tokenizer:
    """Lower-case words, bm25s's English stop words removed, Snowball English stems."""

    def __init__(self) -> None:
        import Stemmer

        self._stem = Stemmer.Stemmer("english").stemWord
        self._cache = _STEMS
        self._stop = STOP_WORDS

    @property
    def stop_words(self) -> frozenset[str]:
        """The words left out (bm25s's English stop words)."""
        return self._stop

    def __call__(self, text: str) -> list[str]:
        """The stemmed terms of ``text`` in order."""
        out = []
        cache = self._cache
        for word in _WORD.findall(text.lower()):
            word = word.replace("'", "")  # "caroline's" -> "carolines" -> stem "carolin"
            if word in self._stop:
                continue
            stem = cache.get(word)
            if stem is None:
                if len(cache) >= _STEMS_LIMIT:  # bounded where it grows: queries add words too
                    cache.clear()
                stem = cache[word] = self._stem(word)
            out.append(stem)
        return out

    def written(self, text: str, term: str) -> str:
        """The word of ``text`` that gives ``term``, as written ("Kickboxing" for the stem
        "kickbox"); ``term`` itself when none does."""
        words: list[str] = _WRITTEN.findall(text)
        return next((word for word in words if self(word) == [term]), term)


def term_counts(terms: Iterable[str]) -> dict[str, float]:
    """Term frequencies of a token list."""
    return {term: float(count) for term, count in Counter(terms).items()}


def add_weighted(into: dict[str, float], counts: dict[str, float], weight: float) -> None:
    for term, tf in counts.items():
        into[term] = into.get(term, 0.0) + weight * tf
