"""Anthropic Messages (``POST /v1/messages``) and its server-sent-event stream.

A stream is named events: ``message_start`` (the message with empty ``content`` and the input's
``usage``), then per content block ``content_block_start`` / ``content_block_delta`` (``text_delta``,
``input_json_delta`` with a tool call's ``partial_json``, ``thinking_delta``, ``signature_delta``,
``citations_delta``) / ``content_block_stop``, then ``message_delta`` (``stop_reason`` and the
cumulative ``usage``) and ``message_stop``; ``ping`` may come at any time and ``error`` ends a stream
that failed. :class:`MessagesStream` assembles the ``message`` a stream stands for; a stream podium must
end early gets Anthropic's own ``event: error``, which its SDKs raise as an API error.
"""

from __future__ import annotations

from typing import Any

from podium.services.llm.sse import Assembler, as_dict, as_index, event_bytes
from podium.untrusted import UntrustedJSONError, loads

__all__ = ["MessagesStream", "error_events"]

_DELTA_FIELDS = {"text_delta": "text", "thinking_delta": "thinking", "input_json_delta": "partial_json"}


class MessagesStream(Assembler):
    """Anthropic's stream events into the ``message`` they stream."""

    def __init__(self) -> None:
        super().__init__()
        self.message: dict[str, Any] = {}
        self.blocks: dict[int, dict[str, Any]] = {}

    def take(self, data: dict[str, Any], kind: str | None) -> None:
        if kind == "message_start" and isinstance(data.get("message"), dict):
            self.message = {k: v for k, v in data["message"].items() if k != "content"}
        elif kind == "content_block_start" and isinstance(data.get("content_block"), dict):
            self.blocks[as_index(data.get("index"))] = dict(data["content_block"])
        elif kind == "content_block_delta" and isinstance(data.get("delta"), dict):
            self._delta(as_index(data.get("index")), data["delta"])
        elif kind == "message_delta":
            if isinstance(data.get("delta"), dict):
                self.message.update(data["delta"])
            if isinstance(data.get("usage"), dict):
                self.message["usage"] = {**as_dict(self.message.get("usage")), **data["usage"]}
        elif kind == "error":
            error = data.get("error")
            self.error = str(error.get("message") or error) if isinstance(error, dict) else str(error)

    def _delta(self, index: int, delta: dict[str, Any]) -> None:
        block = self.blocks.setdefault(index, {"type": "text", "text": ""})
        kind = delta.get("type")
        if kind in _DELTA_FIELDS:
            self.add((index, kind), delta.get(_DELTA_FIELDS[str(kind)]))
        elif kind == "signature_delta" and isinstance(delta.get("signature"), str):
            block["signature"] = delta["signature"]
        elif kind == "citations_delta" and isinstance(delta.get("citation"), dict):
            block.setdefault("citations", []).append(delta["citation"])

    def answer(self) -> dict[str, Any] | None:
        if not self.message and not self.blocks:
            return None
        content = []
        for index in sorted(self.blocks):
            block = dict(self.blocks[index])
            if block.get("type") in ("text", "thinking"):
                field = str(block["type"])
                block[field] = self.text((index, f"{field}_delta"), block.get(field))
            elif block.get("type") in ("tool_use", "server_tool_use"):
                partial = self.text((index, "input_json_delta"))
                if partial:
                    try:
                        block["input"] = loads(partial, max_bytes=len(partial.encode()), max_depth=500)
                    except UntrustedJSONError:  # cut mid-way (or nested past reading): what came, as text
                        block["input"] = partial
            content.append(block)
        return {"type": "message", "role": "assistant", **self.message, "content": content}

    def cut(self, message: str, budget: bool = True) -> bytes:
        # a spent budget is not worth retrying; a broken stream is (Anthropic's own type for its server's failures)
        return error_events(message, "invalid_request_error" if budget else "api_error")


def error_events(message: str, kind: str) -> bytes:
    """What ends an Anthropic stream early: its ``error`` event."""
    return event_bytes("error", {"type": "error", "error": {"type": kind, "message": message}})
