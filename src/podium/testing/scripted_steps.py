"""The scripted model's script: the steps (:class:`Reply`, :class:`ToolCall`, :class:`Fail`, :class:`Stall`), the
steps that answer by what was asked (:class:`ByContent`, :class:`Shell`, :class:`Expect`), the whole sessions and
answers tests reuse (:func:`crash_then_fix`, :func:`research_step`), what a request says (its messages, its last
user text, its last tool result) and a script read from JSON (:func:`load_script`). The server is
:mod:`podium.testing.scripted_llm`."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "ByContent",
    "Expect",
    "Fail",
    "Reply",
    "Shell",
    "Stall",
    "Step",
    "ToolCall",
    "crash_then_fix",
    "last_tool_output",
    "last_user_text",
    "load_script",
    "research_step",
]


@dataclass(frozen=True)
class Reply:
    text: str


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any] | str


@dataclass(frozen=True)
class Fail:
    status: int
    message: str = "scripted failure"
    retry_after: float | None = None


@dataclass(frozen=True)
class Stall:
    seconds: float = 30.0


Step = Reply | ToolCall | Fail | Stall | Callable[[dict[str, Any]], "Step"]


def _text_of(content: Any) -> str:
    """The text of a message's content: a string, or the text of its parts (tool results' included)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_text_of(part) for part in content)
    if isinstance(content, dict):
        for key in ("text", "content", "output", "input_text"):
            if key in content:
                return _text_of(content[key])
    return ""


def _messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The conversation as (role, content) messages, whatever the format: chat's and Anthropic's ``messages``,
    or Responses' ``input`` (a string, or items: messages, function calls and their outputs)."""
    if isinstance(body.get("messages"), list):
        return [m for m in body["messages"] if isinstance(m, dict)]
    given = body.get("input")
    if isinstance(given, str):
        return [{"role": "user", "content": given}]
    out = []
    for item in given if isinstance(given, list) else []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type") or "message"
        if kind == "message":
            out.append({"role": item.get("role"), "content": item.get("content")})
        elif kind.endswith("_call_output"):
            out.append({"role": "tool", "content": item.get("output")})
        elif kind.endswith("_call"):
            out.append({"role": "assistant", "content": item.get("arguments") or item.get("input") or ""})
    return out


def last_user_text(body: dict[str, Any]) -> str:
    """The text of the last user message of a request (tool results that Anthropic sends as user turns aside)."""
    for message in reversed(_messages(body)):
        if message.get("role") == "user":
            parts = message.get("content")
            if isinstance(parts, list):
                parts = [p for p in parts if not (isinstance(p, dict) and p.get("type") == "tool_result")]
                if not parts:
                    continue
            return _text_of(parts)
    return ""


def last_tool_output(body: dict[str, Any]) -> str | None:
    """The last tool result the client sent back (chat's ``tool`` message, Anthropic's ``tool_result`` block,
    Responses' ``function_call_output``), or None when there is none."""
    for message in reversed(_messages(body)):
        if message.get("role") == "tool":
            return _text_of(message.get("content"))
        parts = message.get("content")
        if isinstance(parts, list):
            results = [p for p in parts if isinstance(p, dict) and p.get("type") == "tool_result"]
            if results:
                return _text_of(results[-1].get("content"))
    return None


def _tool_names(body: dict[str, Any]) -> list[str]:
    names = []
    for tool in body.get("tools") or []:
        if isinstance(tool, dict):
            function: dict[str, Any] = tool["function"] if isinstance(tool.get("function"), dict) else tool
            if isinstance(function.get("name"), str):
                names.append(function["name"])
    return names


@dataclass(frozen=True)
class ByContent:
    """Answers by what was asked: the reply of the first rule whose text is in the last user message (a regular
    expression, searched case-insensitively), else ``default``. One step that can answer many requests, as a
    judge's questions are told apart: ``[ByContent({"by hand": "VERDICT: yes"}, "VERDICT: no")] * 6``."""

    rules: dict[str, str]
    default: str

    def __call__(self, request: dict[str, Any]) -> Reply:
        asked = last_user_text(request["body"])
        for pattern, reply in self.rules.items():
            if re.search(pattern, asked, re.IGNORECASE):
                return Reply(reply)
        return Reply(self.default)


#: Shell tools as the agents name them, and how each takes its command.
SHELL_TOOLS: dict[str, Callable[[str], dict[str, Any]]] = {
    "Bash": lambda cmd: {"command": cmd, "description": "Run a command"},  # Claude Code
    "shell": lambda cmd: {"command": ["bash", "-lc", cmd]},  # Codex (function tool)
    "shell_command": lambda cmd: {"command": cmd},  # Codex (newer)
    "exec_command": lambda cmd: {"cmd": cmd},  # Codex (unified exec)
    "execute_bash": lambda cmd: {"command": cmd},  # OpenHands
    "bash": lambda cmd: {"command": cmd},
}


@dataclass(frozen=True)
class Shell:
    """Runs ``command`` through the shell tool the request offers (:data:`SHELL_TOOLS`); fails with 500 when it
    offers none, naming the tools it did offer."""

    command: str

    def __call__(self, request: dict[str, Any]) -> ToolCall | Fail:
        offered = _tool_names(request["body"])
        for name in offered:
            if name in SHELL_TOOLS:
                return ToolCall(name, SHELL_TOOLS[name](self.command))
        return Fail(500, f"the scripted model wants a shell tool ({', '.join(SHELL_TOOLS)}); offered: {offered}")


@dataclass(frozen=True)
class Expect:
    """Checks that the last tool result matches ``pattern`` (a regular expression) before answering with ``then``;
    a 500 that quotes the result otherwise, so a session that went astray fails where it did."""

    pattern: str
    then: Step

    def __call__(self, request: dict[str, Any]) -> Step:
        output = last_tool_output(request["body"])
        if output is None or not re.search(self.pattern, output):
            shown = "no tool result" if output is None else repr(output[-500:])
            return Fail(500, f"the scripted model expected the last tool result to match {self.pattern!r}; got {shown}")
        return self.then


_BROKEN = """import csv
rows = list(csv.DictReader(open("{data}/sample_submission.csv")))
print(len(rows), "rows read")
print(predictions)  # the bug: never defined
"""
_FIXED = """import shutil
shutil.copyfile("{data}/sample_submission.csv", "{submission}/submission.csv")
print("wrote {submission}/submission.csv")
"""


def crash_then_fix(
    data: str = "/home/data", submission: str = "/home/submission", code: str = "/home/code"
) -> list[Step]:
    """A session in three answers: write a training script that crashes (NameError) and run it; seeing the
    traceback, fix the script and run it again, which writes the sample submission as the submission; seeing
    that, say it is done."""
    script = f"{code}/train.py"

    def write(text: str) -> str:
        return f"mkdir -p {code} && cat > {script} <<'PODIUM_EOF'\n{text}PODIUM_EOF\npython3 {script}"

    return [
        Shell(write(_BROKEN.format(data=data))),
        Expect("NameError", Shell(write(_FIXED.format(data=data, submission=submission)))),
        Expect(re.escape(f"wrote {submission}/submission.csv"),
               Reply(f"The first script crashed; the fixed one wrote {submission}/submission.csv.")),
    ]  # fmt: skip


def research_step(
    action: str,
    action_input: dict[str, Any],
    *,
    reflection: str = "Nothing is known yet.",
    plan: str = "1. Understand the data (in progress). 2. Train a model (to do). 3. Submit (to do).",
    fact_check: str = "Nothing new to check.",
    thought: str = "Take the next step of the plan.",
) -> str:
    """An answer in the research agent's format: the six parts, the input as one JSON object."""
    return (
        f"Reflection: {reflection}\nResearch Plan and Status: {plan}\nFact Check: {fact_check}\n"
        f"Thought: {thought}\nAction: {action}\nAction Input: {json.dumps(action_input)}\n"
    )


def _step(item: Any) -> list[Step]:
    if not isinstance(item, dict):
        raise ValueError(f"a script step is a JSON object, not {item!r}")
    if "reply" in item:
        return [Reply(str(item["reply"]))]
    if "tool_call" in item:
        return [ToolCall(item["tool_call"]["name"], item["tool_call"].get("arguments", {}))]
    if "shell" in item:
        return [Shell(str(item["shell"]))]
    if "expect" in item:
        (then,) = _step(item.get("then"))
        return [Expect(str(item["expect"]), then)]
    if "crash_then_fix" in item:
        return crash_then_fix(**dict(item["crash_then_fix"] or {}))
    if "fail" in item:
        return [Fail(int(item["fail"]), str(item.get("message", "scripted failure")), item.get("retry_after"))]
    if "research_step" in item:
        step = item["research_step"]
        return [Reply(research_step(str(step["action"]), dict(step.get("input") or {})))]
    if "stall" in item:
        return [Stall(float(item["stall"]))]
    raise ValueError(f"unknown script step {item!r}")


def load_script(path: Path) -> list[Step]:
    """A script from a JSON list (see the module docstring)."""
    return [step for item in json.loads(path.read_text(encoding="utf-8")) for step in _step(item)]
