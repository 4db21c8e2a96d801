"""Prompt templates of RaMem, as named constants (no logic lives here)."""

from ramem_core.prompts.answer import (
    ANSWER_PROMPT,
    ANSWER_PROMPT_VERSION,
    CONTEXT_PROMPT,
    CONTEXT_PROMPT_VERSION,
)

__all__ = [
    "ANSWER_PROMPT",
    "ANSWER_PROMPT_VERSION",
    "CONTEXT_PROMPT",
    "CONTEXT_PROMPT_VERSION",
]
