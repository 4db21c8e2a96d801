"""Strict tool arguments, refused in one plain sentence a model can act on.

The SDK reads a tool's arguments leniently (``k: true`` as 1, ``"5"`` as 5, unknown names
ignored) and says what it refuses in pydantic's own words, with a library URL. Each tool here is
registered as a :class:`CheckedTool`: its arguments are read strictly (unknown names refused by
name, an integer only as an integer, lengths bounded before any work, no control characters in
a time or an id) and a refusal is one sentence naming the argument, echoing at most a short
prefix of what it refuses.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools.base import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from pydantic import ConfigDict, ValidationError

ECHO_CHARS = 40
"""The most characters of a refused value an error repeats."""

PLAIN_TEXT = frozenset({"at", "after", "id", "session_id", "idempotency_key", "speaker"})
"""Arguments that are one line of visible text: a control character in them is refused."""


def short(value: object) -> str:
    """``value`` as an error repeats it: its first :data:`ECHO_CHARS` characters, quoted."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) > ECHO_CHARS:
        return repr(text[:ECHO_CHARS]) + f"... ({len(text):,} characters)"
    return repr(text) if isinstance(value, str) else text


_TYPES = {"int": "an integer", "str": "a string", "bool": "true or false", "dict": "an object"}


def sentence(tool: str, error: dict[str, Any], names: list[str]) -> str:
    """One plain sentence for the first thing pydantic refused in ``tool``'s arguments."""
    where = ".".join(str(part) for part in error["loc"]) or "the arguments"
    kind, ctx = error["type"], error.get("ctx") or {}
    given = error.get("input")
    if kind == "extra_forbidden":
        return f"{tool} takes no argument {short(where)}; its arguments are {', '.join(names)}"
    if kind == "missing":
        return f"{tool} needs the argument {where!r}"
    if kind in ("string_too_long", "too_long"):
        size = len(given) if isinstance(given, str) else "?"
        return f"{where} is too long: at most {ctx['max_length']:,} characters, got {size:,}"
    if kind == "string_too_short":
        return f"{where} must not be empty"
    if kind in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
        return f"{where} is out of range ({error['msg'].lower()}), got {short(given)}"
    for name, what in _TYPES.items():
        if kind.startswith(name):
            return f"{where} must be {what}, got {short(given)}"
    return f"{where}: {error['msg']}"


class CheckedTool(Tool):
    """A tool whose arguments are read strictly before the SDK reads them (see the module)."""

    strict: type[ArgModelBase] | None = None

    async def run(
        self, arguments: dict[str, Any], context: Any, convert_result: bool = False
    ) -> Any:
        if self.strict is not None:
            try:
                self.strict.model_validate(arguments)
            except ValidationError as exc:
                names = [f.alias or n for n, f in self.strict.model_fields.items()]
                raise ToolError(sentence(self.name, dict(exc.errors()[0]), names)) from None
        for name in PLAIN_TEXT.intersection(arguments):
            value = arguments[name]
            if isinstance(value, str) and any(ord(c) < 32 or ord(c) == 127 for c in value):
                msg = f"{name} must be one line of text with no control characters"
                raise ToolError(msg)
        return await super().run(arguments, context, convert_result)


def strict(server: MCPServer) -> None:
    """Every tool of ``server`` read strictly (a :class:`CheckedTool`), its published input
    schema saying so (``additionalProperties: false``)."""
    tools = server._tool_manager._tools  # the SDK keeps its tools here; one registry
    for name, tool in list(tools.items()):
        lenient = tool.fn_metadata.arg_model
        config = ConfigDict(extra="forbid", strict=True, arbitrary_types_allowed=True)
        model: type[ArgModelBase] = type(lenient.__name__, (lenient,), {"model_config": config})
        fields = {field: getattr(tool, field) for field in Tool.model_fields}
        fields["parameters"] = model.model_json_schema(by_alias=True)
        tools[name] = CheckedTool(**fields, strict=model)
