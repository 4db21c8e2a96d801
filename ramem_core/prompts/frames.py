"""Stage 2 prompt: an LLM proposes a recall frame; code grounds or drops each constraint."""

FRAME_PROMPT_VERSION = "frame-v1"

FRAME_PROMPT = """\
You split a question about a long conversation into an information need and recall conditions.

The conversation runs from {range_start} to {range_end}; "now" for the question is {now}.
People in it: {participants}.

Question: {question}

Reply with one JSON object and nothing else:
{{"need": "<the question without its time and episode conditions>",
  "times": [{{"text": "<the question's words>", "start": "YYYY-MM-DD", "end": "YYYY-MM-DD",
              "granularity": "day|week|month|year"}}],
  "participants": ["<people the answer must involve>"]}}
Resolve relative times ("last August", "two weeks ago") against "now". Leave "times" empty
when the question states no time; never invent one."""

PARTS_PROMPT_VERSION = "parts-v1"

PARTS_PROMPT = """\
A question about a long conversation may ask for several things at once ("What pets does Nate
have?", "What did Ana and Ben each buy in Paris?"). Split it into the separate questions a
search would need, one per thing, each complete on its own.

Question: {question}

Reply with one JSON object and nothing else:
{{"parts": ["<a self-contained question>", ...]}}
Give two to four parts when the question asks for several things; give an empty list when it
asks for one thing. Never add what the question does not ask."""
