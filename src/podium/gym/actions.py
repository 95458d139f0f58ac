"""What a policy may do in an episode: the tools (``bash``, ``write_file``, ``submit``), their JSON schemas in
OpenAI's function format, and an action read into one tool call.

An action is ``{"tool": "bash", "command": "...", "timeout": 600}`` (the tool's arguments beside ``tool``) or an
OpenAI tool call ``{"type": "function", "id": ..., "function": {"name": ..., "arguments": "<json>"}}``. One that
names no known tool or carries malformed arguments is not an exception: :func:`parse_action` returns why, and the
episode goes on with that as the observation.

The arguments are the policy's own text, and anything JSON can say may be in them: a string holding a lone surrogate
(what ``json.loads`` makes of the valid escape ``"\\ud800"``, which no file, command line or UTF-8 text can hold) or
a NUL (which no command line or path can hold) is refused; a number is a finite ``float`` once read (``NaN`` and
numbers at or below 0 refused, one too large for a float, or ``Infinity``, taken as :data:`MAX_SECONDS`, itself
above any time left).
"""

from __future__ import annotations

import copy
import math
import re
from dataclasses import dataclass
from typing import Any

from podium.untrusted import UntrustedJSONError, loads, printable

__all__ = ["MAX_ARGUMENT_CHARS", "MAX_SECONDS", "TOOLS", "ToolCall", "parse_action", "tool_schemas"]

#: The longest a command or a file's content may be, in characters.
MAX_ARGUMENT_CHARS = 8 << 20
#: A timeout above this (10**400, ``Infinity``) is taken as this many seconds; the time left caps it in any case.
MAX_SECONDS = 1e9
_SURROGATE = re.compile("[\ud800-\udfff]")
#: The string arguments that become a command line or a path, where a NUL cannot go.
_NO_NUL = ("command", "path")

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
            return f"the arguments of {printable(name, 80)!r} must be a JSON object"
        arguments = raw
    elif isinstance(action.get("tool"), str):
        name = action["tool"]
        arguments = {k: v for k, v in action.items() if k != "tool"}
    else:
        return 'an action names its tool: {"tool": "bash", "command": ...} or an OpenAI tool call'
    checked = _check(name, arguments)
    return checked if isinstance(checked, str) else ToolCall(checked.tool, checked.arguments, call_id)


def _check(name: str, arguments: dict[Any, Any]) -> ToolCall | str:
    """The call of ``name`` with ``arguments`` checked against its schema (numbers read as seconds), or what is
    wrong with it."""
    if name not in TOOLS:
        return f"unknown tool {name[:100]!r}; the tools are {', '.join(TOOLS)}"
    spec = TOOLS[name]["parameters"]
    known = spec["properties"]
    unknown = [k for k in arguments if k not in known]
    if unknown:
        shown = ", ".join(repr(k[:50]) if isinstance(k, str) else _shown(k) for k in unknown[:10])
        return f"{name} takes no argument(s) {shown}; it takes {', '.join(known)}"
    missing = [k for k in spec.get("required", ()) if k not in arguments]
    if missing:
        return f"{name} needs {', '.join(missing)}"
    checked: dict[str, Any] = {}
    for key, value in arguments.items():
        kind = known[key]["type"]
        if kind == "string":
            problem = _string_problem(key, value)
            if problem is not None:
                return f"{name}: {problem}"
            checked[key] = value
        elif kind == "number":
            seconds = _seconds(value)
            if seconds is None:
                return f"{name}: {key} must be a positive number of seconds, got {_shown(value)}"
            checked[key] = seconds
    return ToolCall(name, checked)


def _string_problem(key: str, value: Any) -> str | None:
    if not isinstance(value, str):
        return f"{key} must be a string, got {type(value).__name__}"
    if len(value) > MAX_ARGUMENT_CHARS:
        return f"{key} is {len(value)} characters, over the {MAX_ARGUMENT_CHARS} allowed"
    found = _SURROGATE.search(value)
    if found is not None:
        return (
            f"{key} holds a lone surrogate (U+{ord(found.group()):04X} at character {found.start()}), which is not "
            "text: no command, path or file can hold it. Fix: send the character itself, or write bytes with "
            "printf '\\xNN'"
        )
    if key in _NO_NUL and "\0" in value:
        return (
            f"{key} holds a NUL character (at character {value.index(chr(0))}), which no command line or path can "
            "hold. Fix: write such bytes with printf '\\0'"
        )
    return None


def _seconds(value: Any) -> float | None:
    """A positive number as seconds (at most :data:`MAX_SECONDS`), or None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        seconds = float(value)
    except OverflowError:  # an int beyond any float: 10**400
        seconds = math.inf
    if not seconds > 0:  # NaN too
        return None
    return min(seconds, MAX_SECONDS)


def _shown(value: Any) -> str:
    """``value`` for a message: its repr, cut (an int of over 4,300 digits has none: its size is said instead)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 4000:
        return f"an integer of {value.bit_length()} bits"
    if isinstance(value, int | float | str | bool) or value is None:
        return printable(repr(value), 80)
    return f"a {type(value).__name__}"
