"""What a policy may do in an episode: the tools (``bash``, ``write_file``, ``submit``), their JSON schemas in
OpenAI's function format, and an action read into one tool call.

An action is ``{"tool": "bash", "command": "...", "timeout": 600}`` (the tool's arguments beside ``tool``) or an
OpenAI tool call ``{"type": "function", "id": ..., "function": {"name": ..., "arguments": "<json>"}}``. One that
names no known tool or carries malformed arguments is not an exception: :func:`parse_action` returns why, and the
episode goes on with that as the observation.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from podium.untrusted import UntrustedJSONError, loads, printable

__all__ = ["MAX_ARGUMENT_CHARS", "TOOLS", "ToolCall", "parse_action", "tool_schemas"]

#: The longest a command or a file's content may be, in characters.
MAX_ARGUMENT_CHARS = 8 << 20

TOOLS: dict[str, dict[str, Any]] = {
    "bash": {
        "description": (
            "Run a bash command in the sandbox. The working folder and exported environment variables persist "
            "from one call to the next. Returns the exit code, the output (stdout and stderr; long output is cut "
            "in the middle) and the time it took."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command, run with bash -c."},
                "timeout": {"type": "number", "description": "Seconds before it is killed (capped by the time left)."},
            },
            "required": ["command"],
            "additionalProperties": False,
        },
    },
    "write_file": {
        "description": "Write a text file in the sandbox (its folders are made); a relative path is taken from the "
        "shell's working folder.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path", "content"],
            "additionalProperties": False,
        },
    },
    "submit": {
        "description": "End the episode: /home/submission/submission.csv is graded.",
        "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
    },
}


def tool_schemas() -> list[dict[str, Any]]:
    """The tools as OpenAI function schemas (a new copy each time: callers may change theirs)."""
    return [{"type": "function", "function": {"name": name, **copy.deepcopy(spec)}} for name, spec in TOOLS.items()]


@dataclass(frozen=True)
class ToolCall:
    """One action read: the tool, its arguments and the tool call's id (None for a plain dict action)."""

    tool: str
    arguments: dict[str, Any]
    call_id: str | None = None


def parse_action(action: Any) -> ToolCall | str:
    """``action`` as a :class:`ToolCall`, or the reason it is not one (one line, for the observation)."""
    if not isinstance(action, dict):
        return f"an action is a dict (a tool call), got {type(action).__name__}"
    call_id = None
    if "function" in action:
        function = action.get("function")
        call_id = action.get("id") if isinstance(action.get("id"), str) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            return 'a tool call\'s "function" must be {"name": ..., "arguments": "<json object>"}'
        name, raw = function["name"], function.get("arguments", "{}")
        if isinstance(raw, str):
            try:  # the policy's text: bounded, and nested too deep is an answer, not a RecursionError
                raw = loads(raw or "{}", max_bytes=MAX_ARGUMENT_CHARS * 4 + 1024, what="the text")
            except UntrustedJSONError as exc:
                return f"the arguments of {printable(name, 80)!r} cannot be read: {exc}"
        if not isinstance(raw, dict):
            return f"the arguments of {name!r} must be a JSON object"
        arguments = raw
    elif isinstance(action.get("tool"), str):
        name = action["tool"]
        arguments = {k: v for k, v in action.items() if k != "tool"}
    else:
        return 'an action names its tool: {"tool": "bash", "command": ...} or an OpenAI tool call'
    problem = _check(name, arguments)
    return problem if problem is not None else ToolCall(name, arguments, call_id)


def _check(name: str, arguments: dict[str, Any]) -> str | None:
    if name not in TOOLS:
        return f"unknown tool {name[:100]!r}; the tools are {', '.join(TOOLS)}"
    spec = TOOLS[name]["parameters"]
    known = spec["properties"]
    unknown = [k for k in arguments if k not in known]
    if unknown:
        return f"{name} takes no argument(s) {', '.join(repr(k[:50]) for k in unknown)}; it takes {', '.join(known)}"
    missing = [k for k in spec.get("required", ()) if k not in arguments]
    if missing:
        return f"{name} needs {', '.join(missing)}"
    for key, value in arguments.items():
        kind = known[key]["type"]
        if kind == "string" and not isinstance(value, str):
            return f"{name}: {key} must be a string, got {type(value).__name__}"
        if kind == "string" and len(value) > MAX_ARGUMENT_CHARS:
            return f"{name}: {key} is {len(value)} characters, over the {MAX_ARGUMENT_CHARS} allowed"
        if kind == "number" and (isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0):
            return f"{name}: {key} must be a positive number of seconds, got {value!r}"
    return None
