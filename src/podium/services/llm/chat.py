"""OpenAI chat completions (``POST /v1/chat/completions``, and the older ``/v1/completions``) and their streams.

A stream is ``data:`` chunks (``chat.completion.chunk``) whose choices carry deltas: ``content``,
``reasoning_content`` (servers that show a model's reasoning), and ``tool_calls`` by index (the first
fragment names the call's id and function, the rest append to its arguments); with
``stream_options.include_usage`` a last chunk with empty ``choices`` carries ``usage``; ``data: [DONE]``
ends it. :class:`ChatStream` assembles it into the ``chat.completion`` (or ``text_completion``) it
stands for. A stream podium must end early gets a last chunk ``{"error": {...}}``, which OpenAI's SDKs
raise as an API error, and ``[DONE]``.
"""

from __future__ import annotations

from typing import Any

from podium.services.llm.sse import Assembler, as_dict, as_index, event_bytes

__all__ = ["ChatStream", "error_events"]


class ChatStream(Assembler):
    """Chat (or completions) chunks into the one answer they stream."""

    def __init__(self) -> None:
        super().__init__()
        self.head: dict[str, Any] = {}
        self.choices: dict[int, dict[str, Any]] = {}
        self.calls: dict[tuple[int, int], dict[str, Any]] = {}
        self.completion = False  # /v1/completions: choices carry ``text``

    def take(self, data: dict[str, Any], kind: str | None) -> None:
        if isinstance(data.get("error"), dict):
            self.error = str(data["error"].get("message") or data["error"])
        for key in ("id", "created", "model", "system_fingerprint"):
            if key in data and key not in self.head:
                self.head[key] = data[key]
        if isinstance(data.get("usage"), dict):
            self.head["usage"] = data["usage"]
        for choice in data.get("choices") or []:
            if isinstance(choice, dict):
                self._choice(choice)

    def _choice(self, choice: dict[str, Any]) -> None:
        index = as_index(choice.get("index"))
        held = self.choices.setdefault(index, {"role": "assistant", "finish_reason": None})
        if choice.get("finish_reason") is not None:
            held["finish_reason"] = choice["finish_reason"]
        if "text" in choice:
            self.completion = True
            self.add((index, "text"), choice.get("text"))
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            return
        if isinstance(delta.get("role"), str):
            held["role"] = delta["role"]
        self.add((index, "content"), delta.get("content"))
        self.add((index, "reasoning"), delta.get("reasoning_content"))
        self.add((index, "refusal"), delta.get("refusal"))
        for fragment in delta.get("tool_calls") or []:
            if not isinstance(fragment, dict):
                continue
            at = as_index(fragment.get("index"), len(self._calls_of(index)))
            call = self.calls.setdefault((index, at), {"id": None, "type": "function", "name": None})
            function = as_dict(fragment.get("function"))
            for key, value in (("id", fragment.get("id")), ("name", function.get("name"))):
                if isinstance(value, str) and value:
                    call[key] = value
            self.add((index, "call", at), function.get("arguments"))

    def _calls_of(self, index: int) -> list[int]:
        return sorted(at for (choice, at) in self.calls if choice == index)

    def answer(self) -> dict[str, Any] | None:
        if not self.head and not self.choices:
            return None
        choices = []
        for index in sorted(self.choices):
            held = self.choices[index]
            if self.completion:
                choices.append(
                    {"index": index, "text": self.text((index, "text")), "finish_reason": held["finish_reason"]}
                )
                continue
            content = self.text((index, "content"))
            message: dict[str, Any] = {"role": held["role"], "content": content or None}
            if reasoning := self.text((index, "reasoning")):
                message["reasoning_content"] = reasoning
            if refusal := self.text((index, "refusal")):
                message["refusal"] = refusal
            calls = [
                {
                    "id": self.calls[(index, at)]["id"],
                    "type": "function",
                    "function": {"name": self.calls[(index, at)]["name"], "arguments": self.text((index, "call", at))},
                }
                for at in self._calls_of(index)
            ]
            if calls:
                message["tool_calls"] = calls
            choices.append({"index": index, "message": message, "finish_reason": held["finish_reason"]})
        kind = "text_completion" if self.completion else "chat.completion"
        return {**{k: v for k, v in self.head.items() if k != "usage"}, "object": kind, "choices": choices,
                "usage": self.head.get("usage")}  # fmt: skip

    def cut(self, message: str, budget: bool = True) -> bytes:
        return error_events(message, "insufficient_quota" if budget else "server_error")


def error_events(message: str, code: str) -> bytes:
    """What ends a chat stream early: an error chunk that OpenAI's SDKs raise, then ``[DONE]``."""
    error = {"message": message, "type": code, "code": code, "param": None}
    return event_bytes(None, {"error": error}) + b"data: [DONE]\n\n"
