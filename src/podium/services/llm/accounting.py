"""One accounting of tokens and cost under every wire format: what a call may use, what it used, what is left.

* :class:`Usage` reads the ``usage`` objects of all three formats (chat completions, Anthropic
  messages, Responses), in a JSON body or in a stream's events, cached input included;
* :func:`asked_cap`, :func:`answers_asked`, :func:`cap_field` and :func:`cap_answer` read and set a
  request's answer cap;
* :class:`Ledger` holds the run's budget (tokens, requests, USD): a call *reserves* what it may use
  before it is forwarded, a stream is *metered* while it passes, and a call *settles* when it ends
  (the module docstring of :mod:`podium.services.llm` says how these hold the budget).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from podium.agents.llm import PROVIDERS, LLMConfig, Provider
from podium.agents.prices import Price

__all__ = [
    "BYTES_PER_TOKEN",
    "Ledger",
    "Refused",
    "Reservation",
    "Usage",
    "answers_asked",
    "asked_cap",
    "cap_answer",
    "cap_field",
]

# The fields that cap an answer's tokens: OpenAI chat (max_completion_tokens, formerly max_tokens),
# completions and Anthropic messages (max_tokens), OpenAI responses (max_output_tokens).
_OUTPUT_CAPS = ("max_completion_tokens", "max_tokens", "max_output_tokens")
#: How a stream's output is estimated between its usage events: a token per this many bytes of streamed text.
BYTES_PER_TOKEN = 4


class Refused(Exception):
    """The proxy refuses a call: the HTTP status and the message the agent reads."""

    def __init__(self, status: int, message: str, *, config: bool = False, field: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        #: Refused for how the run is set up (a path or a model the provider is not given for it), not for what
        #: the agent asked: a run whose every call is refused so has never had its model (a harness failure).
        self.config = config
        self.field = field  # the request's field refused (``messages[0].content[1].file.file_data``), if one


@dataclass
class Usage:
    """Tokens an answer reports: input (cache reads and writes included), output, and the cached part of input.

    Counts in a stream are cumulative (Anthropic's ``message_delta``, OpenAI's last chunk), so each
    reading keeps the largest. OpenAI counts cached input inside its input; Anthropic counts cache
    reads and writes apart (both are added to input here, reads are also the cached part)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0

    def read(self, message: Any) -> None:
        """Take the usage of a body or an event (at its top, or under ``message`` or ``response``)."""
        if not isinstance(message, dict):
            return
        for holder in (message, message.get("message"), message.get("response")):
            usage = holder.get("usage") if isinstance(holder, dict) else None
            if isinstance(usage, dict):
                self._take(usage)

    def _take(self, usage: dict[str, Any]) -> None:
        read, written = _int(usage.get("cache_read_input_tokens")), _int(usage.get("cache_creation_input_tokens"))
        tokens_in = _int(usage.get("prompt_tokens", usage.get("input_tokens"))) + read + written
        details = usage.get("prompt_tokens_details") or usage.get("input_tokens_details") or {}
        cached = read + (_int(details.get("cached_tokens")) if isinstance(details, dict) else 0)
        self.input_tokens = max(self.input_tokens, tokens_in)
        self.cached_tokens = max(self.cached_tokens, cached)
        self.output_tokens = max(self.output_tokens, _int(usage.get("completion_tokens", usage.get("output_tokens"))))

    @property
    def reported(self) -> bool:
        return bool(self.input_tokens or self.output_tokens)


def _int(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else 0


def asked_cap(payload: dict[str, Any]) -> int | None:
    """The answer's cap the request names (the largest, if it names several), or None."""
    caps = [v for v in (payload.get(k) for k in _OUTPUT_CAPS) if isinstance(v, int) and not isinstance(v, bool)]
    return max(0, *caps) if caps else None


def answers_asked(payload: dict[str, Any]) -> int:
    """How many answers the call asks for (OpenAI's ``n``; ``best_of`` for completions)."""
    counts = [v for v in (payload.get("n"), payload.get("best_of")) if isinstance(v, int) and not isinstance(v, bool)]
    return max([1, *counts])


def cap_field(provider: Provider, path: str) -> str | None:
    """The request field that caps the answer on ``path``; None where the call has no answer to cap."""
    if path == "/v1/embeddings":
        return None
    if path == "/v1/responses":
        return "max_output_tokens"
    if path == "/v1/chat/completions" and provider.base_url == PROVIDERS["openai"].base_url:
        return "max_completion_tokens"  # OpenAI's own API (its reasoning models refuse max_tokens)
    return "max_tokens"  # Anthropic, and the OpenAI-compatible servers (llama-cpp-python knows no other)


def cap_answer(payload: dict[str, Any], field: str | None, limit: int | None) -> int | None:
    """Hold the request's answer to ``limit`` tokens: the cap fields it names above ``limit`` are lowered to it,
    and where it names none, ``field`` is added. Returns the cap set, or None where nothing changed."""
    if limit is None or field is None:
        return None
    named = [k for k in _OUTPUT_CAPS if isinstance(payload.get(k), int) and not isinstance(payload.get(k), bool)]
    if not named:
        payload[field] = limit
        return limit
    lowered = [k for k in named if payload[k] > limit]
    for key in lowered:
        payload[key] = limit
    return limit if lowered else None


@dataclass
class Reservation:
    """What one call in flight holds of the budget, and how far past it its stream has gone."""

    tokens: int = 0
    cost: float = 0.0
    cap: tuple[str, int] | None = None  # (field, tokens) to add to the request so that its answer fits
    size: int = 0  # the request's bytes (no text has more tokens than bytes)
    output_estimate: int = 0  # the stream's output so far, as metered
    over_tokens: int = 0  # the stream's use so far beyond ``tokens`` (metered)
    over_cost: float = 0.0
    counted: bool = False  # counted among the calls in flight (only when a budget is set)


@dataclass
class _Totals:
    calls: int = 0
    refused: int = 0
    answered: int = 0  # calls the provider answered with a 2xx
    failed: int = 0  # calls that failed for the harness's reasons (provider unreachable, its errors)
    last_failure: str | None = None
    refused_for_setup: int = 0  # calls refused for how the run is set up (a path, a model it is not given)
    last_setup_refusal: str | None = None
    cut: int = 0  # streams ended mid-way because they passed the budget
    input_tokens: int = 0
    output_tokens: int = 0
    unreported_tokens: int = 0  # reservations charged for successful answers that reported no usage
    cached_input_tokens: int = 0  # the part of input_tokens the provider read from its cache
    cost_usd: float = 0.0
    unpriced_calls: int = 0  # answered calls of models the price table does not list
    priced_calls: int = 0
    reserved: int = 0  # tokens, by the calls in flight
    reserved_cost: float = 0.0  # USD, by the calls in flight
    over: int = 0  # tokens the streams in flight have used beyond their reservations
    over_cost: float = 0.0
    in_flight: int = 0

    @property
    def used(self) -> int:
        return self.input_tokens + self.output_tokens + self.unreported_tokens


class Ledger:
    """The run's budget: reservations before a call leaves, metering while a stream passes, settling at its end."""

    def __init__(self, config: LLMConfig) -> None:
        self.config = config
        self.totals = _Totals()
        self._lock = threading.RLock()
        self._settled = threading.Condition(self._lock)  # a call in flight returned: its reservation is free
        self._stopping = False

    @property
    def lock(self) -> threading.RLock:
        return self._lock

    def stop(self) -> None:
        """Calls waiting for a reservation give up at once."""
        with self._settled:
            self._stopping = True
            self._settled.notify_all()

    def refused(self, setup: str | None = None) -> None:
        """A call was refused; ``setup``: why, when it was for how the run is set up (:attr:`Refused.config`)."""
        with self._lock:
            self.totals.refused += 1
            if setup is not None:
                self.totals.refused_for_setup += 1
                self.totals.last_setup_refusal = setup

    def reserve(self, payload: dict[str, Any], size: int, price: Price | None, field: str | None) -> Reservation:
        """Count the call in, reserving its tokens and its worst-case cost; waits while the calls in flight hold
        what it needs, and raises :class:`Refused` (429) when it cannot fit even then."""
        budget, cost_budget = self.config.max_tokens, self.config.max_cost_usd
        asked, choices = asked_cap(payload), answers_asked(payload)
        with self._settled:
            while True:
                t = self.totals
                if self.config.max_requests is not None and t.calls >= self.config.max_requests:
                    raise Refused(429, f"request budget spent ({self.config.max_requests} calls)")
                per_call = self.config.max_tokens_per_call
                if budget is None and cost_budget is None:  # no budget: still no answer longer than the per-call cap
                    t.calls += 1
                    return Reservation(size=size, cap=(field, per_call) if asked is None and field else None)
                left = None if budget is None else budget - t.used - t.reserved - t.over
                cap = None
                if asked is not None or field is None:
                    need = size + (asked or 0) * choices
                else:  # no cap named: the per-call cap, or what is left when that is less, always added to the call
                    room = per_call if left is None else (left - size) // choices
                    per_choice = max(1, min(per_call, room))
                    need = size + per_choice * choices
                    cap = (field, per_choice)
                cost_need = price.cost(size, need - size) if cost_budget is not None and price is not None else 0.0
                cost_left = None if cost_budget is None else cost_budget - t.cost_usd - t.reserved_cost - t.over_cost
                if (left is None or need <= left) and (cost_left is None or cost_need <= cost_left):
                    t.calls += 1
                    t.reserved += need
                    t.reserved_cost += cost_need
                    t.in_flight += 1
                    return Reservation(need, cost_need, cap, size, counted=True)
                if not t.in_flight or self._stopping:
                    raise Refused(429, self._refusal(need, size, left, cost_need, cost_left))
                self._settled.wait(timeout=1.0)

    def _refusal(self, need: int, size: int, left: int | None, cost_need: float, cost_left: float | None) -> str:
        t, budget, cost_budget = self.totals, self.config.max_tokens, self.config.max_cost_usd
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

    def meter(self, held: Reservation, usage: Usage, streamed_tokens: int, price: Price | None) -> str | None:
        """A stream has used ``usage`` as reported so far (its input, until reported, its request's bytes; its output
        at least ``streamed_tokens``, the estimate of :attr:`podium.services.llm.sse.Assembler.streamed_tokens`):
        None while that fits in its reservation and what the budget has left beside the other calls, else why it
        must end now."""
        output = held.output_estimate = max(usage.output_tokens, streamed_tokens)
        if not held.counted:
            return None
        tokens_in = usage.input_tokens or held.size  # not reported yet: at most its bytes
        tokens = tokens_in + output
        cost = price.cost(tokens_in, output, usage.cached_tokens) if price is not None else 0.0
        with self._lock:
            t = self.totals
            over, over_cost = max(0, tokens - held.tokens), max(0.0, cost - held.cost)
            t.over += over - held.over_tokens
            t.over_cost += over_cost - held.over_cost
            held.over_tokens, held.over_cost = over, over_cost
            budget, cost_budget = self.config.max_tokens, self.config.max_cost_usd
            if budget is not None and over and t.used + t.reserved + t.over > budget:
                return f"token budget passed mid-stream ({t.used + t.reserved + t.over} of {budget} tokens)"
            if cost_budget is not None and over_cost and t.cost_usd + t.reserved_cost + t.over_cost > cost_budget:
                spent = t.cost_usd + t.reserved_cost + t.over_cost
                return f"cost budget passed mid-stream (${spent:.4f} of ${cost_budget:g})"
        return None

    def settle(
        self, held: Reservation, usage: Usage | None, price: Price | None, status: int, entry: dict[str, Any]
    ) -> None:
        """The call returned: its reservation gives way to the tokens its answer reports (or, for a stream that was
        cut or reported nothing, to what it was metered at), and their cost; ``entry`` gets the call's figures."""
        with self._settled:
            t = self.totals
            if held.counted:
                t.reserved -= held.tokens
                t.reserved_cost -= held.cost
                t.over -= held.over_tokens
                t.over_cost -= held.over_cost
                t.in_flight -= 1
            if usage is not None:
                answered = 200 <= status < 300
                if entry.get("cut"):  # no final count came: the input as reported (else its bytes), the output metered
                    usage = Usage(
                        usage.input_tokens or held.size,
                        max(usage.output_tokens, held.output_estimate),
                        usage.cached_tokens,
                    )
                t.input_tokens += usage.input_tokens
                t.output_tokens += usage.output_tokens
                t.cached_input_tokens += usage.cached_tokens
                if not usage.reported and answered:  # a success that reported no usage: the larger of what it
                    # reserved and what its stream was metered at
                    charged = max(held.tokens, held.size + held.output_estimate)
                    t.unreported_tokens += charged
                    entry["unreported_tokens"] = charged
                    metered = price.cost(held.size, held.output_estimate) if price is not None else 0.0
                    cost = max(held.cost, metered)
                else:
                    cost = price.cost(usage.input_tokens, usage.output_tokens, usage.cached_tokens) if price else 0.0
                if answered:
                    t.answered += 1
                    if price is None:
                        t.unpriced_calls += 1
                    else:
                        t.priced_calls += 1
                entry["cost_usd"] = round(cost, 9) if price is not None else None
                t.cost_usd += cost
                entry["input_tokens"], entry["output_tokens"] = usage.input_tokens, usage.output_tokens
                entry["cached_input_tokens"] = usage.cached_tokens
            if entry.get("cut"):
                t.cut += 1
            self._settled.notify_all()

    def failed(self, reason: str) -> None:
        """A call failed for the harness's reasons (the provider unreachable, its key refused, its server broken)."""
        with self._lock:
            self.totals.failed += 1
            self.totals.last_failure = reason
