"""The harness-controlled path from a sandboxed agent to its LLM provider: a proxy on a Unix socket.

A sandbox has no network. An LLM-driven agent (AIDE, OpenHands, MLAgentBench, our own) still needs
its model, so each run gets one :class:`LLMProxy`: an HTTP server on a Unix socket mounted into the
sandbox at ``/home/llm.sock``. It

* forwards only to the one configured provider (its base URL is podium's, whatever the request says),
  and only the API paths that provider's completions use (``POST /v1/chat/completions`` and so on);
* adds the API key from podium's own environment: the agent never holds a key, so it cannot use
  it elsewhere or leak it into its logs;
* refuses models outside the configured list, and every call once the run's token or request
  budget is spent (HTTP 429, with a message the agent can read);
* counts tokens from each response's ``usage`` (JSON bodies and server-sent-event streams, OpenAI
  and Anthropic shapes; for OpenAI chat streams it asks for the usage chunk), and logs every call
  (time, path, model, status, tokens, seconds) to ``llm_calls.jsonl`` in the run's folder.

The token budget holds for parallel calls too: before a call is forwarded it *reserves* what it
may use, its request's size in bytes (no text has more tokens than bytes) plus its answer's cap
(``max_tokens``, ``max_completion_tokens`` or ``max_output_tokens``, times ``n``; a call that names
none is reserved ``max_tokens_per_call``, and when less than that is left, the cap that is left is
added to its request). A call is forwarded only when its reservation fits in what the budget has
left after the tokens used and the reservations of the calls in flight; otherwise it waits for the
calls in flight to finish, and is refused (429) if it does not fit even then. When its answer
returns, the reservation is replaced by the usage the answer reports (by the whole reservation if
a successful answer reports none). So parallel calls never overshoot the budget together, and it
is exceeded at all only by a call that uses more than it was reserved, by at most that call's
excess: an answer longer than ``max_tokens_per_call`` to a call that named no cap while the budget
was far from spent, or input the provider counts beyond the request's bytes (an image or a file it
fetches by URL). Calls that name their cap and send their input inline never take it past the budget.

A refused request is read to its end before the answer (or, when its length is unknown or over
the cap, after it, for a bounded time), so a client still sending its body never meets a closed
socket.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from podium.agents.llm import LLMConfig
from podium.agents.prices import Price, price_table
from podium.services._http import UnixService, send_json
from podium.services.usage import ModelRenamer, UsageCounter, answers_asked, asked_cap, cap_answer, cap_field

__all__ = ["BRIDGE_PORT", "MAX_REQUEST_BYTES", "LLMProxy"]

#: The loopback port inside the sandbox where ``llm_bridge.py`` relays to the proxy's socket.
BRIDGE_PORT = 8399
MAX_REQUEST_BYTES = 32 << 20
_LINGER_SECONDS = 2.0  # how long a refused request of unknown length may go on sending before the socket closes
_LINGER_BYTES = 1 << 20
_UPSTREAM_TIMEOUT_SECONDS = 600
_DROPPED_REQUEST_HEADERS = {"authorization", "x-api-key", "api-key", "host", "cookie", "content-length", "connection"}
_BUDGET_KEYS = ("max_tokens", "max_requests", "max_tokens_per_call", "max_answer_tokens", "max_cost_usd")
_FORWARDED_RESPONSE_HEADERS = {"content-type", "request-id", "x-request-id", "openai-processing-ms"}


@dataclass
class _Totals:
    calls: int = 0
    refused: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    unreported_tokens: int = 0  # reservations charged for successful answers that reported no usage
    cached_input_tokens: int = 0  # the part of input_tokens the provider read from its cache
    cost_usd: float = 0.0
    unpriced_calls: int = 0  # answered calls of models the price table does not list
    priced_calls: int = 0
    reserved: int = 0  # tokens, by the calls in flight
    reserved_cost: float = 0.0  # USD, by the calls in flight
    in_flight: int = 0

    @property
    def used(self) -> int:
        return self.input_tokens + self.output_tokens + self.unreported_tokens


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class _Handler(BaseHTTPRequestHandler):
    server: Any  # the socket server; ``server.owner`` is the LLMProxy
    protocol_version = "HTTP/1.0"  # close-delimited responses: streams pass through as they arrive
    body: bytes | None = None  # the request's body once read to its end
    unread: bool = False  # the request has a body that was not read (unknown length, or over the cap)

    def read_body(self) -> bytes:
        """The request's body, read to its end; raises _Refused when its length is unknown, wrong or over the cap."""
        if self.body is not None:
            return self.body
        self.unread = True
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            raise _Refused(411, "send the request with a Content-Length, not chunked")
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            raise _Refused(400, "bad Content-Length") from None
        if length < 0:
            raise _Refused(400, "bad Content-Length")
        if length > MAX_REQUEST_BYTES:
            raise _Refused(413, f"request body over {MAX_REQUEST_BYTES} bytes")
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


class LLMProxy(UnixService):
    """Forward a run's model calls to one provider, with its key, within its budget; log every call."""

    handler = _Handler
    thread_name = "podium-llm-proxy"

    def __init__(self, config: LLMConfig, socket_path: Path, log_path: Path, api_key: str | None = None) -> None:
        super().__init__(socket_path)
        self.config = config
        self.log_path = Path(log_path)
        self._key = api_key if api_key is not None else config.api_key()
        self._totals = _Totals()
        self._lock = threading.RLock()
        self._settled = threading.Condition(self._lock)  # a call in flight returned: its reservation is free
        self._stopping = False

    def stop(self) -> None:
        with self._settled:  # calls waiting for a reservation give up at once
            self._stopping = True
            self._settled.notify_all()
        super().stop()

    def summary(self) -> dict[str, Any]:
        """What the run used: calls, refusals, tokens, and the budget it had."""
        with self._lock:
            t = self._totals
            return {
                "provider": self.config.provider.name,
                "base_url": self.config.provider.base_url,
                "calls": t.calls,
                "refused": t.refused,
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
        entry: dict[str, Any] = {"time": datetime.now(UTC).isoformat(timespec="milliseconds"), "path": handler.path}
        path = handler.path.split("?", 1)[0]
        try:
            body = handler.read_body()  # first: a refusal is only sent once the client has sent everything
            if path not in self.config.provider.paths:
                raise _Refused(403, f"{path} is not forwarded; allowed: POST {', '.join(self.config.provider.paths)}")
            try:
                payload = json.loads(body or b"{}")
            except ValueError:
                raise _Refused(400, "the request body is not JSON") from None
            if not isinstance(payload, dict):
                raise _Refused(400, "the request body is not a JSON object")
            model = entry["model"] = payload.get("model")
            if self.config.models and model not in self.config.models:
                raise _Refused(403, f"model {model!r} is not allowed; allowed: {list(self.config.models)}")
            changed = False
            if isinstance(model, str) and self.config.provider_model(model) != model:  # an alias
                payload["model"] = entry["provider_model"] = self.config.provider_model(model)
                changed = True
            price = self.config.price(model) if isinstance(model, str) else None
            streaming = bool(payload.get("stream"))
            if streaming and path == "/v1/chat/completions" and self.config.provider.auth == "bearer":
                options = payload.get("stream_options")
                options = options if isinstance(options, dict) else {}
                payload["stream_options"] = {**options, "include_usage": True}  # so the stream reports its tokens
                changed = True
            if cap_answer(payload, cap_field(self.config.provider, path), self.config.max_answer_tokens) is not None:
                entry["cap_added"] = self.config.max_answer_tokens  # the answer held to max_answer_tokens
                changed = True
            reservation, cost_reserved, cap = self._reserve(path, payload, len(body), price)
        except _Refused as refusal:
            return self._refuse(handler, refusal.status, str(refusal), entry)
        if cap is not None:
            entry["cap_added"] = payload[cap[0]] = cap[1]
        if changed or cap is not None:
            body = json.dumps(payload).encode()
        entry["stream"] = streaming
        usage: tuple[int, int, int] | None = None
        renamed = "provider_model" in entry  # answered under the alias the agent asked by
        alias = ModelRenamer(entry["provider_model"], entry["model"]) if renamed else None
        try:
            usage = self._forward(handler, path, body, entry, alias)
        finally:
            self._settle(reservation, cost_reserved, usage, price, entry)
        entry["input_tokens"], entry["output_tokens"], entry["cached_input_tokens"] = usage
        entry["seconds"] = round(time.monotonic() - started, 3)
        self._log(entry)

    def _reserve(
        self, path: str, payload: dict[str, Any], size: int, price: Price | None
    ) -> tuple[int, float, tuple[str, int] | None]:
        """Count the call in, reserving its tokens and its worst-case cost (module docstring); waits while the calls
        in flight hold what it needs. Returns the reservations and, where the call's answer must be capped to fit,
        (field, cap)."""
        budget, cost_budget = self.config.max_tokens, self.config.max_cost_usd
        asked = asked_cap(payload)
        choices = answers_asked(payload)
        field = cap_field(self.config.provider, path)
        with self._settled:
            while True:
                t = self._totals
                if self.config.max_requests is not None and t.calls >= self.config.max_requests:
                    raise _Refused(429, f"request budget spent ({self.config.max_requests} calls)")
                if budget is None and cost_budget is None:
                    t.calls += 1
                    return 0, 0.0, None
                left = None if budget is None else budget - t.used - t.reserved
                cap = None
                if asked is not None or field is None:
                    need = size + (asked or 0) * choices
                else:  # no cap named: the per-call cap, or what is left when that is less
                    room = self.config.max_tokens_per_call if left is None else (left - size) // choices
                    per_choice = min(self.config.max_tokens_per_call, room)
                    need = size + max(1, per_choice) * choices
                    if per_choice < self.config.max_tokens_per_call:
                        cap = (field, max(1, per_choice))
                cost_need = price.cost(size, need - size) if cost_budget is not None and price is not None else 0.0
                cost_left = None if cost_budget is None else cost_budget - t.cost_usd - t.reserved_cost
                if (left is None or need <= left) and (cost_left is None or cost_need <= cost_left):
                    t.calls += 1
                    t.reserved += need
                    t.reserved_cost += cost_need
                    t.in_flight += 1
                    return need, cost_need, cap
                if not t.in_flight or self._stopping:
                    raise _Refused(429, self._refusal(need, size, left, cost_need, cost_left))
                self._settled.wait(timeout=1.0)

    def _refusal(self, need: int, size: int, left: int | None, cost_need: float, cost_left: float | None) -> str:
        t, budget, cost_budget = self._totals, self.config.max_tokens, self.config.max_cost_usd
        if left is not None and budget is not None and need > left:
            if t.used >= budget:
                return f"token budget spent ({t.used} of {budget} tokens used)"
            return (
                f"the call may use {need} tokens ({size} for its request, at most one a byte, and {need - size} for "
                f"its answer) but {left} of the budget of {budget} are left; ask for a shorter answer (max_tokens) or "
                "send less"
            )
        assert cost_budget is not None and cost_left is not None
        if t.cost_usd >= cost_budget:
            return f"cost budget spent (${t.cost_usd:.4f} of ${cost_budget:g})"
        return (
            f"the call may cost up to ${cost_need:.4f} but ${cost_left:.4f} of the cost budget of ${cost_budget:g} are "
            "left; ask for a shorter answer (max_tokens) or send less"
        )

    def _settle(
        self,
        reservation: int,
        cost_reserved: float,
        usage: tuple[int, int, int] | None,
        price: Price | None,
        entry: dict[str, Any],
    ) -> None:
        """The call returned: its reservations give way to the tokens its answer reports, and their cost."""
        with self._settled:
            t = self._totals
            if self.config.max_tokens is not None or self.config.max_cost_usd is not None:
                t.reserved -= reservation
                t.reserved_cost -= cost_reserved
                t.in_flight -= 1
            if usage is not None:
                tokens_in, tokens_out, cached = usage
                t.input_tokens += tokens_in
                t.output_tokens += tokens_out
                t.cached_input_tokens += cached
                answered = 200 <= entry.get("status", 0) < 300
                if (tokens_in, tokens_out) == (0, 0) and answered:  # a success that reported no usage
                    t.unreported_tokens += reservation
                    entry["unreported_tokens"] = reservation
                    cost = cost_reserved
                else:
                    cost = price.cost(tokens_in, tokens_out, cached) if price is not None else 0.0
                if answered:
                    if price is None:
                        t.unpriced_calls += 1
                    else:
                        t.priced_calls += 1
                entry["cost_usd"] = round(cost, 9) if price is not None else None
                t.cost_usd += cost
            self._settled.notify_all()

    def _forward(
        self, handler: _Handler, path: str, body: bytes, entry: dict[str, Any], alias: ModelRenamer | None = None
    ) -> tuple[int, int, int]:
        """Send the call upstream and stream the answer back (under the alias's name, when the agent asked by an
        alias); returns (input, output, cached input) tokens seen."""
        url = urlsplit(self.config.provider.base_url)
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
        counter = UsageCounter()
        try:
            connection.request("POST", url.path.rstrip("/") + path, body=body, headers=headers)
            response = connection.getresponse()
            entry["status"] = response.status
            handler.send_response(response.status)
            for key, value in response.getheaders():
                if key.lower() in _FORWARDED_RESPONSE_HEADERS:
                    handler.send_header(key, value)
            handler.send_header("Connection", "close")
            handler.end_headers()
            streaming = "text/event-stream" in (response.getheader("Content-Type") or "")
            while chunk := (response.read1(65536) if streaming else response.read(65536)):
                counter.feed(chunk, streaming)
                _send(handler, alias.feed(chunk, streaming) if alias else chunk)
            counter.finish(streaming)
            if alias:
                _send(handler, alias.finish(streaming))
        except (OSError, http.client.HTTPException) as error:
            entry["status"] = 502
            entry["error"] = f"{type(error).__name__}: {error}"
            with contextlib.suppress(OSError):
                send_json(handler, 502, {"error": {"message": f"the provider could not be reached: {error}"}})
        finally:
            connection.close()
        return counter.input_tokens, counter.output_tokens, counter.cached_tokens

    def _refuse(self, handler: _Handler, status: int, message: str, entry: dict[str, Any] | None = None) -> None:
        with contextlib.suppress(_Refused):
            handler.read_body()  # so the client is not still sending when the socket closes
        if entry is not None:  # counted and logged first: a client that has its answer sees them
            entry.update(status=status, refused=message, input_tokens=0, output_tokens=0)
            with self._lock:
                self._totals.refused += 1
            self._log(entry)
        with contextlib.suppress(OSError):
            send_json(handler, status, {"error": {"message": f"podium llm proxy: {message}", "type": "podium_proxy"}})
        if handler.unread:
            handler.linger()

    def _log(self, entry: dict[str, Any]) -> None:
        line = json.dumps(entry) + "\n"
        with self._lock, open(self.log_path, "a", encoding="utf-8") as log:
            log.write(line)


def _send(handler: _Handler, data: bytes) -> None:
    if data:
        with contextlib.suppress(OSError):  # the agent hung up: still drain, count and log
            handler.wfile.write(data)
            handler.wfile.flush()
