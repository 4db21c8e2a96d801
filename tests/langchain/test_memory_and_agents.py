"""Chain memory, create_agent middleware, the recall tool and model wrappers."""

from __future__ import annotations

from datetime import datetime, timedelta
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
from ramem_core.transfer import said_at
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


@pytest.mark.parametrize("use_async", [False, True])
async def test_a_chain_records_its_input_at_the_time_it_was_said(
    memory: RaMem, use_async: bool
) -> None:
    """Said at 23:58 on 28 May, the chain's run ends after midnight: "yesterday" is 27 May;
    said again on 9 June, the same words are stored at their own time."""
    from langchain_classic.chains.base import Chain

    clock = _Clock(datetime(2024, 5, 28, 23, 58))

    class SlowChain(Chain):
        @property
        def input_keys(self) -> list[str]:
            return ["input"]

        @property
        def output_keys(self) -> list[str]:
            return ["output"]

        def _call(self, inputs: dict[str, Any], run_manager: Any = None) -> dict[str, str]:
            clock.now += timedelta(minutes=5)  # a long model call, or an agent's tools
            return {"output": "Congratulations on the move!"}

    chain = SlowChain(memory=RaMemMemory(memory=memory, namespace="ana", clock=clock))
    said = {"input": "I moved to Porto yesterday."}
    for now in (datetime(2024, 5, 28, 23, 58), datetime(2024, 6, 9, 10)):
        clock.now = now
        await chain.ainvoke(said) if use_async else chain.invoke(said)
    first, again = sorted(
        (u for u in memory.store.get("ana") if u.content.startswith("Human:")),
        key=lambda u: said_at(u) or datetime.min,
    )
    assert (said_at(first), said_at(again)) == (
        datetime(2024, 5, 28, 23, 58),
        datetime(2024, 6, 9, 10),
    )
    assert first.context.event_time is not None
    assert first.context.event_time.start == datetime(2024, 5, 27)


def test_chain_memory_keeps_a_bounded_record_of_inputs_not_saved(memory: RaMem) -> None:
    chain_memory = RaMemMemory(memory=memory, clock=ticking_clock())
    for n in range(100):  # a chain failing each time: loaded for, never saved
        chain_memory.load_memory_variables({"input": f"question {n}"})
    assert len(chain_memory._said) == 64
    assert chain_memory._said[0][0] == "question 36"


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


def test_the_langchain_pages_agent_snippet_works_as_written(memory: RaMem) -> None:
    import re
    from pathlib import Path

    from ramem_core.loaders import demo_conversation

    page = (Path(__file__).parents[2] / "docs" / "langchain.md").read_text(encoding="utf-8")
    block = page.split("## Agent middleware")[1].split("```python")[1].split("```")[0]
    conversation, _ = demo_conversation()
    memory.add_conversation(conversation, namespace="alice")
    before = memory.count(namespace="alice")
    model = ScriptedChatModel(replies=["Your doctor said your blood pressure is normal."])
    code = re.sub(r"^model = .*$", "model = scripted", block, flags=re.M)
    exec(code, {"memory": memory, "scripted": model})
    [sent] = model.calls
    assert "<memory" in sent[0].text  # the model saw Alice's memories
    assert memory.count(namespace="alice") > before  # and the exchange was recorded there
    # as written, with LangChain's own fake model, which has no tool calling
    exec(block, {"memory": memory})


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
    assert "superseded: possibly, on 2 June 2024" in lisbon.page_content


def test_a_new_users_reads_are_empty(memory: RaMem) -> None:
    retriever = RaMemRetriever(memory=memory, namespace="new-user")
    assert retriever.invoke("What did I do last weekend?") == []
    chain = RaMemMemory(memory=memory, namespace="new-user")
    assert chain.load_memory_variables({"input": "hello"}) == {"history": ""}
    assert not memory.has_namespace("new-user")  # reads never create one


def test_the_two_month_conversation_of_the_docs_answers_now_and_then_truly(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The LangChain page's "Valid now" snippet, run as written with LangChain's own fake model:
    "now" and "then" questions get different, true first memories."""
    from pathlib import Path

    page = (Path(__file__).parents[2] / "docs" / "langchain.md").read_text(encoding="utf-8")
    block = page.split("## Valid now: grounded at the moment of asking")[1]
    exec(block.split("```python")[1].split("```")[0], {})
    printed = capsys.readouterr().out
    now, rest = printed.split("Where did I live in mid-May?")
    then, rest = rest.split("When is my dentist appointment?")
    appointment, count = rest.split("How many houseplants do I have?")

    def first(block: str) -> str:
        return block.split('<memory n="1"')[1].split("</memory>")[0]

    assert "Porto" in first(now)
    assert "Lisbon" in now  # still there, after Porto
    assert "Lisbon" in first(then)
    # Lisbon until the move: held during at least part of mid-May; Porto, moved some day of
    # the week of 20 May, may have held during part of it; neither through all of it
    assert "until week of 20 May 2024 if that later statement changed it then, so held" in (
        first(then)
    )
    assert "so may have held during part of 'mid-May'" in then  # Porto: it began that week
    assert "held through 'mid-May'" not in then
    assert "June 4" in first(appointment)
    assert "14 now" in first(count)  # the count as last restated
    assert "12 houseplants" in count  # the earlier count, still there, after it


# ---------------------------------------------------------------- when a message was said


@pytest.mark.parametrize("use_async", [False, True])
async def test_the_middleware_records_a_message_at_the_time_it_was_said(
    memory: RaMem, use_async: bool
) -> None:
    """Said on 28 May, the turn paused for a human's approval until 9 June: the exchange is
    stored as said on 28 May, so "last week" is the week before 28 May."""
    from langchain.agents.middleware import HumanInTheLoopMiddleware
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    @tool
    def update_address(city: str) -> str:
        """Update the user's address."""
        return f"Address set to {city}."

    call = AIMessage(
        content="",
        tool_calls=[{"name": "update_address", "args": {"city": "Porto"}, "id": "c1"}],
    )
    clock = _Clock(datetime(2024, 5, 28, 9))
    agent = create_agent(  # type: ignore[misc]  # ContextT not inferred
        ScriptedChatModel(replies=[call, "Done: your address is Porto."]),
        tools=[update_address],
        middleware=[
            HumanInTheLoopMiddleware(interrupt_on={"update_address": True}),
            RaMemMiddleware(memory, clock=clock),
        ],
        checkpointer=InMemorySaver(),
        context_schema=MemoryContext,
    )
    config: Any = {"configurable": {"thread_id": "ana"}}

    async def run(step: Any) -> None:
        if use_async:
            await agent.ainvoke(step, config, context=MemoryContext("ana"))
        else:
            agent.invoke(step, config, context=MemoryContext("ana"))

    await run({"messages": [("user", "I moved to Porto last week.")]})
    assert memory.count(namespace="ana") == 0  # waiting for the approval
    clock.now = datetime(2024, 6, 9, 18)
    await run(Command(resume={"decisions": [{"type": "approve"}]}))
    [porto] = [u for u in memory.store.get("ana") if u.content.startswith("user:")]
    assert said_at(porto) == datetime(2024, 5, 28, 9)
    assert porto.context.event_time is not None
    assert (porto.context.event_time.start, porto.context.event_time.end) == (
        datetime(2024, 5, 20),  # the week before 28 May, Monday to Sunday
        datetime(2024, 5, 26, 23, 59, 59),
    )
