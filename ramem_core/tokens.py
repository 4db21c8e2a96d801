"""Offline token counting with tiktoken's ``cl100k_base``.

``tiktoken.get_encoding`` downloads the encoding on first use, which fails offline; RaMem ships
the encoding file (MIT, from tiktoken's public blob store) as package data instead.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import tiktoken

_CL100K_HASH = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
_CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|"""
    r"""\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_CL100K_SPECIAL = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}


@lru_cache(maxsize=1)
def cl100k() -> tiktoken.Encoding:
    """The ``cl100k_base`` encoding, loaded from RaMem's package data."""
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    path = resources.files("ramem_core") / "_data" / "cl100k_base.tiktoken"
    with resources.as_file(path) as local:
        ranks = load_tiktoken_bpe(str(local), expected_hash=_CL100K_HASH)
    return tiktoken.Encoding(
        name="cl100k_base",
        pat_str=_CL100K_PATTERN,
        mergeable_ranks=ranks,
        special_tokens=_CL100K_SPECIAL,
    )


class TiktokenCounter:
    """Counts tokens with ``cl100k_base`` (GPT-4-class models); special tokens count as text."""

    def count(self, text: str) -> int:
        """Number of tokens in ``text``."""
        return len(cl100k().encode(text, disallowed_special=()))
