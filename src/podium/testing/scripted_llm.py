"""A scripted model server: OpenAI chat completions and Anthropic messages that answer from a script.

Every agent behaviour can then be tested offline and deterministically, through podium's real proxy::

    with ScriptedLLM([Reply("```python\\nprint(1)\\n```"), ToolCall("submit_review", {...}), Fail(429)]) as model:
        ...  # give the agent llm: {provider: openai, base_url: model.base_url}

Each request takes the next step: :class:`Reply` (an assistant text), :class:`ToolCall` (a forced tool
call; ``arguments`` as a str are sent verbatim, which is how a test sends a malformed call),
:class:`Fail` (an error status, with ``Retry-After``), :class:`Stall` (a stream that stops sending, or
an answer that never comes within ``seconds``), or a callable ``(request) -> step`` that answers by
what was asked (:class:`ByContent` answers by rules on the last user message). :func:`research_step` writes an
answer in the research agent's format (``mlab``: Reflection, Research Plan and Status, Fact Check, Thought, Action,
Action Input). When the script runs out every request gets 500 "script exhausted", so a test that
asks for more than it scripted fails visibly instead of hanging.

Token counts are whitespace-separated words: input = the words of every message's text (system
included), output = the words of the answer's text or of the tool call's JSON arguments.

``python -m podium.testing.scripted_llm --script FILE.json [--port N]`` serves a JSON script
(``{"reply": TEXT}``, ``{"tool_call": {"name": ..., "arguments": ...}}``, ``{"fail": 429,
"retry_after": 1}``, ``{"stall": SECONDS}``) and prints its base URL.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from podium.services._http import send_json

__all__ = ["ByContent", "Fail", "Reply", "ScriptedLLM", "Stall", "Step", "ToolCall", "load_script", "research_step"]

_MAX_BODY = 8 << 20


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


@dataclass(frozen=True)
class ByContent:
    """Answers by what was asked: the reply of the first rule whose text is in the last user message (a regular
    expression, searched case-insensitively), else ``default``. One step that can answer many requests, as a
    judge's questions are told apart: ``[ByContent({"by hand": "VERDICT: yes"}, "VERDICT: no")] * 6``."""

    rules: dict[str, str]
    default: str

    def __call__(self, request: dict[str, Any]) -> Reply:
        messages = [m for m in request["body"].get("messages") or [] if m.get("role") == "user"]
        asked = str(messages[-1].get("content") or "") if messages else ""
        for pattern, reply in self.rules.items():
            if re.search(pattern, asked, re.IGNORECASE):
                return Reply(reply)
        return Reply(self.default)


Step = Reply | ToolCall | Fail | Stall | Callable[[dict[str, Any]], "Step"]


def _words(value: Any) -> int:
    if isinstance(value, str):
        return len(value.split())
    if isinstance(value, list):
        return sum(_words(v) for v in value)
    if isinstance(value, dict):
        return _words(value.get("text") or value.get("content") or "")
    return 0


def _input_tokens(body: dict[str, Any]) -> int:
    return _words(body.get("system") or "") + sum(_words(m.get("content")) for m in body.get("messages") or [])


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


def load_script(path: Path) -> list[Step]:
    """A script from a JSON list (see the module docstring)."""
    steps: list[Step] = []
    for item in json.loads(path.read_text(encoding="utf-8")):
        if "reply" in item:
            steps.append(Reply(str(item["reply"])))
        elif "tool_call" in item:
            steps.append(ToolCall(item["tool_call"]["name"], item["tool_call"].get("arguments", {})))
        elif "fail" in item:
            steps.append(Fail(int(item["fail"]), str(item.get("message", "scripted failure")), item.get("retry_after")))
        elif "research_step" in item:
            step = item["research_step"]
            steps.append(Reply(research_step(str(step["action"]), dict(step.get("input") or {}))))
        elif "stall" in item:
            steps.append(Stall(float(item["stall"])))
        else:
            raise ValueError(f"unknown script step {item!r}")
    return steps


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Any

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        owner: ScriptedLLM = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        if length > _MAX_BODY:
            return self._json(413, {"error": {"message": "request too large"}})
        body = json.loads(self.rfile.read(length) or b"{}")
        if self.path not in ("/v1/chat/completions", "/v1/messages"):
            return self._json(404, {"error": {"message": f"no such path {self.path}"}})
        request = {"path": self.path, "body": body, "headers": {k: v for k, v in self.headers.items() if k.lower() not in ("authorization", "x-api-key")}, "time": time.time()}  # fmt: skip
        step = owner.next_step(request)
        try:
            while callable(step) and not isinstance(step, Reply | ToolCall | Fail | Stall):
                step = step(request)
        except Exception as exc:  # a test's own answer function failed: say so, loudly
            step = Fail(500, f"the scripted step raised {type(exc).__name__}: {exc}")
        anthropic = self.path == "/v1/messages"
        if isinstance(step, Fail):
            headers = {"Retry-After": f"{step.retry_after:g}"} if step.retry_after is not None else {}
            kind = "rate_limit_error" if step.status == 429 else "api_error"
            return self._json(step.status, {"type": "error", "error": {"type": kind, "message": step.message}}, headers)
        if isinstance(step, Stall):
            if body.get("stream"):
                self._start_stream()
                self.wfile.write(b": stalled\n\n")
                self.wfile.flush()
            owner.stopped.wait(step.seconds)
            self.close_connection = True
            return None
        assert isinstance(step, Reply | ToolCall)
        usage_in = _input_tokens(body)
        if isinstance(step, Reply):
            text, arguments = step.text, None
        else:
            text = ""
            arguments = step.arguments if isinstance(step.arguments, str) else json.dumps(step.arguments)
        usage_out = _words(text) + (len(arguments.split()) if arguments else 0)
        model = body.get("model", "scripted")
        if body.get("stream"):
            return self._stream(anthropic, model, step, text, arguments, usage_in, usage_out, body)
        if anthropic:
            blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
            if isinstance(step, ToolCall):
                value: Any = step.arguments
                blocks.append(
                    {"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:8]}", "name": step.name, "input": value}
                )
            answer = {
                "id": f"msg_{uuid.uuid4().hex[:8]}", "type": "message", "role": "assistant", "model": model,
                "content": blocks, "stop_reason": "tool_use" if isinstance(step, ToolCall) else "end_turn",
                "usage": {"input_tokens": usage_in, "output_tokens": usage_out},
            }  # fmt: skip
        else:
            message: dict[str, Any] = {"role": "assistant", "content": text or None}
            if isinstance(step, ToolCall):
                call = {"name": step.name, "arguments": arguments}  # a fresh id each time, as providers give
                message["tool_calls"] = [{"id": f"call_{uuid.uuid4().hex[:8]}", "type": "function", "function": call}]
            answer = {
                "id": f"chatcmpl-{uuid.uuid4().hex[:8]}", "object": "chat.completion", "created": int(time.time()),
                "model": model, "choices": [{"index": 0, "message": message,
                "finish_reason": "tool_calls" if isinstance(step, ToolCall) else "stop"}],
                "usage": {"prompt_tokens": usage_in, "completion_tokens": usage_out, "total_tokens": usage_in + usage_out},
            }  # fmt: skip
        return self._json(200, answer)

    def _start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()

    def _stream(self, anthropic: bool, model: str, step: Reply | ToolCall, text: str, arguments: str | None,
                usage_in: int, usage_out: int, body: dict[str, Any]) -> None:  # fmt: skip
        self._start_stream()
        events: list[tuple[str | None, dict[str, Any]]] = []
        if anthropic:
            events.append(("message_start", {"type": "message_start", "message": {"model": model, "usage": {"input_tokens": usage_in, "output_tokens": 0}}}))  # fmt: skip
            if text:
                events.append(("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}))  # fmt: skip
            events.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": usage_out}}))  # fmt: skip
            events.append(("message_stop", {"type": "message_stop"}))
        else:
            delta: dict[str, Any] = {"role": "assistant", "content": text}
            if isinstance(step, ToolCall):
                delta["tool_calls"] = [{"index": 0, "id": f"call_{uuid.uuid4().hex[:8]}", "type": "function", "function": {"name": step.name, "arguments": arguments}}]  # fmt: skip
            events.append((None, {"object": "chat.completion.chunk", "model": model, "choices": [{"index": 0, "delta": delta}]}))  # fmt: skip
            if (body.get("stream_options") or {}).get("include_usage"):
                events.append((None, {"object": "chat.completion.chunk", "model": model, "choices": [], "usage": {"prompt_tokens": usage_in, "completion_tokens": usage_out}}))  # fmt: skip
        for name, data in events:
            prefix = f"event: {name}\n" if name else ""
            self.wfile.write(f"{prefix}data: {json.dumps(data)}\n\n".encode())
        if not anthropic:
            self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True

    def _json(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        send_json(self, status, payload, headers)


@dataclass
class ScriptedLLM:
    """The server (see the module docstring); ``requests`` lists what it was asked, in order."""

    script: Sequence[Step]
    port: int = 0
    requests: list[dict[str, Any]] = field(default_factory=list)

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
