"""Forwarding a call to the provider and relaying its answer to the agent as it comes, metered.

:class:`Relay` is the proxy's half that talks to the provider: the request goes to the one configured base URL with
podium's key and only the headers :mod:`~podium.services.llm.policy` lets through; the answer comes back as it
arrives (a stream event by event, metered against the budget and ended with its format's error event when it
passes it; a JSON answer read within :data:`MAX_ANSWER_BYTES`), its usage counted and its text kept for the
transcript.
"""

from __future__ import annotations

import contextlib
import http.client
import json
from typing import Any
from urllib.parse import urlsplit

from podium.agents.prices import Price
from podium.services._http import send_json
from podium.services.llm.accounting import Reservation
from podium.services.llm.admission import Handler, json_or_text
from podium.services.llm.call import Call
from podium.services.llm.chat import ChatStream
from podium.services.llm.messages import MessagesStream
from podium.services.llm.policy import forwarded_headers
from podium.services.llm.responses import ResponsesStream
from podium.services.llm.sse import Assembler, Event, EventSplitter, event_bytes
from podium.services.llm.translate import ResponsesFromChat, chat_request, response_of

__all__ = ["HARNESS_STATUSES", "MAX_ANSWER_BYTES", "Relay"]

#: The largest JSON answer the proxy reads (for its usage, the alias and the transcript); a larger one passes unread.
MAX_ANSWER_BYTES = 32 << 20
_UPSTREAM_TIMEOUT_SECONDS = 600
_FORWARDED_RESPONSE_HEADERS = {"content-type", "request-id", "x-request-id", "openai-processing-ms"}
#: What the provider answers when the fault is the harness's (its key, its address, its server), not the agent's.
HARNESS_STATUSES = {401, 402, 403, 404, 405, 407, 408, 429}
_ASSEMBLERS: dict[str, type[Assembler]] = {"messages": MessagesStream, "responses": ResponsesStream}


class Relay:
    """The provider's side of :class:`~podium.services.llm.proxy.LLMProxy` (its ``config``, ``ledger`` and key)."""

    config: Any
    ledger: Any
    _key: str
    _chat_cap: str  # the field that caps a Chat Completions answer at this provider

    def _forward(
        self,
        handler: Handler,
        path: str,
        payload: dict[str, Any],
        call: Call,
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
        headers, dropped = forwarded_headers(handler.headers)
        if dropped:
            call.entry["dropped_headers"] = sorted(set(dropped))[:20]
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
        handler: Handler,
        response: http.client.HTTPResponse,
        payload: dict[str, Any],
        call: Call,
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
            if status in HARNESS_STATUSES or status >= 500:
                self.ledger.failed(
                    f"the provider answered HTTP {status} at {where}" + (f": {message}" if message else "")
                )

    def _relay_stream(
        self,
        handler: Handler,
        response: http.client.HTTPResponse,
        payload: dict[str, Any],
        call: Call,
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
        handler: Handler,
        event: Event,
        assembler: Assembler,
        translated: bool,
        alias: tuple[Any, Any],
        call: Call,
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
        reason = self.ledger.meter(held, assembler.usage, assembler.streamed_tokens, price)
        if reason is None:
            return False
        call.entry["cut"] = call.line["error"] = reason
        call.entry["error"] = reason
        _send(handler, assembler.cut(f"podium llm proxy: {reason}; the run's model budget is spent"))
        return True

    def _relay_body(
        self,
        handler: Handler,
        response: http.client.HTTPResponse,
        payload: dict[str, Any],
        call: Call,
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
        answer = json_or_text(data)
        call.usage.read(answer)
        if isinstance(answer, dict):
            changed = bool(alias[0]) and _renamed(answer, alias[0], alias[1])
            if translated and 200 <= response.status < 300:
                answer, changed = response_of(answer, payload), True
            if changed:
                data = json.dumps(answer).encode()
        call.line["response"] = answer
        _send(handler, data)


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


def _send(handler: Handler, data: bytes) -> None:
    if data:
        with contextlib.suppress(OSError):  # the agent hung up: still drain, count and log
            handler.wfile.write(data)
            handler.wfile.flush()
