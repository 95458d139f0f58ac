"""The proxy itself: one run's HTTP server on a Unix socket, each call read, checked, reserved, forwarded, relayed,
metered, settled and written down (the package's docstring says what each step holds)."""

from __future__ import annotations

import contextlib
import http.client
import itertools
import json
import os
import socket
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from podium.agents.llm import LLMConfig
from podium.agents.prices import Price, price_table
from podium.services._http import UnixService, send_json
from podium.services.llm.accounting import Ledger, Refused, Reservation, Usage, cap_answer, cap_field
from podium.services.llm.chat import ChatStream
from podium.services.llm.messages import MessagesStream
from podium.services.llm.responses import ResponsesStream
from podium.services.llm.sse import Assembler, Event, EventSplitter, event_bytes
from podium.services.llm.transcript import Transcript, secrets_of
from podium.services.llm.translate import ResponsesFromChat, chat_request, response_of

__all__ = ["BRIDGE_PORT", "MAX_ANSWER_BYTES", "MAX_REQUEST_BYTES", "LLMProxy", "model_failure"]

#: The loopback port inside the sandbox where ``llm_bridge.py`` relays to the proxy's socket.
BRIDGE_PORT = 8399
MAX_REQUEST_BYTES = 32 << 20
#: The largest JSON answer the proxy reads (for its usage, the alias and the transcript); a larger one passes unread.
MAX_ANSWER_BYTES = 32 << 20
_LINGER_SECONDS = 2.0  # how long a refused request of unknown length may go on sending before the socket closes
_LINGER_BYTES = 1 << 20
_UPSTREAM_TIMEOUT_SECONDS = 600
_DROPPED_REQUEST_HEADERS = {"authorization", "x-api-key", "api-key", "host", "cookie", "content-length", "connection"}
_BUDGET_KEYS = ("max_tokens", "max_requests", "max_tokens_per_call", "max_answer_tokens", "max_cost_usd")
_FORWARDED_RESPONSE_HEADERS = {"content-type", "request-id", "x-request-id", "openai-processing-ms"}
_MODEL_CHARS = 200  # of a model's name, in the log and in a refusal
_APIS = {"/v1/chat/completions": "chat", "/v1/messages": "messages", "/v1/responses": "responses"}
#: What the provider answers when the fault is the harness's (its key, its address, its server), not the agent's.
_HARNESS_STATUSES = {401, 402, 403, 404, 405, 407, 408, 429}
_ASSEMBLERS: dict[str, type[Assembler]] = {"messages": MessagesStream, "responses": ResponsesStream}


class _Handler(BaseHTTPRequestHandler):
    server: Any  # the socket server; ``server.owner`` is the LLMProxy
    protocol_version = "HTTP/1.0"  # close-delimited responses: streams pass through as they arrive
    body: bytes | None = None  # the request's body once read to its end
    unread: bool = False  # the request has a body that was not read (unknown length, or over the cap)

    def read_body(self) -> bytes:
        """The request's body, read to its end; raises Refused when its length is unknown, wrong or over the cap."""
        if self.body is not None:
            return self.body
        self.unread = True
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            raise Refused(411, "send the request with a Content-Length, not chunked")
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            raise Refused(400, "bad Content-Length") from None
        if length < 0:
            raise Refused(400, "bad Content-Length")
        if length > MAX_REQUEST_BYTES:
            raise Refused(413, f"request body over {MAX_REQUEST_BYTES} bytes")
        self.body = self.rfile.read(length)
        self.unread = False
        return self.body

    def linger(self) -> None:
        """After a refusal of a request whose body was not read: let the client finish sending (within bounds)
        before the socket closes, so that it reads the refusal instead of meeting a broken pipe."""
        with contextlib.suppress(OSError):
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_WR)
            self.connection.settimeout(_LINGER_SECONDS)
            drained = 0
            while drained < _LINGER_BYTES and (chunk := self.rfile.read1(65536)):
                drained += len(chunk)

    def log_message(self, format: str, *args: Any) -> None:  # the proxy keeps its own log
        pass

    def do_POST(self) -> None:
        self.server.owner._handle(self)

    def do_GET(self) -> None:
        if self.path == "/health":
            send_json(self, 200, {"ok": True, "provider": self.server.owner.config.provider.name})
        else:
            self.server.owner._refuse(self, 405, "only POST to the provider's completion paths is forwarded")

    do_PUT = do_DELETE = do_PATCH = do_GET


@dataclass
class _Call:
    """One call as it goes through the proxy: its log entry (``llm_calls.jsonl``) and its transcript line (I1)."""

    entry: dict[str, Any]
    line: dict[str, Any]
    usage: Usage = field(default_factory=Usage)
    sent: bool = False  # the answer's status line has gone to the agent
    stream: Assembler | None = None  # the stream being relayed, if one is


class LLMProxy(UnixService):
    """Forward a run's model calls to one provider, with its key, within its budget; log and transcribe every call."""

    handler = _Handler
    thread_name = "podium-llm-proxy"

    def __init__(
        self,
        config: LLMConfig,
        socket_path: Path,
        log_path: Path,
        api_key: str | None = None,
        transcript_path: Path | None = None,
    ) -> None:
        super().__init__(socket_path)
        self.config = config
        self.log_path = Path(log_path)
        self._key = api_key if api_key is not None else config.api_key()
        self.ledger = Ledger(config)
        self.transcript = Transcript(transcript_path, secrets_of(os.environ, self._key))
        self._arrivals = itertools.count(1)
        self._log_lock = threading.Lock()
        paths = set(config.provider.paths)
        # the Responses API for a provider that speaks only chat completions: translated
        self._translate = "/v1/responses" not in paths
        if "/v1/chat/completions" in paths:
            paths.add("/v1/responses")
        self._paths = paths
        self._chat_cap = cap_field(config.provider, "/v1/chat/completions") or "max_tokens"

    def stop(self) -> None:
        self.ledger.stop()
        super().stop()

    def summary(self) -> dict[str, Any]:
        """What the run used: calls, refusals, failures, tokens, cost, and the budget it had."""
        with self.ledger.lock:
            t = self.ledger.totals
            return {
                "provider": self.config.provider.name,
                "base_url": self.config.provider.base_url,
                "calls": t.calls,
                "refused": t.refused,
                "answered_calls": t.answered,
                "failed_calls": t.failed,
                "last_failure": t.last_failure,
                "cut_streams": t.cut,
                "input_tokens": t.input_tokens,
                "output_tokens": t.output_tokens,
                "unreported_tokens": t.unreported_tokens,
                **{k: getattr(self.config, k) for k in _BUDGET_KEYS},
                "cached_input_tokens": t.cached_input_tokens,
                "cost_usd": None if t.unpriced_calls and not t.priced_calls else round(t.cost_usd, 9),
                "unpriced_calls": t.unpriced_calls,
                "models": {name: self.config.provider_model(name) for name in self.config.models},
                "price_date": price_table().get("date"),
            }

    # -- handling ----------------------------------------------------------------------------------

    def _handle(self, handler: _Handler) -> None:
        started = time.monotonic()
        number = next(self._arrivals)
        now = datetime.now(UTC).isoformat(timespec="milliseconds")
        path = handler.path.split("?", 1)[0]
        call = _Call(
            {"call": number, "time": now, "path": handler.path},
            {"call": number, "time": now, "api": _APIS.get(path, "other"), "path": path, "model": None,
             "status": None, "stream": False, "request": None, "response": None, "error": None, "truncated": False},
        )  # fmt: skip
        try:
            payload, price, held, translated = self._admit(handler, path, call)
        except Refused as refusal:
            return self._refuse(handler, refusal.status, str(refusal), call)
        try:
            self._exchange(handler, path, payload, call, price, held, translated)
        finally:
            self.ledger.settle(held, call.usage, price, int(call.entry.get("status") or 0), call.entry)
        call.entry["seconds"] = round(time.monotonic() - started, 3)
        self._finish(call)

    def _admit(
        self, handler: _Handler, path: str, call: _Call
    ) -> tuple[dict[str, Any], Price | None, Reservation, bool]:
        """Read and check the call, make the request what is forwarded, and reserve its share of the budget."""
        body = handler.read_body()  # first: a refusal is only sent once the client has sent everything
        call.line["request"] = _json_or_text(body)
        if path not in self._paths:
            raise Refused(403, f"{path} is not forwarded; allowed: POST {', '.join(sorted(self._paths))}")
        payload = call.line["request"]
        if not isinstance(payload, dict):
            raise Refused(400, "the request body is not a JSON object")
        payload = json.loads(body)  # a copy to change; the transcript keeps what the agent sent
        model = payload.get("model")
        call.entry["model"] = call.line["model"] = model[:_MODEL_CHARS] if isinstance(model, str) else None
        if self.config.models and model not in self.config.models:
            shown = repr(model)[:_MODEL_CHARS]
            raise Refused(403, f"model {shown} is not allowed; allowed: {list(self.config.models)}")
        if isinstance(model, str) and self.config.provider_model(model) != model:  # an alias
            payload["model"] = call.entry["provider_model"] = self.config.provider_model(model)
        price = self.config.price(model) if isinstance(model, str) else None
        streaming = call.entry["stream"] = call.line["stream"] = bool(payload.get("stream"))
        if streaming and path == "/v1/chat/completions" and self.config.provider.auth == "bearer":
            options = payload.get("stream_options")
            options = options if isinstance(options, dict) else {}
            payload["stream_options"] = {**options, "include_usage": True}  # so the stream reports its tokens
        field = cap_field(self.config.provider, path)
        if cap_answer(payload, field, self.config.max_answer_tokens) is not None:
            call.entry["cap_added"] = self.config.max_answer_tokens  # the answer held to max_answer_tokens
        translated = path == "/v1/responses" and self._translate
        if translated:  # refused here, before the budget is touched, if chat completions cannot say it
            chat_request(payload, self._chat_cap)
        held = self.ledger.reserve(payload, len(body), price, field)
        if held.cap is not None:
            call.entry["cap_added"] = payload[held.cap[0]] = held.cap[1]
        return payload, price, held, translated

    def _exchange(
        self,
        handler: _Handler,
        path: str,
        payload: dict[str, Any],
        call: _Call,
        price: Price | None,
        held: Reservation,
        translated: bool,
    ) -> None:
        """Forward the call, natively or (Responses to a chat-only server) translated; a Responses call that the
        provider answers with 404 or 405 is sent again translated, and so are the run's later ones."""
        if not translated and path == "/v1/responses":
            if not self._forward(handler, path, payload, call, price, held, fall_back=True):
                return
            try:
                chat_request(payload, self._chat_cap)
            except Refused as refusal:
                call.entry["status"] = refusal.status
                call.line["error"] = str(refusal)
                return self._answer_refusal(handler, refusal.status, str(refusal), call)
            self._translate = translated = True
        self._forward(handler, path, payload, call, price, held, translated=translated)

    def _forward(
        self,
        handler: _Handler,
        path: str,
        payload: dict[str, Any],
        call: _Call,
        price: Price | None,
        held: Reservation,
        translated: bool = False,
        fall_back: bool = False,
    ) -> bool:
        """Send the call upstream and relay the answer; True when it must be sent again translated (``fall_back``:
        the provider does not know the Responses API)."""
        if translated:
            call.entry["translated"] = True
            upstream = "/v1/chat/completions"
            request = chat_request(payload, self._chat_cap)
        else:
            upstream, request = path, payload
        body = json.dumps(request).encode()
        url = urlsplit(self.config.provider.base_url)
        base = url.path.rstrip("/")
        if base.endswith("/v1") and upstream.startswith("/v1/"):  # a base URL given as OpenAI's SDKs take it
            base = base[:-3]
        where = f"{url.scheme}://{url.netloc}{base}{upstream}"
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in _DROPPED_REQUEST_HEADERS}
        headers["Content-Length"] = str(len(body))
        headers.setdefault("Content-Type", "application/json")
        if self.config.provider.auth == "bearer":
            headers["Authorization"] = f"Bearer {self._key}"
        else:
            headers["x-api-key"] = self._key
            headers.setdefault("anthropic-version", "2023-06-01")
        connection_class = http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
        connection = connection_class(url.hostname or "", url.port, timeout=_UPSTREAM_TIMEOUT_SECONDS)
        try:
            connection.request("POST", base + upstream, body=body, headers=headers)
            response = connection.getresponse()
            if fall_back and response.status in (404, 405):
                response.read(1 << 20)
                return True
            self._relay(handler, response, payload, call, price, held, translated, where)
        except (OSError, http.client.HTTPException) as error:
            reason = f"{type(error).__name__}: {error}"
            if call.sent:  # mid-stream: the stream ends as its format reports a failure
                call.line["error"] = call.entry["error"] = f"the provider's answer broke off: {reason}"
                if call.stream is not None:
                    _send(handler, call.stream.cut(f"podium llm proxy: {call.line['error']}", budget=False))
            else:
                call.entry["status"] = 502
                call.line["error"] = call.entry["error"] = reason
                self.ledger.failed(f"the provider at {where} could not be reached: {reason}")
                message = {"error": {"message": f"the provider could not be reached: {error}"}}
                call.line["response"] = message
                with contextlib.suppress(OSError):
                    send_json(handler, 502, message)
        finally:
            connection.close()
        return False

    def _relay(
        self,
        handler: _Handler,
        response: http.client.HTTPResponse,
        payload: dict[str, Any],
        call: _Call,
        price: Price | None,
        held: Reservation,
        translated: bool,
        where: str,
    ) -> None:
        """Give the provider's answer to the agent as it comes (a stream event by event, metered), counting its
        tokens and keeping it for the transcript."""
        status = call.entry["status"] = response.status
        streaming = "text/event-stream" in (response.getheader("Content-Type") or "")
        handler.send_response(status)
        for key, value in response.getheaders():
            if key.lower() in _FORWARDED_RESPONSE_HEADERS and not (translated and key.lower() == "content-type"):
                handler.send_header(key, value)
        if translated:
            handler.send_header("Content-Type", "text/event-stream" if streaming else "application/json")
        handler.send_header("Connection", "close")
        handler.end_headers()
        call.sent = True
        alias = call.entry.get("provider_model"), call.entry.get("model")
        if streaming:
            self._relay_stream(handler, response, payload, call, price, held, translated, alias)
        else:
            self._relay_body(handler, response, payload, call, translated, alias)
        if not 200 <= status < 300:
            message = _error_message(call.line.get("response"))
            call.line["error"] = f"HTTP {status}" + (f": {message}" if message else "")
            if status in _HARNESS_STATUSES or status >= 500:
                self.ledger.failed(
                    f"the provider answered HTTP {status} at {where}" + (f": {message}" if message else "")
                )

    def _relay_stream(
        self,
        handler: _Handler,
        response: http.client.HTTPResponse,
        payload: dict[str, Any],
        call: _Call,
        price: Price | None,
        held: Reservation,
        translated: bool,
        alias: tuple[Any, Any],
    ) -> None:
        api = call.line["api"]
        assembler: Assembler = ResponsesFromChat(payload) if translated else _ASSEMBLERS.get(api, ChatStream)()
        call.stream = assembler  # for a stream that breaks off (see _forward)
        splitter = EventSplitter()
        try:
            while chunk := response.read1(65536):
                for event in splitter.feed(chunk):
                    if self._pass(handler, event, assembler, translated, alias, call, price, held):
                        return
            for event in splitter.finish():
                if self._pass(handler, event, assembler, translated, alias, call, price, held):
                    return
            if isinstance(assembler, ResponsesFromChat):
                _send(handler, assembler.end())
        finally:
            call.usage = assembler.usage
            call.line["response"] = assembler.answer()
            call.line["truncated"] = call.line["truncated"] or assembler.truncated
            if assembler.error and not call.line["error"]:
                call.line["error"] = assembler.error

    def _pass(
        self,
        handler: _Handler,
        event: Event,
        assembler: Assembler,
        translated: bool,
        alias: tuple[Any, Any],
        call: _Call,
        price: Price | None,
        held: Reservation,
    ) -> bool:
        """One event to the agent (under the alias's name, or translated), then metered: True when the stream has
        passed the budget and was ended."""
        if alias[0] and isinstance(event.data, dict) and _renamed(event.data, alias[0], alias[1]):
            event = Event(event_bytes(event.name, event.data), event.name, event.data)
        if isinstance(assembler, ResponsesFromChat):
            _send(handler, assembler.translate(event))
        else:
            assembler.feed(event)
            _send(handler, event.raw)
        reason = self.ledger.meter(held, assembler.usage, assembler.streamed_bytes, price)
        if reason is None:
            return False
        call.entry["cut"] = call.line["error"] = reason
        call.entry["error"] = reason
        _send(handler, assembler.cut(f"podium llm proxy: {reason}; the run's model budget is spent"))
        return True

    def _relay_body(
        self,
        handler: _Handler,
        response: http.client.HTTPResponse,
        payload: dict[str, Any],
        call: _Call,
        translated: bool,
        alias: tuple[Any, Any],
    ) -> None:
        held = bytearray()
        while chunk := response.read(65536):
            if len(held) + len(chunk) > MAX_ANSWER_BYTES:  # too large to read: passed on as it comes, unread
                call.line["truncated"] = True
                _send(handler, bytes(held) + chunk)
                held.clear()
                while chunk := response.read(65536):
                    _send(handler, chunk)
                return
            held += chunk
        data = bytes(held)
        answer = _json_or_text(data)
        call.usage.read(answer)
        if isinstance(answer, dict):
            changed = bool(alias[0]) and _renamed(answer, alias[0], alias[1])
            if translated and 200 <= response.status < 300:
                answer, changed = response_of(answer, payload), True
            if changed:
                data = json.dumps(answer).encode()
        call.line["response"] = answer
        _send(handler, data)

    def _answer_refusal(self, handler: _Handler, status: int, message: str, call: _Call | None) -> None:
        answer = {"error": {"message": f"podium llm proxy: {message}", "type": "podium_proxy"}}
        if call is not None:
            call.line["response"] = answer
        with contextlib.suppress(OSError):
            send_json(handler, status, answer)
        if handler.unread:
            handler.linger()

    def _refuse(self, handler: _Handler, status: int, message: str, call: _Call | None = None) -> None:
        with contextlib.suppress(Refused):
            handler.read_body()  # so the client is not still sending when the socket closes
        if call is not None:  # counted and logged first: a client that has its answer sees them
            call.entry.update(status=status, refused=message, input_tokens=0, output_tokens=0)
            call.line.update(status=status, error=message)
            call.line["response"] = {"error": {"message": f"podium llm proxy: {message}", "type": "podium_proxy"}}
            self.ledger.refused()
            self._finish(call)
        self._answer_refusal(handler, status, message, None)

    def _finish(self, call: _Call) -> None:
        """The call's line in the log, then in the transcript."""
        call.line["status"] = call.entry.get("status")
        line = json.dumps(call.entry) + "\n"
        with self._log_lock, open(self.log_path, "a", encoding="utf-8") as log:
            log.write(line)
        self.transcript.write(call.line)


def model_failure(summary: dict[str, Any] | None) -> str | None:
    """Why the run never had its model, from the proxy's summary: every call it forwarded failed for the harness's
    reasons (the provider unreachable, its key refused, its server failing); None otherwise."""
    if not summary:
        return None
    calls, failed = int(summary.get("calls") or 0), int(summary.get("failed_calls") or 0)
    if not calls or failed < calls or summary.get("answered_calls"):
        return None
    return (
        f"every model call failed ({failed} of {calls}), so the agent never had its model; the last: "
        f"{summary.get('last_failure')}"
    )


def _json_or_text(data: bytes) -> Any:
    """A body as JSON, else as text (what a transcript can still show)."""
    try:
        return json.loads(data)
    except ValueError:
        return data.decode("utf-8", "replace") if data else None


def _error_message(answer: Any) -> str:
    """The message of a provider's error answer, on one line and short."""
    error = answer.get("error") if isinstance(answer, dict) else answer
    message = error.get("message") if isinstance(error, dict) else error
    return " ".join(str(message or "").split())[:300]


def _renamed(data: dict[str, Any], provider_name: Any, alias: Any) -> bool:
    """Put the alias back where the provider names its model (at the top, or in ``message`` or ``response``)."""
    changed = False
    for holder in (data, data.get("message"), data.get("response")):
        if isinstance(holder, dict) and holder.get("model") == provider_name:
            holder["model"] = alias
            changed = True
    return changed


def _send(handler: _Handler, data: bytes) -> None:
    if data:
        with contextlib.suppress(OSError):  # the agent hung up: still drain, count and log
            handler.wfile.write(data)
            handler.wfile.flush()
