"""What the MCP server tells a model about itself and each tool (read by the model that calls
them: what a tool returns and when to call it)."""

INSTRUCTIONS = (
    "Long-term memory of conversations with this user. Call `remember` with each thing the "
    "user tells you that may matter later (facts about them, plans, changes). Call `recall` "
    "before answering anything that depends on the past. Each recalled memory carries when it "
    "was said and when its event happened: check they fit the question before using it. A "
    "memory marked superseded has a later statement of the same kind that may have replaced "
    "it: check whether it did before preferring the later one."
)

REMEMBER = (
    "Store one message of the conversation in long-term memory, with when it was said. "
    "Call it for each user message worth keeping, with the same `speaker` name for the same "
    "person every time (a change of state is recognised per speaker). `at` is when the "
    "message was said (ISO 8601, e.g. 2024-05-28T09:30:00Z; a time without an offset is UTC); "
    "leave it out for now. Relative times in the text ('last week', 'yesterday') are read "
    "against `at`. Pass `idempotency_key` (e.g. the message's id) to make a retry safe: a "
    "second call with the same key stores nothing. Returns the memory's id (and, for a long "
    "text stored in pieces, every piece's) and the time it was stored as said."
)

RECALL = (
    "Find the memories that answer a question, best first: memories that fit the question's "
    'time and people ("in April", "now", "after the move") come before memories that '
    "are only similar. Each memory comes with when it was said, when its event happened, why "
    "it is valid for the question, and, for a state, a later statement of the same kind that "
    "may have replaced it (superseded). "
    "`at` is the moment of asking (ISO 8601; no offset: UTC), now when left out: 'now' and "
    "'last week' in the question are read against it. Returns the memories and the recall "
    "frame used."
)

LIST = (
    "List stored memories, newest first, `limit` at a time. To read the next page, pass the "
    "last id of this page as `after`. `session_id` keeps one session. Use it to review what "
    "is remembered; use `recall` to answer a question."
)

SHOW = "One memory by id, with its full episodic context (said, event, people, session)."

FORGET = (
    "Delete a remembered message by id, for good, with every piece it was stored as (when the "
    "user asks you to forget something, or it was stored by mistake). An id that matches no "
    "memory is an error."
)

MEMORIES = "The namespace's newest memories, as JSON (id, said_at, event, speaker, content)."

MEMORY = "One memory by id, with its full episodic context, as JSON."
