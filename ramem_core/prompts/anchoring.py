"""Stage 1 prompt: an LLM writes situated memory units for a window of turns."""

ANCHOR_PROMPT_VERSION = "anchor-v1"

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
  "topic": "<a few keywords>"
}}]}}
Use null for an event time that is not stated; never guess one."""
