"""An offline chat model for tests and examples: scripted replies, tool calls, recorded prompts."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict, Field

Reply = AIMessage | str | Callable[[list[BaseMessage]], AIMessage | str]


class ScriptedChatModel(BaseChatModel):
    """Answers with the next scripted reply (or a function of the messages); binds any tools.

    Every call's messages are kept in ``calls`` so tests and examples can show what the model
    saw, e.g. the situated memories a middleware injected.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    # typed Any: pydantic would try to coerce strings into AIMessage
    replies: list[Any] = Field(default_factory=list)
    """Replies in order: an ``AIMessage``, a string, or a function of the messages."""
    default: Any = "I don't know."
    """The reply once the script is used up (same forms as ``replies``)."""
    calls: list[list[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "ramem-scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:  # type: ignore[override]
        """Accept tools (the script decides when to call them)."""
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.calls.append(list(messages))
        reply: Reply = self.replies.pop(0) if self.replies else self.default
        if callable(reply):
            reply = reply(messages)
        message = reply if isinstance(reply, AIMessage) else AIMessage(content=reply)
        return ChatResult(generations=[ChatGeneration(message=message)])
