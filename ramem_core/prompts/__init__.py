"""Prompt templates of RaMem, as named constants (no logic lives here)."""

from ramem_core.prompts.anchoring import ANCHOR_PROMPT, ANCHOR_PROMPT_VERSION
from ramem_core.prompts.answer import (
    ANSWER_PROMPT,
    ANSWER_PROMPT_VERSION,
    CONTEXT_PROMPT,
    CONTEXT_PROMPT_VERSION,
)
from ramem_core.prompts.frames import (
    FRAME_PROMPT,
    FRAME_PROMPT_VERSION,
    PARTS_PROMPT,
    PARTS_PROMPT_VERSION,
)

__all__ = [
    "ANCHOR_PROMPT",
    "ANCHOR_PROMPT_VERSION",
    "ANSWER_PROMPT",
    "ANSWER_PROMPT_VERSION",
    "CONTEXT_PROMPT",
    "CONTEXT_PROMPT_VERSION",
    "FRAME_PROMPT",
    "FRAME_PROMPT_VERSION",
    "PARTS_PROMPT",
    "PARTS_PROMPT_VERSION",
]
