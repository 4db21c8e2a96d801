"""LLM-backed anchoring and frames with fake models: the code guards every LLM output."""

from __future__ import annotations

import json
import re
import threading
import time
from datetime import datetime
from pathlib import Path

import pytest

from ramem_core import Conversation, FrameContext, Granularity, RaMem, TimeSpan
from ramem_core.anchoring import LLMAnchorer, RuleAnchorer
from ramem_core.frames import LLMFrameInducer, RuleFrameInducer
from ramem_core.llm import MeteredLLM, parse_json_object
from ramem_core.testing import FakeLLM, WordCounter
from tests.builders import memory_for, session
from tests.conftest import two_trips


def window_ids(prompt: str) -> list[str]:
    return re.findall(r"^(\S+) \| ", prompt, re.MULTILINE)


def good_reply(prompt: str) -> str:
    return json.dumps({"memories": [memory_for(i) for i in window_ids(prompt)]})


def conversation() -> Conversation:
    marathon = session(
        "S1",
        datetime(2023, 5, 8, 10),
        "Ann: I ran a marathon yesterday.",
        "Bob: Wow, congratulations!",
        "Ann: Thanks, it was in Berlin.",
    )
    return Conversation("c", (marathon,), ("Ann", "Bob"))


def test_llm_units_are_checked_and_every_turn_is_covered() -> None:
    def reply(prompt: str) -> str:
        return json.dumps(
            {
                "memories": [
                    memory_for(
                        "S1:1",
                        content="Ann ran a marathon on 7 May 2023.",
                        event_time={
                            "start": "2023-05-07",
                            "end": "2023-05-07",
                            "granularity": "day",
                        },
                        mentions=[
                            {
                                "text": "yesterday",
                                "start": "2023-05-07",
                                "end": "2023-05-07",
                                "granularity": "day",
                            }
                        ],
                        participants=["Ann"],
                        location="Berlin",
                    ),
                    memory_for("S1:3", source_ids=["S1:3", "S9:9"]),  # one wrong source id
                ]
            }
        )

    anchorer = LLMAnchorer(FakeLLM(reply))
    units = anchorer.anchor(conversation())
    first = units[0]
    assert first.content == "Ann ran a marathon on 7 May 2023."
    assert first.source_ids == ("S1:1",)
    assert first.context.event_time == TimeSpan(
        datetime(2023, 5, 7), datetime(2023, 5, 7, 23, 59, 59), Granularity.DAY
    )
    assert first.context.location == "Berlin"
    assert units[1].source_ids == ("S1:3",)  # the hallucinated id is dropped, the unit kept
    covered = {sid for u in units for sid in u.source_ids}
    assert covered == {"S1:1", "S1:2", "S1:3"}  # S1:2 was skipped by the LLM: rules cover it
    assert anchorer.report.fallback_turns == 1
    assert anchorer.report.llm_units == 2


def test_malformed_json_is_retried_once() -> None:
    replies = iter(["not json at all", None])

    def reply(prompt: str) -> str:
        first = next(replies)
        return first if first is not None else good_reply(prompt)

    anchorer = LLMAnchorer(FakeLLM(reply))
    units = anchorer.anchor(conversation())
    assert anchorer.report.retries == 1
    assert anchorer.report.fallback_windows == 0
    assert [u.content for u in units] == ["Restated S1:1.", "Restated S1:2.", "Restated S1:3."]


@pytest.mark.parametrize(
    "bad_reply",
    [
        '```json\n{"memories": []}\n```',  # empty list
        json.dumps({"memories": [{"source_ids": ["S1:1"]}]}),  # missing content
        json.dumps({"memories": [memory_for("S7:1")]}),  # only wrong source ids
        json.dumps({"notes": "hello"}),  # wrong shape
        "{broken",
    ],
)
def test_unusable_replies_fall_back_to_rules_and_are_counted(bad_reply: str) -> None:
    anchorer = LLMAnchorer(FakeLLM(bad_reply))
    units = anchorer.anchor(conversation())
    assert units == RuleAnchorer().anchor(conversation())  # nothing lost
    assert anchorer.report.retries == 1
    assert anchorer.report.fallback_windows == 1
    assert anchorer.report.fallback_turns == 3


def test_hallucinated_dates_are_dropped_not_stored() -> None:
    def reply(prompt: str) -> str:
        return json.dumps(
            {
                "memories": [
                    memory_for(
                        i,
                        event_time={
                            "start": "1850-01-01",
                            "end": "1850-01-02",
                            "granularity": "day",
                        },
                        mentions=[{"text": "soon", "start": "2023-13-45", "end": "x"}],
                    )
                    for i in window_ids(prompt)
                ]
            }
        )

    anchorer = LLMAnchorer(FakeLLM(reply))
    units = anchorer.anchor(conversation())
    assert all(u.context.event_time is None for u in units)
    assert all(u.context.mentions == () for u in units)
    assert anchorer.report.dropped_times == 6


def test_failing_model_calls_fall_back_too() -> None:
    def reply(prompt: str) -> str:
        raise TimeoutError("model down")

    metered = MeteredLLM(FakeLLM(reply))
    anchorer = LLMAnchorer(metered)
    assert len(anchorer.anchor(conversation())) == 3
    assert metered.usage.failures == 2
    assert anchorer.report.fallback_windows == 1


def test_windows_respect_sessions_and_run_concurrently() -> None:
    seen: list[list[str]] = []
    # every call waits until all three windows are in flight: run one at a time, it times out
    together = threading.Barrier(3, timeout=10)

    def reply(prompt: str) -> str:
        seen.append(window_ids(prompt))
        together.wait()
        return good_reply(prompt)

    anchorer = LLMAnchorer(FakeLLM(reply), window=2, workers=3)
    units = anchorer.anchor(two_trips())
    assert anchorer.report.fallback_windows == 0
    assert sorted(seen) == [["S1:1", "S1:2"], ["S2:1", "S2:2"], ["S3:1", "S3:2"]]
    assert [u.source_ids[0] for u in units] == ["S1:1", "S1:2", "S2:1", "S2:2", "S3:1", "S3:2"]


def test_llm_results_are_cached_on_disk(tmp_path: Path) -> None:
    fake = FakeLLM(good_reply)
    first = MeteredLLM(fake, model_name="fake", cache_path=tmp_path / "llm.sqlite")
    LLMAnchorer(first).anchor(conversation())
    second = MeteredLLM(fake, model_name="fake", cache_path=tmp_path / "llm.sqlite")
    LLMAnchorer(second).anchor(conversation())
    assert (first.usage.calls, second.usage.calls, second.usage.cached) == (1, 0, 1)
    assert len(fake.prompts) == 1
    other_model = MeteredLLM(fake, model_name="other", cache_path=tmp_path / "llm.sqlite")
    LLMAnchorer(other_model).anchor(conversation())
    assert other_model.usage.calls == 1


def test_metered_llm_counts_tokens() -> None:
    metered = MeteredLLM(FakeLLM("two words"), counter=WordCounter())
    metered.complete("one two three")
    assert metered.usage.as_dict() == {
        "calls": 1,
        "cached": 0,
        "prompt_tokens": 3,
        "completion_tokens": 2,
        "failures": 0,
    }


class SlowWordCounter(WordCounter):
    """Counts words slowly, so that threads interleave inside the usage update."""

    def count(self, text: str) -> int:
        time.sleep(0.001)
        return super().count(text)


def test_metered_llm_counts_every_call_from_many_threads(tmp_path: Path) -> None:
    metered = MeteredLLM(
        FakeLLM("two words"), counter=SlowWordCounter(), cache_path=tmp_path / "llm.sqlite"
    )

    def work(worker: int) -> None:
        for i in range(15):
            metered.complete(f"prompt {worker} {i}")

    threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert metered.usage.calls == 120
    assert metered.usage.prompt_tokens == 3 * 120
    assert metered.usage.completion_tokens == 2 * 120


def test_parse_json_object_tolerates_chatter() -> None:
    assert parse_json_object('Sure! ```json\n{"a": 1}\n``` hope it helps') == {"a": 1}
    assert parse_json_object('prefix {"a": {"b": 2}} suffix') == {"a": {"b": 2}}
    with pytest.raises(ValueError, match="no JSON object"):
        parse_json_object("[1, 2]")


# ---------------------------------------------------------------- frames

NOW = datetime(2023, 11, 20)
CONTEXT = FrameContext(
    now=NOW,
    memory_range=TimeSpan(datetime(2023, 2, 1), NOW, Granularity.INSTANT),
    participants=("Carol",),
)


def test_llm_frame_is_grounded_by_code() -> None:
    reply = json.dumps(
        {
            "need": "What did Carol say?",
            "times": [
                {
                    "text": "last August",
                    "start": "2023-08-01",
                    "end": "2023-08-31",
                    "granularity": "month",
                },
                {
                    "text": "in 1999",
                    "start": "1999-01-01",
                    "end": "1999-12-31",
                    "granularity": "year",
                },
                {"text": "garbled", "start": "someday"},
            ],
            "participants": ["Carol", "Zeus"],
        }
    )
    inducer = LLMFrameInducer(FakeLLM(reply))
    frame = inducer.induce("What did Carol say last August, in 1999?", CONTEXT)
    assert frame.need == "What did Carol say?"
    assert [t.text for t in frame.grounded_times] == ["last August"]
    assert [t.grounded for t in frame.times] == [True, False, False]
    assert "outside" in frame.times[1].reason
    assert frame.participants == ("Carol",)  # the invented name is dropped
    assert inducer.dropped == 2


@pytest.mark.parametrize("bad", ["nonsense", json.dumps({"times": "August"})])
def test_unusable_frame_falls_back_to_rules(bad: str) -> None:
    inducer = LLMFrameInducer(FakeLLM(bad))
    query = "What did Carol say last August?"
    assert inducer.induce(query, CONTEXT) == RuleFrameInducer().induce(query, CONTEXT)
    assert inducer.fallbacks == 1


def test_every_role_end_to_end(memory: RaMem) -> None:
    frame_reply = json.dumps(
        {
            "need": "What did Ben eat?",
            "participants": [],
            "times": [
                {
                    "text": "in August",
                    "start": "2023-08-01",
                    "end": "2023-08-31",
                    "granularity": "month",
                }
            ],
        }
    )
    answerer = FakeLLM("grilled sardines and ramen")
    llm_memory = RaMem(
        memory.store,
        anchorer=LLMAnchorer(FakeLLM(good_reply)),
        inducer=LLMFrameInducer(FakeLLM(frame_reply)),
        llm=answerer,
        counter=WordCounter(),
    )
    llm_memory.add_conversation(two_trips())
    assert llm_memory.count() == 6
    result = llm_memory.answer("What did Ben eat in August?", k=2)
    assert result.text == "grilled sardines and ramen"
    assert result.context.included[0].unit.context.session_id == "S3"
    assert 'said="28 August 2023, 21:00"' in answerer.prompts[0]


def stage_reply(prompt: str) -> str:
    """A model for every stage of an evaluation of ``locomo_mini.json``: units for anchoring,
    a frame with no condition, and the answer."""
    if prompt.startswith("You turn a window"):
        return good_reply(prompt)
    if prompt.startswith("You split a question"):
        return json.dumps({"need": "When did Caroline go?", "times": [], "participants": []})
    return "7 May 2023"


def test_evaluation_reports_llm_calls_and_tokens(tmp_path: Path) -> None:
    from ramem_core.evaluation.harness import EvalOptions
    from tests.conftest import evaluate_mini

    fake = FakeLLM(stage_reply)
    options = EvalOptions(
        systems=("ramem", "content"), ks=(5,), llm=fake, llm_stages=True, model_name="fake"
    )
    summary = evaluate_mini(tmp_path, options)
    usage = summary["llm_usage"]
    assert usage["ingested_turns"] == 4
    assert usage["anchoring_per_turn"]["calls"] == 2  # one window per session
    assert usage["anchoring_per_turn"]["calls_per_unit"] == 0.5
    assert usage["frames_per_query"]["calls"] == 1  # RaMem only: content needs no frame
    answers = usage["answers_per_query_and_run"]
    assert answers["calls"] + answers["cached"] == 2  # identical prompts share one call
    assert summary["runs"]["ramem"]["qa"]["temporal"]["f1"] == 1.0
    # a rerun answers every LLM call from the on-disk cache
    calls_before = len(fake.prompts)
    again = evaluate_mini(tmp_path, options)
    assert len(fake.prompts) == calls_before
    assert again["llm_usage"]["anchoring_per_turn"]["cached"] == 2


def test_only_usable_replies_are_cached_so_the_retry_reaches_the_model(tmp_path: Path) -> None:
    replies = iter(["not json at all", None])

    def first_bad(prompt: str) -> str:
        reply = next(replies, None)
        return reply if reply is not None else good_reply(prompt)

    fake = FakeLLM(first_bad)
    cache = tmp_path / "llm.sqlite"
    llm = MeteredLLM(fake, model_name="fake", cache_path=cache)
    anchorer = LLMAnchorer(llm)
    units = anchorer.anchor(conversation())
    assert len(fake.prompts) == 2  # the retry was asked, not answered from the cache
    assert anchorer.report.as_dict()["fallback_windows"] == 0
    again = MeteredLLM(fake, model_name="fake", cache_path=cache)
    assert [u.content for u in LLMAnchorer(again).anchor(conversation())] == [
        u.content for u in units
    ]
    assert (again.usage.calls, again.usage.cached) == (0, 1)  # the good reply, reused


def test_a_cached_unusable_reply_is_dropped_and_asked_again(tmp_path: Path) -> None:
    cache = tmp_path / "llm.sqlite"
    MeteredLLM(FakeLLM("{}"), model_name="fake", cache_path=cache).complete("p", version="v")
    fresh = FakeLLM('{"ok": true}')
    llm = MeteredLLM(fresh, model_name="fake", cache_path=cache)
    usable = lambda reply: json.loads(reply)["ok"]  # noqa: E731
    assert llm.complete("p", version="v", usable=usable) == '{"ok": true}'
    assert fresh.prompts == ["p"]
    assert llm.complete("p", version="v", usable=usable) == '{"ok": true}'
    assert (llm.usage.calls, llm.usage.cached) == (1, 1)


def test_an_unusable_reply_is_never_stored(tmp_path: Path) -> None:
    cache = tmp_path / "llm.sqlite"
    usable = lambda reply: json.loads(reply)["ok"]  # noqa: E731
    bad = MeteredLLM(FakeLLM("no json"), model_name="fake", cache_path=cache)
    assert bad.complete("p", version="v", usable=usable) == "no json"  # returned, not kept
    plain = FakeLLM("anything")
    MeteredLLM(plain, model_name="fake", cache_path=cache).complete("p", version="v")
    assert plain.prompts == ["p"]  # nothing was cached for that prompt
