"""OpenAI's Responses API (``POST /v1/responses``) and its stream, as Codex and OpenAI's current models use it.

A stream is named events, each with a ``sequence_number``: ``response.created`` and
``response.in_progress`` (the response, ``status: in_progress``), then per output item
``response.output_item.added`` ... ``response.output_item.done`` (a ``message`` with its
``response.content_part.added``, ``response.output_text.delta`` ... ``response.output_text.done``,
``response.content_part.done``; a ``function_call`` with ``response.function_call_arguments.delta`` ...
``.done``; ``reasoning`` items with their summaries), and last ``response.completed`` (or
``response.incomplete``, ``response.failed``) carrying the whole response with its ``usage``; an
``error`` event reports a failure. There is no ``[DONE]``. :class:`ResponsesStream` assembles the
response a stream stands for; a stream podium must end early gets ``response.failed`` with the response
so far and its ``error`` (Codex reads ``insufficient_quota`` as a quota it must not retry).
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from podium.services.llm.sse import Assembler, as_index, event_bytes

__all__ = ["ResponsesStream", "failed_events", "new_id"]

_TEXT_DELTAS = {
    "response.output_text.delta": "text",
    "response.refusal.delta": "refusal",
    "response.reasoning_summary_text.delta": "summary",
    "response.reasoning_text.delta": "reasoning",
}
_FINAL = ("response.completed", "response.incomplete", "response.failed")


def new_id(prefix: str) -> str:
    """An id in OpenAI's style (``resp_...``, ``msg_...``, ``fc_...``)."""
    return f"{prefix}_{uuid.uuid4().hex}"


class ResponsesStream(Assembler):
    """Responses stream events into the ``response`` they stream."""

    def __init__(self) -> None:
        super().__init__()
        self.response: dict[str, Any] = {}
        self.items: dict[int, dict[str, Any]] = {}
        self.done: set[int] = set()
        self.final = False
        self.sequence = -1

    def take(self, data: dict[str, Any], kind: str | None) -> None:
        if isinstance(data.get("sequence_number"), int):
            self.sequence = max(self.sequence, data["sequence_number"])
        index = as_index(data.get("output_index"))
        if kind in (*_FINAL, "response.created", "response.in_progress", "response.queued"):
            if isinstance(data.get("response"), dict):
                self.response = data["response"]
                self.final = self.final or kind in _FINAL
                error = self.response.get("error")
                if kind == "response.failed" and isinstance(error, dict):
                    self.error = str(error.get("message") or error)
        elif kind in ("response.output_item.added", "response.output_item.done") and isinstance(data.get("item"), dict):
            self.items[index] = dict(data["item"])
            if kind == "response.output_item.done":
                self.done.add(index)
        elif kind == "response.content_part.added" and isinstance(data.get("part"), dict):
            item = self.items.setdefault(index, {"type": "message", "role": "assistant", "content": []})
            parts = item.setdefault("content", [])
            part_index = as_index(data.get("content_index"), len(parts) if isinstance(parts, list) else 0)
            while isinstance(parts, list) and len(parts) <= part_index:
                parts.append({})
            if isinstance(parts, list):
                parts[part_index] = dict(data["part"])
        elif kind in _TEXT_DELTAS:
            self.add(
                (index, as_index(data.get("content_index", data.get("summary_index"))), _TEXT_DELTAS[kind]),
                data.get("delta"),
            )
        elif kind == "response.function_call_arguments.delta":
            self.add((index, "arguments"), data.get("delta"))
        elif kind == "error":
            self.error = str(data.get("message") or data.get("code") or "error")

    def output(self) -> list[dict[str, Any]]:
        """The output items so far: those done as the stream gave them, the others with what streamed into them."""
        out = []
        for index in sorted(self.items):
            item = dict(self.items[index])
            if index not in self.done:
                if item.get("type") == "function_call":
                    item["arguments"] = self.text((index, "arguments"), item.get("arguments"))
                parts = item.get("content")
                if isinstance(parts, list):
                    item["content"] = [self._part(index, at, p) for at, p in enumerate(parts)]
            out.append(item)
        return out

    def _part(self, index: int, at: int, part: Any) -> Any:
        if not isinstance(part, dict):
            return part
        field = "refusal" if part.get("type") == "refusal" else "text"
        return {**part, field: self.text((index, at, field), part.get(field))}

    def answer(self) -> dict[str, Any] | None:
        if not self.response and not self.items:
            return None
        if self.final and self.response.get("output"):
            return self.response
        return {**self.response, "output": self.output()}

    def cut(self, message: str, budget: bool = True) -> bytes:
        self.sequence += 1
        code = "insufficient_quota" if budget else "server_error"
        return failed_events(self.answer() or {}, message, code, self.sequence)


def failed_events(response: dict[str, Any], message: str, code: str, sequence: int) -> bytes:
    """A ``response.failed`` event for ``response`` (status ``failed``, its ``error`` set)."""
    failed = {
        "id": response.get("id") or new_id("resp"),
        "object": "response",
        "created_at": response.get("created_at") or int(time.time()),
        **response,
        "status": "failed",
        "error": {"code": code, "message": message},
    }
    return event_bytes("response.failed", {"type": "response.failed", "sequence_number": sequence, "response": failed})
