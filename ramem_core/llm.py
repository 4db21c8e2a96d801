"""Using an LLM safely and cheaply: usage counting, an on-disk cache and JSON extraction.

Every LLM-backed stage wraps its model in :class:`MeteredLLM`, which counts calls and tokens
(so evaluations can report LLM cost per ingested turn and per query) and, with a cache path,
answers repeated prompts from disk: re-ingesting or re-evaluating costs nothing.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ramem_core.errors import reply_text
from ramem_core.protocols import LLM, TokenCounter


@dataclass(slots=True)
class LLMUsage:
    """Counts of one stage's LLM use (cache hits cost no call)."""

    calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failures: int = 0

    def as_dict(self) -> dict[str, int]:
        """Plain numbers for reports."""
        return {
            "calls": self.calls,
            "cached": self.cached,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "failures": self.failures,
        }


class MeteredLLM:
    """An LLM wrapper that counts usage and optionally caches completions on disk.

    Args:
        llm: the model.
        model_name: part of the cache key, so two models never share answers.
        counter: counts tokens; defaults to whitespace words when ``None`` (cheap, rough).
        cache_path: an SQLite file for the cache; ``None`` disables caching.
    """

    def __init__(
        self,
        llm: LLM,
        *,
        model_name: str = "llm",
        counter: TokenCounter | None = None,
        cache_path: str | Path | None = None,
    ) -> None:
        self.llm = llm
        self.model_name = model_name
        self.counter = counter
        self.usage = LLMUsage()
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        if cache_path is not None:
            Path(cache_path).parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(cache_path), check_same_thread=False)
            self._db.execute("CREATE TABLE IF NOT EXISTS llm (key TEXT PRIMARY KEY, text TEXT)")

    def _count(self, text: str) -> int:
        return self.counter.count(text) if self.counter else len(text.split())

    def complete(
        self, prompt: str, *, version: str = "", usable: Callable[[str], object] | None = None
    ) -> str:
        """The model's completion of ``prompt``.

        Args:
            prompt: the prompt.
            version: the prompt template's version, part of the cache key, so a changed
                template is never answered from old results.
            usable: checks a reply (raises when it cannot be used). Only usable replies are
                cached, and a cached reply that is not usable is dropped and asked again, so
                a stage's retry reaches the model and a bad reply is never reused.
        """
        key = hashlib.sha256(f"{version}\x1f{self.model_name}\x1f{prompt}".encode()).hexdigest()
        if self._db is not None:
            with self._lock:
                row = self._db.execute("SELECT text FROM llm WHERE key = ?", (key,)).fetchone()
            if row is not None and _usable(usable, str(row[0])):
                with self._lock:
                    self.usage.cached += 1
                return str(row[0])
            if row is not None:
                with self._lock:
                    self._db.execute("DELETE FROM llm WHERE key = ?", (key,))
                    self._db.commit()
        try:
            text = reply_text(self.llm.complete(prompt), self.llm)
        except Exception:
            with self._lock:
                self.usage.failures += 1
            raise
        keep = self._db is not None and _usable(usable, text)
        with self._lock:
            self.usage.calls += 1
            self.usage.prompt_tokens += self._count(prompt)
            self.usage.completion_tokens += self._count(text)
            if keep and self._db is not None:
                self._db.execute("INSERT OR REPLACE INTO llm VALUES (?, ?)", (key, text))
                self._db.commit()
        return text


def _usable(check: Callable[[str], object] | None, text: str) -> bool:
    if check is None:
        return True
    try:
        check(text)
    except Exception:  # the stage's own parser said no: whatever it raised
        return False
    return True


LLM_PROVIDERS = "ramem.llm"
"""Entry-point group of model providers: each entry is a callable ``(spec) -> LLM`` for a spec
such as ``"openai:gpt-4o-mini"``. ``ramem[langchain]`` registers one (LangChain's
``init_chat_model``), so the core never imports a framework itself."""


def load_llm(spec: str) -> LLM:
    """The model named ``spec`` ("provider:model"), from the first installed model provider.

    Raises:
        ModelUnavailableError: no provider is installed, or the provider cannot make it.
    """
    from importlib.metadata import entry_points

    from ramem_core.errors import ModelUnavailableError

    providers = sorted(entry_points(group=LLM_PROVIDERS), key=lambda ep: ep.name)
    if not providers:
        msg = (
            f"no model provider is installed for {spec!r}: pip install '.[langchain]' "
            "and the provider's package (e.g. langchain-openai)"
        )
        raise ModelUnavailableError(msg)
    provider = providers[0]
    try:
        factory = provider.load()
    except ImportError as exc:
        msg = (
            f"model provider {provider.name!r} is not installed: "
            f"pip install '.[{provider.name}]' in a RaMem checkout"
        )
        raise ModelUnavailableError(msg) from exc
    try:
        model: LLM = factory(spec)
    except Exception as exc:  # the provider's own error: unknown provider, missing package
        msg = f"cannot load model {spec!r} with provider {provider.name!r}: {exc}"
        raise ModelUnavailableError(msg) from exc
    return model


def parse_json_object(text: str) -> dict[str, Any]:
    """The first JSON object in a model's reply (code fences and chatter around it allowed).

    Raises:
        ValueError: no JSON object could be parsed.
    """
    fenced = re.search(r"```(?:json)?\s*(\{.*?\})\s*```", text, re.DOTALL)
    candidates = [fenced.group(1)] if fenced else []
    start = text.find("{")
    if start >= 0:
        candidates.append(text[start : text.rfind("}") + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    msg = f"no JSON object in the model's reply: {text[:120]!r}"
    raise ValueError(msg)
