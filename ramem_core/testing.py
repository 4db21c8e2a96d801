"""Fakes shipped for users' tests and ours: no model, no network, deterministic."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt


class HashEmbedder:
    """A deterministic bag-of-words embedder: texts sharing words get similar vectors.

    A test fake only: it knows no synonyms. Words are lower-cased and hashed into
    ``dimension`` buckets; vectors are L2-normalised.
    """

    name = "hash-embedder"

    def __init__(self, dimension: int = 256) -> None:
        self.dimension = dimension

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One unit vector per text."""
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"[a-z0-9]+", text.lower()):
                digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
                out[row, int.from_bytes(digest, "little") % self.dimension] += 1.0
            norm = np.linalg.norm(out[row])
            if norm == 0:
                out[row, 0] = 1.0
            else:
                out[row] /= norm
        return out


class FakeLLM:
    """An LLM that answers from a function of the prompt (default: a fixed reply).

    Records every prompt in ``prompts`` so tests can check what the generator saw.
    """

    def __init__(self, reply: str | Callable[[str], str] = "not mentioned") -> None:
        self._reply = reply
        self.prompts: list[str] = []

    def complete(self, prompt: str) -> str:
        """Record ``prompt`` and return the canned reply."""
        self.prompts.append(prompt)
        return self._reply(prompt) if callable(self._reply) else self._reply


class WordCounter:
    """A token counter that counts whitespace-separated words (fast, for tests)."""

    def count(self, text: str) -> int:
        """Number of words in ``text``."""
        return len(text.split())
