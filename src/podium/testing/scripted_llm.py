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
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from podium.services._http import send_json
from podium.testing._scripted_answers import (
    _chat,
    _chat_events,
    _error,
    _id,
    _messages_answer,
    _messages_events,
    _output_items,
    _response,
    _responses_events,
    _shape,
)
from podium.testing.scripted_steps import (
    ByContent,
    Expect,
    Fail,
    Reply,
    Shell,
    Stall,
    Step,
    ToolCall,
    crash_then_fix,
    last_tool_output,
    load_script,
    research_step,
)

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
