"""Stage 1 prompt: an LLM writes situated memory units for a window of turns."""

from typing import Any

ANCHOR_PROMPT_VERSION = "anchor-v3"

ANCHOR_PROMPT = """\
You turn a window of a conversation into long-term memories.

Session: {session_id}, said on {session_time}. Participants known so far: {participants}.
Turns (id, speaker, text):
{turns}

Write memories that are each one self-contained, lossless statement: name people instead of
pronouns, resolve relative times against the session date ("yesterday" said on 8 May 2023 ->
"on 7 May 2023"), keep every fact, number, name and shared image. Every turn id must be the
source of at least one memory; greetings may be merged into a neighbouring memory.

Reply with one JSON object and nothing else:
{{"memories": [{{
  "content": "<the self-contained statement>",
  "source_ids": ["<turn ids this memory restates>"],
  "event_time": {{"start": "YYYY-MM-DD", "end": "YYYY-MM-DD",
                  "granularity": "day|week|month|year"}} or null,
  "mentions": [{{"text": "<time words as written>", "start": "YYYY-MM-DD",
                 "end": "YYYY-MM-DD", "granularity": "day|week|month|year"}}],
  "participants": ["<people involved>"],
  "location": "<place>" or null,
  "entities": ["<proper nouns, numbers>"],
  "topic": "<a few keywords>",
  "updates": "<the state this memory sets, in a few words>" or null,
  "owner": "self" or "<whose state it is, as written>",
  "replaces": true or false or null
}}]}}
Use null for an event time that is not stated; never guess one. Set "updates" only when the
memory states something about a person that can change later and be stated anew (where they
live or work, an appointment's date, a preference, how many of something they have), naming
that state the same way whenever it comes up ("where Alice lives", "the date of Alice's
dentist appointment"); use null otherwise. "owner" says whose state the memory speaks of:
"self" when it is the speaker's own, else the person as the speaker names them ("my
husband", "Priya"). Set "replaces" to true when the memory changes, ends or reschedules a
state its owner stated before (a new job, a move, a date moved), to false when it only adds a
second one, confirms it, or is temporary, hypothetical, a plan not yet carried out, a question
or a story about an earlier time, and to null when it states no state that can change."""

_DATE: dict[str, Any] = {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"}
_GRANULARITY: dict[str, Any] = {"type": "string", "enum": ["day", "week", "month", "year"]}
_SPAN: dict[str, Any] = {
    "type": "object",
    "properties": {"start": _DATE, "end": _DATE, "granularity": _GRANULARITY},
    "required": ["start", "end", "granularity"],
    "additionalProperties": False,
}
_MENTION: dict[str, Any] = {
    "type": "object",
    "properties": {
        "text": {"type": "string", "maxLength": 80},
        "start": _DATE,
        "end": _DATE,
        "granularity": _GRANULARITY,
    },
    "required": ["text", "start", "end", "granularity"],
    "additionalProperties": False,
}
_WORDS: dict[str, Any] = {
    "type": "array",
    "items": {"type": "string", "maxLength": 80},
    "maxItems": 12,
}

ANCHOR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "memories": {
            "type": "array",
            "minItems": 1,
            "maxItems": 64,
            "items": {
                "type": "object",
                "properties": {
                    "content": {"type": "string", "minLength": 1, "maxLength": 2000},
                    "source_ids": {
                        "type": "array",
                        "items": {"type": "string", "maxLength": 80},
                        "minItems": 1,
                        "maxItems": 32,
                    },
                    "event_time": {"anyOf": [_SPAN, {"type": "null"}]},
                    "mentions": {"type": "array", "items": _MENTION, "maxItems": 8},
                    "participants": _WORDS,
                    "location": {"type": ["string", "null"], "maxLength": 120},
                    "entities": _WORDS,
                    "topic": {"type": "string", "maxLength": 120},
                    "updates": {"type": ["string", "null"], "maxLength": 120},
                    "owner": {"type": "string", "maxLength": 80},
                    "replaces": {"type": ["boolean", "null"]},
                },
                "required": [
                    "content",
                    "source_ids",
                    "event_time",
                    "mentions",
                    "participants",
                    "location",
                    "entities",
                    "topic",
                    "updates",
                    "owner",
                    "replaces",
                ],
                "additionalProperties": False,
            },
        }
    },
    "required": ["memories"],
    "additionalProperties": False,
}
"""The JSON schema of an :data:`ANCHOR_PROMPT` reply, for a model that can be held to one
(``LangChainLLM(chat, json_schema=ANCHOR_SCHEMA)`` on an OpenAI-compatible server): the
same shape the prompt asks for, with bounds on every list and string so that a constrained
reply always ends. The anchorer checks every reply the same way with or without it."""
