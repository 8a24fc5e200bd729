"""Agent tools: a registry of named functions the model may call.

Each tool has a JSON-schema for its arguments and an async handler returning
text. Bad arguments (not JSON, wrong types) become an error *result* the model
sees, never an exception in the turn. Nothing here runs shell commands or
writes arbitrary files.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from memtray.core.base.errors import EnvironmentProblem, MemtrayError
from memtray.core.llm.client import tool_spec
from memtray.core.log.events import find_invalid


class ToolError(Exception):
    """Raised by a handler to return a plain error message to the model."""


@dataclass
class ToolContext:
    session: str
    #: True while a reminder's own agent run is executing (it may not schedule more).
    in_reminder: bool = False
    extras: dict[str, Any] = field(default_factory=dict)


Handler = Callable[[dict[str, Any], ToolContext], Awaitable[str]]


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    handler: Handler

    def spec(self) -> dict[str, Any]:
        return tool_spec(self.name, self.description, self.parameters)


class ToolRegistry:
    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}

    def add(self, tool: Tool) -> None:
        self._tools[tool.name] = tool

    def names(self) -> list[str]:
        return sorted(self._tools)

    def specs(self) -> list[dict[str, Any]]:
        return [self._tools[n].spec() for n in self.names()]

    def __bool__(self) -> bool:
        return bool(self._tools)

    async def call(self, name: str, arguments: str, ctx: ToolContext) -> str:
        tool = self._tools.get(name)
        if tool is None:
            return f"error: there is no tool named {name!r}; available: {', '.join(self.names()) or 'none'}"
        try:
            args = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            return f"error: the arguments for {name} are not valid JSON ({exc.msg} at char {exc.pos})"
        if not isinstance(args, dict):
            return f"error: the arguments for {name} must be a JSON object"
        bad = find_invalid(args)
        if bad is not None:  # refused here, before a handler could try to log it
            return f"error: {name}: argument {bad[0]} contains {bad[1]}; send valid Unicode text without NUL"
        problem = check_args(tool.parameters, args)
        if problem:
            return f"error: {name}: {problem}"
        try:
            return await tool.handler(args, ctx)
        except ToolError as exc:
            return f"error: {exc}"
        except EnvironmentProblem:
            raise  # a full disk, a refused key: the user's problem, not the model's
        except MemtrayError as exc:  # the model asked for something memtray refuses (an empty fact, ...)
            return f"error: {name}: {exc}"


_JSON_TYPES: dict[str, type | tuple[type, ...]] = {
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
    "array": list,
    "object": dict,
}


def check_args(schema: dict[str, Any], args: dict[str, Any]) -> str | None:
    """A small JSON-schema check: required keys, primitive types, enums."""
    props = schema.get("properties", {})
    for key in schema.get("required", []):
        if key not in args or args[key] is None:
            return f"missing required argument {key!r}"
    for key, value in args.items():
        spec = props.get(key)
        if spec is None:
            if schema.get("additionalProperties") is False:
                return f"unknown argument {key!r}"
            continue
        want = spec.get("type")
        if value is None:
            continue
        if isinstance(want, str) and want in _JSON_TYPES:
            ok = isinstance(value, _JSON_TYPES[want]) and not (want in ("integer", "number") and isinstance(value, bool))
            if not ok:
                return f"argument {key!r} must be {want}, not {type(value).__name__}"
        if "enum" in spec and value not in spec["enum"]:
            return f"argument {key!r} must be one of {spec['enum']}"
    return None
