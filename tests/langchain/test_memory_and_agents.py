"""Chain memory, create_agent middleware, the recall tool and model wrappers."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

from langchain_ramem import (
    LangChainEmbedder,
    LangChainLLM,
    MemoryContext,
    RaMemMemory,
    RaMemMiddleware,
    RaMemRetriever,
)
from langchain_ramem.testing import ScriptedChatModel
from ramem_core import ChromaStore, InvalidInputError, RaMem
from ramem_core.testing import WordCounter
from tests.conftest import ticking_clock, two_trips

# ---------------------------------------------------------------- BaseMemory for chains


def test_chain_memory_loads_situated_evidence_and_saves_turns(memory: RaMem) -> None:
    memory.add_conversation(two_trips())
    chain_memory = RaMemMemory(memory=memory, k=2, clock=ticking_clock())
    assert chain_memory.memory_variables == ["history"]
    loaded = chain_memory.load_memory_variables({"input": "What did Ben eat in August?"})
    assert 'said="28 August 2023, 21:00"' in loaded["history"]
    assert "sardines" in loaded["history"]

    chain_memory.save_context({"input": "I sold my bike today."}, {"output": "Noted!"})
    assert memory.count() == 8
    latest = chain_memory.load_memory_variables({"input": "What did I sell?"})["history"]
    assert "Human: I sold my bike today (= 1 September 2023)." in latest
    assert 'said="1 September 2023, 10:01"' in latest


def test_chain_memory_needs_to_know_its_keys(memory: RaMem) -> None:
    chain_memory = RaMemMemory(memory=memory)
    with pytest.raises(ValueError, match="set input_key"):
        chain_memory.load_memory_variables({"question": "a", "topic": "b"})
    keyed = RaMemMemory(memory=memory, input_key="question")
    assert keyed.load_memory_variables({"question": "a", "topic": "b"}) == {"history": ""}


def test_chain_memory_clear_drops_only_its_namespace(memory: RaMem) -> None:
    memory.add_conversation(two_trips(), namespace="alice")
    memory.add_conversation(two_trips(), namespace="bob")
    RaMemMemory(memory=memory, namespace="alice").clear()
    assert "alice" not in memory.store.namespaces()
    assert memory.count(namespace="bob") == 6


# ---------------------------------------------------------------- create_agent middleware


def test_middleware_injects_memories_and_records_the_exchange(memory: RaMem) -> None:
    memory.add_conversation(two_trips(), namespace="ben")
    model = ScriptedChatModel(replies=["You ate grilled sardines and ramen."])
    agent = create_agent(  # type: ignore[misc]  # ContextT not inferred
        model,
        system_prompt="You are Ben's assistant.",
        middleware=[RaMemMiddleware(memory, k=2, clock=ticking_clock(), with_tool=False)],
        context_schema=MemoryContext,
    )
    result = agent.invoke(
        {"messages": [("user", "What did I eat on my trip in August?")]},
        context=MemoryContext("ben"),
    )
    assert result["messages"][-1].text == "You ate grilled sardines and ramen."
    [sent] = model.calls
    system = sent[0]
    assert isinstance(system, SystemMessage)
    assert system.text.startswith("You are Ben's assistant.")
    assert 'said="28 August 2023, 21:00"' in system.text
    # memories are not written into the stored conversation history
    assert not any(isinstance(m, SystemMessage) for m in result["messages"])
    # the exchange is now memory, in Ben's namespace only
    assert memory.count(namespace="ben") == 8
    assert "alice" not in memory.store.namespaces()


def test_middleware_reads_namespace_from_config_and_keeps_users_apart(memory: RaMem) -> None:
    model = ScriptedChatModel(default="ok")
    agent = create_agent(  # type: ignore[misc]  # ContextT not inferred
        model, middleware=[RaMemMiddleware(memory, with_tool=False, clock=ticking_clock())]
    )
    agent.invoke(
        {"messages": [("user", "My locker code is 4417.")]},
        config={"configurable": {"user_id": "alice"}},
    )
    agent.invoke(
        {"messages": [("user", "What is my locker code?")]},
        config={"configurable": {"user_id": "mallory"}},
    )
    mallory_saw = model.calls[-1][0].text if isinstance(model.calls[-1][0], SystemMessage) else ""
    assert "4417" not in mallory_saw
    agent.invoke(
        {"messages": [("user", "What is my locker code?")]},
        config={"configurable": {"user_id": "alice"}},
    )
    assert "4417" in model.calls[-1][0].text


def test_middleware_refuses_to_guess_a_namespace(memory: RaMem) -> None:
    agent = create_agent(ScriptedChatModel(), middleware=[RaMemMiddleware(memory)])
    with pytest.raises(InvalidInputError, match="no memory namespace"):
        agent.invoke({"messages": [("user", "hello")]})


def test_agent_can_call_the_recall_tool(memory: RaMem) -> None:
    memory.add_conversation(two_trips(), namespace="ben")
    call = AIMessage(
        content="",
        tool_calls=[
            {
                "name": "recall_memory",
                "args": {"query": "doctor in February"},
                "id": "call-1",
                "type": "tool_call",
            }
        ],
    )
    model = ScriptedChatModel(replies=[call, "Your blood pressure was too high."])
    middleware = RaMemMiddleware(memory, k=1, record=False, with_tool=True)
    agent = create_agent(model, middleware=[middleware], context_schema=MemoryContext)  # type: ignore[misc]
    result = agent.invoke(
        {"messages": [("user", "What did my doctor say?")]}, context=MemoryContext("ben")
    )
    [tool_message] = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert "blood pressure is too high" in tool_message.text
    assert 'said="10 February 2023, 19:00"' in tool_message.text
    assert result["messages"][-1].text == "Your blood pressure was too high."


async def test_middleware_works_async(memory: RaMem) -> None:
    memory.add_conversation(two_trips(), namespace="ben")
    model = ScriptedChatModel(default="ok")
    agent = create_agent(  # type: ignore[misc]  # ContextT not inferred
        model,
        middleware=[RaMemMiddleware(memory, with_tool=False, clock=ticking_clock())],
        context_schema=MemoryContext,
    )
    await agent.ainvoke(
        {"messages": [("user", "What did I eat in August?")]}, context=MemoryContext("ben")
    )
    assert "sardines" in model.calls[0][0].text
    assert memory.count(namespace="ben") == 8


# ---------------------------------------------------------------- any LangChain model


def test_langchain_embeddings_and_chat_model_plug_into_the_core(tmp_path) -> None:
    embedder = LangChainEmbedder(DeterministicFakeEmbedding(size=32), name="fake-32")
    memory = RaMem(
        ChromaStore.persistent(tmp_path, embedder),
        counter=WordCounter(),
        llm=LangChainLLM(ScriptedChatModel(default="sardines")),
    )
    memory.add_conversation(two_trips())
    assert embedder.dimension == 32
    assert len(RaMemRetriever(memory=memory, k=3).invoke("grilled sardines")) == 3
    assert memory.answer("What did Ben eat in August?").text == "sardines"


def _system_text(messages: list[BaseMessage]) -> str:
    return messages[0].text if isinstance(messages[0], SystemMessage) else ""


def test_the_readme_agent_snippet_works_as_written(memory: RaMem, tmp_path) -> None:
    from pathlib import Path

    from ramem_core.loaders import demo_conversation

    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    block = readme.split("## LangChain and LlamaIndex")[1].split("```python")[1].split("```")[0]
    conversation, _ = demo_conversation()
    path = tmp_path / "conversation.json"
    path.write_text(
        json.dumps(
            {
                "id": conversation.id,
                "participants": list(conversation.participants),
                "sessions": [
                    {
                        "id": s.id,
                        "time": s.time.isoformat() if s.time else None,
                        "turns": [
                            {"id": t.id, "speaker": t.speaker, "text": t.text} for t in s.turns
                        ],
                    }
                    for s in conversation.sessions
                ],
            }
        )
    )
    model = ScriptedChatModel(replies=["Your doctor said your blood pressure is normal."])
    code = block.replace('"openai:gpt-4o-mini"', "model").replace(
        '"conversation.json"', repr(str(path))
    )
    exec(code, {"memory": memory, "model": model})
    [sent] = model.calls
    assert "<memory" in sent[0].text  # the model saw Alice's memories
    assert memory.count(namespace="alice") > 0
    # and with LangChain's own fake model, which has no tool calling
    from itertools import cycle

    from langchain_core.language_models import GenericFakeChatModel

    fake = GenericFakeChatModel(messages=cycle([AIMessage(content="It was normal.")]))
    exec(code, {"memory": memory, "model": fake})


def test_the_middleware_adds_no_tool_unless_asked_and_records_in_utc(memory: RaMem) -> None:
    """A model without tool calling (LangChain's GenericFakeChatModel) runs the agent as is:
    the recall tool is off by default; recorded times are naive UTC."""
    from datetime import timezone
    from itertools import cycle

    from langchain.agents import create_agent
    from langchain_core.language_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    from langchain_ramem import MemoryContext, RaMemMiddleware

    assert RaMemMiddleware(memory).tools == []
    model = GenericFakeChatModel(messages=cycle([AIMessage(content="Noted.")]))
    agent = create_agent(  # type: ignore[misc]  # ContextT not inferred
        model, middleware=[RaMemMiddleware(memory)], context_schema=MemoryContext
    )
    before = datetime.now(timezone.utc).replace(tzinfo=None, microsecond=0)  # stored in seconds
    agent.invoke({"messages": [("user", "I adopted a cat.")]}, context=MemoryContext("ann"))
    after = datetime.now(timezone.utc).replace(tzinfo=None)
    stored = memory.store.get("ann")
    assert {u.content for u in stored} == {"user: I adopted a cat.", "assistant: Noted."}
    for unit in stored:
        span = unit.context.session_span
        assert span is not None
        assert before <= span.end <= after


@pytest.mark.parametrize(
    ("record", "kinds"),
    [("exchange", {"question", "reply"}), (True, {"question", "reply"}), ("user", {"question"})],
)
def test_the_recording_policy_decides_what_an_agent_stores(
    memory: RaMem, record: Any, kinds: set[str]
) -> None:
    from itertools import cycle

    from langchain.agents import create_agent
    from langchain_core.language_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    from langchain_ramem import MemoryContext, RaMemMiddleware

    model = GenericFakeChatModel(messages=cycle([AIMessage(content="Your sister Jo.")]))
    agent = create_agent(  # type: ignore[misc]  # ContextT not inferred
        model,
        middleware=[RaMemMiddleware(memory, record=record)],
        context_schema=MemoryContext,
    )
    agent.invoke({"messages": [("user", "Who went camping with me?")]}, context=MemoryContext("jo"))
    assert {u.context.kind.value for u in memory.store.get("jo")} == kinds


def test_an_unknown_recording_policy_is_refused(memory: RaMem) -> None:
    from langchain_ramem import RaMemMiddleware

    with pytest.raises(InvalidInputError, match="record must be"):
        RaMemMiddleware(memory, record="everything")  # type: ignore[arg-type]


# ---------------------------------------------------------------- valid now (issue 30)


class _Clock:
    """A clock the test moves: the moment of asking."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def _weekends(memory: RaMem) -> None:
    memory.add_turn("user", "This weekend I went hiking in the Alps.", at=datetime(2024, 3, 3, 18))
    memory.add_turn(
        "user", "This weekend I painted the kitchen blue.", at=datetime(2024, 3, 10, 18)
    )


def test_the_middleware_grounds_each_question_at_the_moment_of_asking(memory: RaMem) -> None:
    """The same "last weekend" asked a week apart is two weekends; what the model receives
    says when it was asked and why each memory applies."""
    _weekends(memory)
    clock = _Clock(datetime(2024, 3, 4, 9))
    model = ScriptedChatModel(replies=["Hiking.", "Painting."])
    agent = create_agent(  # type: ignore[misc]  # ContextT not inferred
        model,
        middleware=[RaMemMiddleware(memory, k=1, clock=clock, record="none")],
    )
    question = {"messages": [("user", "What did I do last weekend?")]}
    config = {"configurable": {"user_id": "default"}}
    agent.invoke(question, config=config)  # type: ignore[call-overload]
    clock.now = datetime(2024, 3, 11, 9)
    agent.invoke(question, config=config)  # type: ignore[call-overload]
    first, second = (calls[0].text for calls in model.calls)
    assert "Asked on: Monday 4 March 2024, 09:00" in first
    assert "hiking" in first
    assert "painted" not in first
    assert "Asked on: Monday 11 March 2024, 09:00" in second
    assert "painted" in second
    assert "valid: event 9 March 2024 - 10 March 2024 within 'last weekend'" in second
    # what the model saw is what recall at that moment returns
    [seen] = memory.recall("What did I do last weekend?", k=1, at=clock.now)
    assert seen.unit.content.endswith("I painted the kitchen blue.")


def test_the_recall_tool_and_the_chain_memory_ground_at_their_clock(memory: RaMem) -> None:
    _weekends(memory)
    call = AIMessage(
        content="",
        tool_calls=[
            {
                "name": "recall_memory",
                "args": {"query": "What did I do last weekend?"},
                "id": "call-1",
                "type": "tool_call",
            }
        ],
    )
    model = ScriptedChatModel(replies=[call, "Hiking."])
    middleware = RaMemMiddleware(
        memory, k=1, record=False, with_tool=True, clock=lambda: datetime(2024, 3, 4, 9)
    )
    agent = create_agent(model, middleware=[middleware], context_schema=MemoryContext)  # type: ignore[misc]
    result = agent.invoke(
        {"messages": [("user", "Anything from my weekend?")]}, context=MemoryContext("default")
    )
    [tool_message] = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert "Asked on: Monday 4 March 2024" in tool_message.text
    assert "hiking" in tool_message.text
    chain = RaMemMemory(memory=memory, k=1, clock=lambda: datetime(2024, 3, 11, 8))
    loaded = chain.load_memory_variables({"input": "What did I do last weekend?"})["history"]
    assert "Asked on: Monday 11 March 2024" in loaded
    assert "painted" in loaded


def test_documents_say_what_a_memory_is_and_what_superseded_it(memory: RaMem) -> None:
    memory.add_turn("user", "I live in Lisbon.", at=datetime(2024, 1, 10))
    memory.add_turn("user", "I moved to Porto.", at=datetime(2024, 6, 2))
    memory.add_exchange("Where do I live?", "In Porto.", at=datetime(2024, 7, 1))
    retriever = RaMemRetriever(memory=memory, k=4, at=datetime(2024, 7, 2))
    docs = retriever.invoke("Where do I live now?")
    kinds = {d.metadata["content"].split(": ", 1)[1]: d.metadata["kind"] for d in docs}
    assert kinds["I moved to Porto."] == "statement"
    assert kinds["Where do I live?"] == "question"
    assert kinds["In Porto."] == "reply"
    lisbon = next(d for d in docs if "Lisbon" in d.metadata["content"])
    assert lisbon.metadata["superseded_on"] == "2024-06-02T00:00:00"
    assert "superseded: on 2 June 2024" in lisbon.page_content


def test_a_new_users_reads_are_empty(memory: RaMem) -> None:
    retriever = RaMemRetriever(memory=memory, namespace="new-user")
    assert retriever.invoke("What did I do last weekend?") == []
    chain = RaMemMemory(memory=memory, namespace="new-user")
    assert chain.load_memory_variables({"input": "hello"}) == {"history": ""}
    assert not memory.has_namespace("new-user")  # reads never create one


def test_the_readme_two_month_conversation_answers_now_and_then_truly(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The README's "Valid now" snippet, run as written with LangChain's own fake model:
    "now" and "then" questions get different, true first memories."""
    from pathlib import Path

    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    block = readme.split("### Valid now: grounded at the moment of asking")[1]
    exec(block.split("```python")[1].split("```")[0], {})
    printed = capsys.readouterr().out
    now, rest = printed.split("Where did I live in mid-May?")
    then, rest = rest.split("When is my dentist appointment?")
    appointment, count = rest.split("How many houseplants do I have?")

    def first(block: str) -> str:
        return block.split('<memory n="1"')[1].split("</memory>")[0]

    assert "Porto" in first(now)
    # Lisbon, still there, after Porto: valid until the week "last week" named, not 28 May
    assert "superseded: since week of 20 May 2024 by " in now
    assert "(said 28 May 2024): valid until then" in now
    assert "Lisbon" in first(then)
    assert "held through 'mid-May'" in first(then)
    assert "June 4" in first(appointment)
    assert "14 now" in first(count)  # the count as last restated
    assert "12 houseplants" in count  # the earlier count, still there, after it
