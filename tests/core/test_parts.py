"""A question about several things, split by an LLM into parts (issue 33's optional LLM path):
each part is ranked and the rankings fused, so every part's evidence reaches the list; the
code keeps only usable parts, and the frame's windows still decide what is valid."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from ramem_core import RaMem
from ramem_core.frames import MAX_PARTS, LLMFrameInducer
from ramem_core.store.chroma import ChromaStore
from ramem_core.testing import FakeLLM, WordCounter
from tests.builders import ids

QUESTION = "What instruments and sports does Carol play?"
PARTS = ["What instruments does Carol play?", "What sports does Carol play?"]


def _replies(parts: object) -> FakeLLM:
    """A model that answers the frame prompt unusably (the rule frame is used) and the parts
    prompt with ``parts``."""

    def reply(prompt: str) -> str:
        if "Split it into the separate questions" in prompt:
            return json.dumps({"parts": parts})
        return "no frame"

    return FakeLLM(reply)


def _carol(memory: RaMem) -> str:
    """Instruments said many times, the one sport Carol plays once and sports watched by
    someone else: the question's own ranking fills the top places with instruments."""
    said = [
        "Carol plays the violin in the community orchestra and the instruments club.",
        "Carol practises piano scales; instruments are her joy, she says, and she plays daily.",
        "Carol bought new strings for the violin; she plays instruments every evening.",
        "Carol plays the cello too, her third of the instruments she owns.",
    ]
    for n, text in enumerate(said):
        memory.add_turn("Carol", text, at=datetime(2023, 3, 1 + n, 10))
    for n in range(8):  # "sports" is no rare word here
        memory.add_turn(
            "Lucia",
            f"Lucia watched sports on channel {n} with her brother.",
            at=datetime(2023, 3, 7),
        )
    tennis = memory.add_turn(
        "Carol", "Carol plays tennis at the sports club on Saturdays.", at=datetime(2023, 3, 9)
    )
    return tennis.id


def _decomposing(memory: RaMem, llm: FakeLLM) -> RaMem:
    return RaMem(
        memory.store,
        inducer=LLMFrameInducer(llm, decompose=True),
        counter=WordCounter(),
        config=memory.retriever.config,  # the same ranking: only the frame differs
    )


def test_each_part_reaches_the_list(memory: RaMem) -> None:
    tennis = _carol(memory)
    plain = ids(memory.recall(QUESTION, k=3))
    assert tennis not in plain  # the instruments fill the question's own top three
    llm = _replies(PARTS)
    split = _decomposing(memory, llm).recall(QUESTION, k=3)
    assert tennis in [e.unit.id for e in split]
    assert any("Split it into the separate questions" in p for p in llm.prompts)


def test_without_decompose_no_parts_are_asked_for(memory: RaMem) -> None:
    _carol(memory)
    llm = _replies(PARTS)
    frame = RaMem(memory.store, inducer=LLMFrameInducer(llm)).frame(QUESTION)
    assert frame.parts == ()
    assert not any("Split it into the separate questions" in p for p in llm.prompts)


@pytest.mark.parametrize(
    "reply",
    [
        [],  # one thing asked
        ["What sports does Carol play?"],  # a single part is no split
        [QUESTION, "What sports does Carol play?"],  # the question itself is no part
        ["What sports does Carol play?", " what SPORTS does Carol play? "],  # duplicates
    ],
)
def test_a_question_with_fewer_than_two_parts_keeps_its_list(memory: RaMem, reply: object) -> None:
    _carol(memory)
    split = _decomposing(memory, _replies(reply))
    assert split.frame(QUESTION).parts == ()
    assert ids(split.recall(QUESTION, k=4)) == ids(memory.recall(QUESTION, k=4))


@pytest.mark.parametrize(
    "reply",
    [
        "parts",  # not a list
        [PARTS[0], 5],
        [PARTS[0], ""],
        [f"Part {n}?" for n in range(MAX_PARTS + 1)],
        [PARTS[0], "x" * 5_000],
    ],
)
def test_unusable_parts_are_dropped_and_counted(memory: RaMem, reply: object) -> None:
    inducer = LLMFrameInducer(_replies(reply), decompose=True)
    frame = RaMem(memory.store, inducer=inducer).frame(QUESTION)
    assert frame.parts == ()
    assert inducer.part_failures == 1


def test_a_failing_model_leaves_the_question_whole(memory: RaMem) -> None:
    def broken(prompt: str) -> str:
        raise TimeoutError("model down")

    inducer = LLMFrameInducer(FakeLLM(broken), decompose=True)
    frame = RaMem(memory.store, inducer=inducer).frame(QUESTION)
    assert frame.parts == ()
    assert inducer.part_failures == 1


def test_parts_respect_the_frames_window(store: ChromaStore) -> None:
    """A part's best memory outside the question's window does not come before one inside."""
    memory = RaMem(store, counter=WordCounter())
    march = memory.add_turn(
        "Dan", "Dan bought a red kayak and a paddle at the harbour shop.", at=datetime(2023, 3, 5)
    )
    august = memory.add_turn(
        "Dan", "Dan bought a tent for the camping trip.", at=datetime(2023, 8, 12)
    )
    memory.add_turn("Ana", "Ana bought a lamp for the study.", at=datetime(2023, 8, 14))
    memory.add_turn("Ana", "Ana painted the fence.", at=datetime(2023, 9, 20))
    question = "What did Ana and Dan buy in August 2023?"
    parts = ["What did Ana buy in August 2023?", "What did Dan buy a kayak paddle?"]
    found = _decomposing(memory, _replies(parts)).recall(question, k=4)
    ids = [e.unit.id for e in found]
    assert ids.index(august.id) < ids.index(march.id)
    assert next(e for e in found if e.unit.id == august.id).contextual
    assert not next(e for e in found if e.unit.id == march.id).contextual


def test_the_frame_reads_its_parts() -> None:
    from ramem_core import RecallFrame

    frame = RecallFrame("q", "q", parts=tuple(PARTS))
    assert f"part: {PARTS[1]}" in str(frame)


def test_the_evaluation_can_decompose_with_its_model(tmp_path: Path) -> None:
    from ramem_core.evaluation.harness import EvalOptions
    from tests.conftest import evaluate_mini
    from tests.core.test_llm_stages import stage_reply

    def reply(prompt: str) -> str:
        if "Split it into the separate questions" in prompt:
            return json.dumps({"parts": ["When did Caroline go?", "Where did Caroline go?"]})
        return stage_reply(prompt)

    fake = FakeLLM(reply)
    options = EvalOptions(
        systems=("ramem",), ks=(5,), llm=fake, llm_stages=True, decompose=True, model_name="f"
    )
    summary = evaluate_mini(tmp_path, options)
    assert summary["llm_usage"]["frames_per_query"]["calls"] == 2  # the frame and its parts
    assert any("Split it into the separate questions" in p for p in fake.prompts)


def test_decompose_needs_the_llm_stages() -> None:
    from ramem_core import InvalidInputError
    from ramem_core.evaluation.harness import EvalOptions

    with pytest.raises(InvalidInputError, match="decompose needs llm_stages"):
        EvalOptions(llm=FakeLLM(), decompose=True)
