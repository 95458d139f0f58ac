"""The proxy itself: one run's HTTP server on a Unix socket, each call read, checked, reserved, forwarded, relayed,
metered, settled and written down (the package's docstring says what each step holds)."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from podium.agents.llm import LLMConfig
from podium.agents.prices import Price, price_table
from podium.services._http import UnixService, send_json
from podium.services.llm.accounting import Ledger, Refused, Reservation, cap_answer, cap_field
from podium.services.llm.admission import MAX_PARSES, MAX_REQUEST_BYTES, Handler, json_or_text, parse_request
from podium.services.llm.call import Call
from podium.services.llm.policy import check_request
from podium.services.llm.relay import MAX_ANSWER_BYTES, Relay
from podium.services.llm.transcript import Transcript, secrets_of
from podium.services.llm.translate import chat_request

__all__ = ["BRIDGE_PORT", "MAX_ANSWER_BYTES", "MAX_REQUEST_BYTES", "LLMProxy", "model_failure"]

#: The loopback port inside the sandbox where ``llm_bridge.py`` relays to the proxy's socket.
BRIDGE_PORT = 8399
_BUDGET_KEYS = ("max_tokens", "max_requests", "max_tokens_per_call", "max_answer_tokens", "max_cost_usd")
_MODEL_CHARS = 200  # of a model's name, in the log and in a refusal
_APIS = {"/v1/chat/completions": "chat", "/v1/messages": "messages", "/v1/responses": "responses"}


class LLMProxy(UnixService, Relay):
    """Forward a run's model calls to one provider, with its key, within its budget; log and transcribe every call."""

    handler = Handler
    thread_name = "podium-llm-proxy"

    def __init__(
        self,
        config: LLMConfig,
        socket_path: Path,
        log_path: Path,
        api_key: str | None = None,
        transcript_path: Path | None = None,
    ) -> None:
        super().__init__(socket_path, error_log=Path(log_path).with_name("service_errors.log"))
        self.config = config
        self.log_path = Path(log_path)
        self._key = api_key if api_key is not None else config.api_key()
        self.ledger = Ledger(config)
        self.transcript = Transcript(transcript_path, secrets_of(os.environ, self._key))
        self._arrivals = itertools.count(1)
        self._log_lock = threading.Lock()
        self._parsing = threading.BoundedSemaphore(MAX_PARSES)  # the run's bodies parsed at once (memory)
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
                "refused_for_setup": t.refused_for_setup,
                "last_setup_refusal": t.last_setup_refusal,
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

    def _handle(self, handler: Handler) -> None:
        started = time.monotonic()
        number = next(self._arrivals)
        now = datetime.now(UTC).isoformat(timespec="milliseconds")
        path = handler.path.split("?", 1)[0]
        call = Call(
            {"call": number, "time": now, "path": handler.path},
            {"call": number, "time": now, "api": _APIS.get(path, "other"), "path": path, "model": None,
             "status": None, "stream": False, "request": None, "response": None, "error": None, "truncated": False},
        )  # fmt: skip
        try:
            payload, price, held, translated = self._admit(handler, path, call)
        except Refused as refusal:
            return self._refuse(handler, refusal.status, str(refusal), call, config=refusal.config, field=refusal.field)
        try:
            self._exchange(handler, path, payload, call, price, held, translated)
        finally:
            self.ledger.settle(held, call.usage, price, int(call.entry.get("status") or 0), call.entry)
        call.entry["seconds"] = round(time.monotonic() - started, 3)
        self._finish(call)

    def _admit(self, handler: Handler, path: str, call: Call) -> tuple[dict[str, Any], Price | None, Reservation, bool]:
        """Read and check the call, make the request what is forwarded, and reserve its share of the budget."""
        body = handler.read_body()  # first: a refusal is only sent once the client has sent everything
        if path not in self._paths:
            call.line["request"] = json_or_text(body[:4096])
            raise Refused(403, f"{path} is not forwarded; allowed: POST {', '.join(sorted(self._paths))}", config=True)
        try:
            with self._parsing:
                sent = parse_request(body)  # once; the transcript keeps what the agent sent
        except Refused:
            call.line["request"] = json_or_text(body[:4096])
            raise
        call.line["request"] = sent
        payload = dict(sent)  # what is forwarded: only its top-level fields change
        model = payload.get("model")
        call.entry["model"] = call.line["model"] = model[:_MODEL_CHARS] if isinstance(model, str) else None
        if self.config.models and model not in self.config.models:
            shown = repr(model)[:_MODEL_CHARS]
            raise Refused(403, f"model {shown} is not allowed; allowed: {list(self.config.models)}", config=True)
        for where, name in check_request(_APIS.get(path, "other"), payload):  # every path: completions, embeddings
            if self.config.models and name not in self.config.models:
                raise Refused(403, f"{where} names the model {name[:_MODEL_CHARS]!a}, which is not allowed; "
                              f"allowed: {list(self.config.models)}", config=True, field=where)  # fmt: skip
        if isinstance(model, str) and self.config.provider_model(model) != model:  # an alias
            payload["model"] = call.entry["provider_model"] = self.config.provider_model(model)
        if isinstance(payload.get("models"), list):  # OpenRouter's fallbacks, each allowed: by the provider's names
            payload["models"] = [self.config.provider_model(n) if isinstance(n, str) else n for n in payload["models"]]
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
        handler: Handler,
        path: str,
        payload: dict[str, Any],
        call: Call,
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

    def _answer_refusal(
        self, handler: Handler, status: int, message: str, call: Call | None, field: str | None = None
    ) -> None:
        answer = _refusal_answer(handler.path, message, field)
        if call is not None:
            call.line["response"] = answer
        with contextlib.suppress(OSError):
            send_json(handler, status, answer)
        if handler.unread:
            handler.linger()

    def _refuse(
        self,
        handler: Handler,
        status: int,
        message: str,
        call: Call | None = None,
        *,
        config: bool = False,
        field: str | None = None,
    ) -> None:
        with contextlib.suppress(Refused):
            handler.read_body()  # so the client is not still sending when the socket closes
        if call is not None:  # counted and logged first: a client that has its answer sees them
            call.entry.update(status=status, refused=message, input_tokens=0, output_tokens=0)
            call.line.update(status=status, error=message)
            call.line["response"] = _refusal_answer(handler.path, message, field)
            self.ledger.refused(message if config else None)
            self._finish(call)
        self._answer_refusal(handler, status, message, None, field)

    def _finish(self, call: Call) -> None:
        """The call's line in the log, then in the transcript."""
        call.line["status"] = call.entry.get("status")
        line = json.dumps(call.entry) + "\n"
        with self._log_lock, open(self.log_path, "a", encoding="utf-8") as log:
            log.write(line)
        self.transcript.write(call.line)


def _refusal_answer(path: str, message: str, field: str | None = None) -> dict[str, Any]:
    """The proxy's refusal in the error shape of the API on ``path``: Anthropic's ``{"type": "error", "error": ...}``
    for Messages, OpenAI's ``{"error": {..., "param": the field}}`` for the others; ``type`` is ``podium_proxy``,
    so a client can tell the proxy's refusal from the provider's errors, which pass as they came."""
    error = {"message": f"podium llm proxy: {message}", "type": "podium_proxy"}
    if path.split("?", 1)[0] == "/v1/messages":
        return {"type": "error", "error": error}
    return {"error": {**error, "param": field, "code": None}}


def model_failure(summary: dict[str, Any] | None) -> str | None:
    """Why the run never had its model, from the proxy's summary: every call it forwarded failed for the harness's
    reasons (the provider unreachable, its key refused, its server failing), or it forwarded none because every
    call was refused for how the run is set up (a path or a model the provider is not given for it); None
    otherwise."""
    if not summary:
        return None
    calls, failed = int(summary.get("calls") or 0), int(summary.get("failed_calls") or 0)
    setup = int(summary.get("refused_for_setup") or 0)
    if setup and not summary.get("answered_calls") and failed == calls:
        return (
            f"every model call was refused by podium's proxy for how the run is set up ({setup} call(s)), so the "
            f"agent never had its model; the last: {summary.get('last_setup_refusal')}"
        )
    if not calls or failed < calls or summary.get("answered_calls"):
        return None
    return (
        f"every model call failed ({failed} of {calls}), so the agent never had its model; the last: "
        f"{summary.get('last_failure')}"
    )
