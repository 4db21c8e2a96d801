"""Stage 1 prompt: an LLM writes situated memory units for a window of turns."""

ANCHOR_PROMPT_VERSION = "anchor-v2"

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
  "updates": "<the state this memory sets, in a few words>" or null
}}]}}
Use null for an event time that is not stated; never guess one. Set "updates" only when the
memory states something about a person that can change later and be stated anew (where they
live or work, an appointment's date, a preference, how many of something they have), naming
that state the same way whenever it comes up ("where Alice lives", "the date of Alice's
dentist appointment"); use null otherwise."""
