"""Reading a provider's answer for what it used, and a request for what it may use.

Token counts come from a JSON body or a server-sent-event stream, in the OpenAI (chat, responses)
and Anthropic shapes, cached input included; a request's answer cap is whichever of its cap fields
it names (times the answers it asks for).
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from podium.agents.llm import PROVIDERS, Provider

__all__ = ["ModelRenamer", "UsageCounter", "answers_asked", "asked_cap", "cap_answer", "cap_field"]

# The fields that cap an answer's tokens: OpenAI chat (max_completion_tokens, formerly max_tokens),
# completions and Anthropic messages (max_tokens), OpenAI responses (max_output_tokens).
_OUTPUT_CAPS = ("max_completion_tokens", "max_tokens", "max_output_tokens")


class UsageCounter:
    """Token counts from a JSON body or an event stream, in the OpenAI and Anthropic shapes."""

    def __init__(self) -> None:
        self.input_tokens = 0
        self.output_tokens = 0
        self.cached_tokens = 0
        self._buffer = b""

    def feed(self, chunk: bytes, streaming: bool) -> None:
        self._buffer += chunk
        if streaming:
            *lines, self._buffer = self._buffer.split(b"\n")
            for line in lines:
                self._event_line(line)

    def finish(self, streaming: bool) -> None:
        if streaming:
            self._event_line(self._buffer)
        else:
            with contextlib.suppress(ValueError):
                self._take(json.loads(self._buffer or b"null"))
        self._buffer = b""

    def _event_line(self, line: bytes) -> None:
        line = line.strip()
        if line.startswith(b"data:") and line[5:].strip() not in (b"", b"[DONE]"):
            with contextlib.suppress(ValueError):
                self._take(json.loads(line[5:]))

    def _take(self, message: Any) -> None:
        if not isinstance(message, dict):
            return
        for holder in (message, message.get("message"), message.get("response")):
            usage = holder.get("usage") if isinstance(holder, dict) else None
            if isinstance(usage, dict):
                # Counts in a stream are cumulative (Anthropic's message_delta, OpenAI's last chunk): keep the largest.
                # OpenAI counts cached input inside its input; Anthropic counts cache reads and writes apart.
                read, written = (
                    _int(usage.get("cache_read_input_tokens")),
                    _int(usage.get("cache_creation_input_tokens")),
                )
                tokens_in = _int(usage.get("prompt_tokens", usage.get("input_tokens"))) + read + written
                details = usage.get("prompt_tokens_details") or usage.get("input_tokens_details") or {}
                cached = read + (_int(details.get("cached_tokens")) if isinstance(details, dict) else 0)
                self.input_tokens = max(self.input_tokens, tokens_in)
                self.cached_tokens = max(self.cached_tokens, cached)
                self.output_tokens = max(
                    self.output_tokens, _int(usage.get("completion_tokens", usage.get("output_tokens")))
                )


def _int(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) else 0


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


class ModelRenamer:
    """Gives an answer back under the name the agent asked for: where the provider names its model
    (``model`` at the top, or in Anthropic's ``message_start`` event), an alias's provider name becomes
    the alias again. A JSON body is held until it is complete; a stream passes event line by event line."""

    def __init__(self, provider_name: str, alias: str) -> None:
        self.provider_name, self.alias = provider_name, alias
        self._needle = json.dumps(provider_name).encode()[1:-1]
        self._buffer = b""

    def feed(self, chunk: bytes, streaming: bool) -> bytes:
        """What of the answer so far can go to the agent now."""
        self._buffer += chunk
        if not streaming:
            return b""
        *lines, self._buffer = self._buffer.split(b"\n")
        return b"".join(self._line(line) + b"\n" for line in lines)

    def finish(self, streaming: bool) -> bytes:
        """The rest of the answer."""
        rest, self._buffer = self._buffer, b""
        return self._line(rest) if streaming else self._body(rest)

    def _line(self, line: bytes) -> bytes:
        if not line.startswith(b"data:") or self._needle not in line:
            return line
        return b"data: " + self._body(line[5:].strip())

    def _body(self, data: bytes) -> bytes:
        if self._needle not in data:
            return data
        try:
            message = json.loads(data)
        except ValueError:
            return data
        changed = False
        for holder in (message, message.get("message") if isinstance(message, dict) else None):
            if isinstance(holder, dict) and holder.get("model") == self.provider_name:
                holder["model"] = self.alias
                changed = True
        return json.dumps(message).encode() if changed else data
