"""A scripted model server: OpenAI chat completions, Anthropic messages and OpenAI's Responses API, answering from
a script, plain or streamed, with tool calls.

Every agent behaviour can then be tested offline and deterministically, through podium's real proxy::

    with ScriptedLLM([Reply("```python\\nprint(1)\\n```"), ToolCall("submit_review", {...}), Fail(429)]) as model:
        ...  # give the agent llm: {provider: openai, base_url: model.base_url}

Each request takes the next step: :class:`Reply` (an assistant text), :class:`ToolCall` (a tool call;
``arguments`` as a str are sent verbatim, which is how a test sends a malformed call), :class:`Fail`
(an error status, with ``Retry-After``), :class:`Stall` (a stream that stops sending, or an answer that
never comes within ``seconds``), or a callable ``(request) -> step`` that answers by what was asked:
:class:`ByContent` answers by rules on the last user message, :class:`Shell` calls whichever shell tool
the client offers (Claude Code's ``Bash``, Codex's ``shell``, ``shell_command`` or ``exec_command``,
OpenHands' ``execute_bash``), :class:`Expect` checks the last tool result before it answers.
:func:`crash_then_fix` is a whole session: a training script that crashes, the fix after the traceback
came back, the submission written. :func:`research_step` writes an answer in the research agent's
format (``mlab``). When the script runs out every request gets 500 "script exhausted", so a test that
asks for more than it scripted fails visibly instead of hanging.

The answers are shaped as the APIs document them: chat completions with ``choices`` and ``usage``
(streamed as ``chat.completion.chunk`` deltas, tool calls by index, the usage chunk when
``stream_options.include_usage`` asks, ``[DONE]``); Anthropic messages with content blocks (streamed as
``message_start``, ``content_block_start`` / ``content_block_delta`` (``text_delta``,
``input_json_delta``) / ``content_block_stop``, ``ping``, ``message_delta`` with ``usage``,
``message_stop``); Responses with output items (streamed as ``response.created``,
``response.in_progress``, ``response.output_item.added``, ``response.content_part.added``,
``response.output_text.delta``, ``response.function_call_arguments.delta``, their ``.done`` events,
``response.completed`` with ``usage``, each with its ``sequence_number``). Text streams a word at a time.
An answer is held to the cap its request names (``max_tokens``, ``max_completion_tokens``,
``max_output_tokens``) and then says so (``length``, ``max_tokens``, ``incomplete``), unless the server
is made with ``caps=False`` (a server that ignores caps); ``apis`` limits the paths it answers (a
chat-only server, as llama.cpp is, answers 404 to the others).

Token counts are whitespace-separated words: input = the words of every message's text (system and
tool results included), output = the words of the answer's text or of the tool call's JSON arguments.

``python -m podium.testing.scripted_llm --script FILE.json [--port N]`` serves a JSON script
(``{"reply": TEXT}``, ``{"tool_call": {"name": ..., "arguments": ...}}``, ``{"shell": COMMAND}``,
``{"expect": REGEX, "then": STEP}``, ``{"crash_then_fix": {}}``, ``{"fail": 429, "retry_after": 1}``,
``{"stall": SECONDS}``, ``{"research_step": {"action": ..., "input": {...}}}``) and prints its base URL.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from podium.services._http import send_json

__all__ = [
    "ByContent",
    "Expect",
    "Fail",
    "Reply",
    "ScriptedLLM",
    "Shell",
    "Stall",
    "Step",
    "ToolCall",
    "crash_then_fix",
    "last_tool_output",
    "load_script",
    "research_step",
]

_MAX_BODY = 8 << 20
_PATHS = ("/v1/chat/completions", "/v1/messages", "/v1/responses")


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


def _words(value: Any) -> int:
    return len(_text_of(value).split())


def _input_tokens(body: dict[str, Any]) -> int:
    system = _words(body.get("system") or "") + _words(body.get("instructions") or "")
    return system + sum(_words(m.get("content")) for m in _messages(body))


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


def _pieces(text: str) -> list[str]:
    """A text as a stream sends it: a word (with the space after it) at a time."""
    return re.findall(r"\s*\S+\s*", text) or ([text] if text else [])


def _cap(body: dict[str, Any], path: str) -> int | None:
    fields = {"/v1/messages": ("max_tokens",), "/v1/responses": ("max_output_tokens",)}
    caps = [body.get(k) for k in fields.get(path, ("max_completion_tokens", "max_tokens"))]
    named = [c for c in caps if isinstance(c, int) and not isinstance(c, bool) and c >= 0]
    return min(named) if named else None


@dataclass
class _Answer:
    """One answer, before it is shaped for its API."""

    model: str
    text: str
    call: ToolCall | None
    arguments: str | None
    tokens_in: int
    tokens_out: int
    capped: bool  # the text was cut at the request's cap


def _shape(step: Reply | ToolCall, body: dict[str, Any], path: str, caps: bool) -> _Answer:
    text = step.text if isinstance(step, Reply) else ""
    call = step if isinstance(step, ToolCall) else None
    arguments = None
    if call is not None:
        arguments = call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)
    cap = _cap(body, path) if caps else None
    pieces = _pieces(text)
    capped = cap is not None and len(pieces) > cap
    if capped:
        text = "".join(pieces[:cap])
    tokens_out = _words(text) + (len(arguments.split()) if arguments else 0)
    return _Answer(str(body.get("model") or "scripted"), text, call, arguments, _input_tokens(body), tokens_out, capped)


def _id(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:24]}"


# -- chat completions ----------------------------------------------------------------------------------------


def _chat(a: _Answer) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": a.text or None}
    if a.call is not None:  # a fresh id each time, as providers give
        function = {"name": a.call.name, "arguments": a.arguments}
        message["tool_calls"] = [{"id": _id("call_"), "type": "function", "function": function}]
    finish = "tool_calls" if a.call else "length" if a.capped else "stop"
    return {
        "id": _id("chatcmpl-"), "object": "chat.completion", "created": int(time.time()), "model": a.model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": a.tokens_in, "completion_tokens": a.tokens_out,
                  "total_tokens": a.tokens_in + a.tokens_out},
    }  # fmt: skip


def _chat_events(a: _Answer, body: dict[str, Any]) -> Iterator[tuple[str | None, Any]]:
    head = {"id": _id("chatcmpl-"), "object": "chat.completion.chunk", "created": int(time.time()), "model": a.model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[None, dict[str, Any]]:
        return None, {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": "" if a.call is None else None})
    for piece in _pieces(a.text):
        yield chunk({"content": piece})
    if a.call is not None and a.arguments is not None:
        start = {"index": 0, "id": _id("call_"), "type": "function", "function": {"name": a.call.name, "arguments": ""}}
        yield chunk({"tool_calls": [start]})
        for piece in _pieces(a.arguments):
            yield chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
    yield chunk({}, "tool_calls" if a.call else "length" if a.capped else "stop")
    if (body.get("stream_options") or {}).get("include_usage"):
        usage = {
            "prompt_tokens": a.tokens_in,
            "completion_tokens": a.tokens_out,
            "total_tokens": a.tokens_in + a.tokens_out,
        }
        yield None, {**head, "choices": [], "usage": usage}
    yield None, "[DONE]"


# -- Anthropic messages ----------------------------------------------------------------------------------------


def _stop_reason(a: _Answer) -> str:
    return "tool_use" if a.call else "max_tokens" if a.capped else "end_turn"


def _messages_answer(a: _Answer) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": a.text}] if a.text else []
    if a.call is not None:
        blocks.append({"type": "tool_use", "id": _id("toolu_"), "name": a.call.name, "input": a.call.arguments})
    return {
        "id": _id("msg_"), "type": "message", "role": "assistant", "model": a.model, "content": blocks,
        "stop_reason": _stop_reason(a), "stop_sequence": None,
        "usage": {"input_tokens": a.tokens_in, "output_tokens": a.tokens_out},
    }  # fmt: skip


def _messages_events(a: _Answer) -> Iterator[tuple[str | None, Any]]:
    start = {**_messages_answer(a), "content": [], "stop_reason": None}
    start["usage"] = {"input_tokens": a.tokens_in, "output_tokens": 1}
    yield "message_start", {"type": "message_start", "message": start}
    index = 0
    if a.text:
        yield (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        )
        yield "ping", {"type": "ping"}
        for piece in _pieces(a.text):
            delta = {"type": "text_delta", "text": piece}
            yield "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": 0}
        index = 1
    if a.call is not None and a.arguments is not None:
        block = {"type": "tool_use", "id": _id("toolu_"), "name": a.call.name, "input": {}}
        yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": block}
        for piece in _pieces(a.arguments):
            delta = {"type": "input_json_delta", "partial_json": piece}
            yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    end = {"stop_reason": _stop_reason(a), "stop_sequence": None}
    yield "message_delta", {"type": "message_delta", "delta": end, "usage": {"output_tokens": a.tokens_out}}
    yield "message_stop", {"type": "message_stop"}


# -- Responses ----------------------------------------------------------------------------------------------


def _output_items(a: _Answer) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if a.text:
        part = {"type": "output_text", "text": a.text, "annotations": []}
        items.append(
            {"id": _id("msg_"), "type": "message", "status": "completed", "role": "assistant", "content": [part]}
        )
    if a.call is not None:
        items.append({"id": _id("fc_"), "type": "function_call", "status": "completed", "call_id": _id("call_"),
                      "name": a.call.name, "arguments": a.arguments})  # fmt: skip
    return items


def _response(a: _Answer, body: dict[str, Any], rid: str, output: list[dict[str, Any]], status: str) -> dict[str, Any]:
    usage = None
    if status != "in_progress":
        usage = {"input_tokens": a.tokens_in, "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens": a.tokens_out, "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": a.tokens_in + a.tokens_out}  # fmt: skip
    return {
        "id": rid, "object": "response", "created_at": int(time.time()), "status": status, "model": a.model,
        "output": output, "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
        "instructions": body.get("instructions"), "max_output_tokens": body.get("max_output_tokens"),
        "parallel_tool_calls": body.get("parallel_tool_calls", True), "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [], "usage": usage,
    }  # fmt: skip


def _responses_events(a: _Answer, body: dict[str, Any]) -> Iterator[tuple[str | None, Any]]:
    rid, sequence = _id("resp_"), iter(range(1 << 30))

    def event(kind: str, **fields: Any) -> tuple[str, dict[str, Any]]:
        return kind, {"type": kind, "sequence_number": next(sequence), **fields}

    yield event("response.created", response=_response(a, body, rid, [], "in_progress"))
    yield event("response.in_progress", response=_response(a, body, rid, [], "in_progress"))
    items = _output_items(a)
    for index, item in enumerate(items):
        opened = {**item, "status": "in_progress"}
        if item["type"] == "message":
            opened["content"] = []
            yield event("response.output_item.added", output_index=index, item=opened)
            part = {"type": "output_text", "text": "", "annotations": []}
            where = {"item_id": item["id"], "output_index": index, "content_index": 0}
            yield event("response.content_part.added", **where, part=part)
            for piece in _pieces(a.text):
                yield event("response.output_text.delta", **where, delta=piece)
            yield event("response.output_text.done", **where, text=a.text)
            yield event("response.content_part.done", **where, part=item["content"][0])
        else:
            opened["arguments"] = ""
            yield event("response.output_item.added", output_index=index, item=opened)
            for piece in _pieces(item["arguments"]):
                yield event(
                    "response.function_call_arguments.delta", item_id=item["id"], output_index=index, delta=piece
                )
            yield event("response.function_call_arguments.done", item_id=item["id"], output_index=index,
                        arguments=item["arguments"])  # fmt: skip
        yield event("response.output_item.done", output_index=index, item=item)
    status = "incomplete" if a.capped else "completed"
    yield event(f"response.{status}", response=_response(a, body, rid, items, status))


def _error(path: str, status: int, message: str) -> dict[str, Any]:
    """An error answer as each API shapes it."""
    if path == "/v1/messages":
        kind = {429: "rate_limit_error", 529: "overloaded_error"}.get(
            status, "api_error" if status >= 500 else "invalid_request_error"
        )
        return {"type": "error", "error": {"type": kind, "message": message}}
    code = "rate_limit_exceeded" if status == 429 else "server_error" if status >= 500 else "invalid_request_error"
    return {"error": {"message": message, "type": code, "code": code, "param": None}}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Any

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        owner: ScriptedLLM = self.server.owner
        path = self.path.split("?", 1)[0]
        length = int(self.headers.get("Content-Length") or 0)
        if length > _MAX_BODY:
            return send_json(self, 413, _error(path, 413, "request too large"))
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            return send_json(self, 400, _error(path, 400, "the body is not JSON"))
        if path not in (owner.apis or _PATHS) or not isinstance(body, dict):
            return send_json(self, 404, _error(path, 404, f"no such path {self.path}"))
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("authorization", "x-api-key")}
        request = {"path": path, "body": body, "headers": headers, "time": time.time()}
        step = owner.next_step(request)
        try:
            while callable(step) and not isinstance(step, Reply | ToolCall | Fail | Stall):
                step = step(request)
        except Exception as exc:  # a test's own answer function failed: say so, loudly
            step = Fail(500, f"the scripted step raised {type(exc).__name__}: {exc}")
        if isinstance(step, Fail):
            headers = {"Retry-After": f"{step.retry_after:g}"} if step.retry_after is not None else {}
            return send_json(self, step.status, _error(path, step.status, step.message), headers)
        if isinstance(step, Stall):
            if body.get("stream"):
                self._start_stream()
                self.wfile.write(b": stalled\n\n")
                self.wfile.flush()
            owner.stopped.wait(step.seconds)
            self.close_connection = True
            return None
        assert isinstance(step, Reply | ToolCall)
        answer = _shape(step, body, path, owner.caps)
        if body.get("stream"):
            events = {
                "/v1/chat/completions": lambda: _chat_events(answer, body),
                "/v1/messages": lambda: _messages_events(answer),
                "/v1/responses": lambda: _responses_events(answer, body),
            }[path]()
            return self._stream(events)
        shaped = {
            "/v1/chat/completions": lambda: _chat(answer),
            "/v1/messages": lambda: _messages_answer(answer),
            "/v1/responses": lambda: _response(
                answer, body, _id("resp_"), _output_items(answer), "incomplete" if answer.capped else "completed"
            ),
        }[path]()
        return send_json(self, 200, shaped)

    def _start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()

    def _stream(self, events: Iterator[tuple[str | None, Any]]) -> None:
        self._start_stream()
        try:
            for name, data in events:
                prefix = f"event: {name}\n" if name else ""
                text = data if isinstance(data, str) else json.dumps(data)
                self.wfile.write(f"{prefix}data: {text}\n\n".encode())
                self.wfile.flush()
        except OSError:  # the client (or the proxy, ending a stream) hung up
            pass
        self.close_connection = True


@dataclass
class ScriptedLLM:
    """The server (see the module docstring); ``requests`` lists what it was asked, in order."""

    script: Sequence[Step]
    port: int = 0
    requests: list[dict[str, Any]] = field(default_factory=list)
    caps: bool = True  # hold answers to the cap their request names, as the real APIs do
    #: The API paths it answers (404 for the others); None: all three. ``("/v1/chat/completions",)`` is a server
    #: that speaks only chat completions, as llama.cpp and most local servers do.
    apis: Sequence[str] | None = None

    def __post_init__(self) -> None:
        self._steps = list(self.script)
        self._lock = threading.Lock()
        self.stopped = threading.Event()
        self._server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None, "the server is not running"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def next_step(self, request: dict[str, Any]) -> Step:
        with self._lock:
            self.requests.append(request)
            return self._steps.pop(0) if self._steps else Fail(500, "script exhausted")

    def start(self) -> Self:
        server = ThreadingHTTPServer(("127.0.0.1", self.port), _Handler)
        server.daemon_threads = True
        server.owner = self  # type: ignore[attr-defined]
        self._server = server
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
        return self

    def stop(self) -> None:
        self.stopped.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--script", type=Path, required=True)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    server = ScriptedLLM(load_script(args.script), port=args.port).start()
    print(server.base_url, flush=True)
    try:
        server.stopped.wait()
    except KeyboardInterrupt:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
