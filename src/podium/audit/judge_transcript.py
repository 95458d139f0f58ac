"""The judge's reading of podium's transcript (``RUN/llm_transcript.jsonl``, I1): one call's line as the lines
of its messages new to the material.

A call's request repeats the conversation so far, so each message is shown once, the first time it appears
(a message seen before, in this conversation or another, is counted, not repeated). Tool calls are shown with
their arguments decoded, so code reads as code; chat completions, Anthropic messages and the Responses API are
read alike. A message podium's proxy cut (its lines are bounded: it keeps a long string's start and end) is
known by its first and last characters when it was shown whole before, and counted as cut otherwise.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from podium.untrusted import UntrustedJSONError, loads, loads_object

#: The largest tool-call arguments decoded for the material, and the deepest JSON read from the transcript.
_MAX_ARGUMENTS = 1 << 20
_MAX_DEPTH = 200

__all__ = ["MAX_SEEN", "TRANSCRIPT", "Counts", "call_rows", "json_object"]

#: The transcript's name in the run's folder (I1: written by podium's proxy, outside the agent's reach).
TRANSCRIPT = "llm_transcript.jsonl"
#: The most distinct messages remembered for de-duplication (beyond, repeats are shown again).
MAX_SEEN = 200_000
#: Where podium's proxy cut a long string of a transcript line (I1: the middle goes, the start and the end stay).
_CUT = re.compile(r"\.\.\.\[podium cut \d+ characters\]\.\.\.")
#: The characters of a message's start and end that tell a cut copy of it (the proxy keeps at least 42 and 21).
_ENDS = (42, 21)


@dataclass
class Counts:
    """Messages of the transcript not shown again (``repeated``) and cut by the proxy without a whole copy (``cut``)."""

    repeated: int = 0
    cut: int = 0


def call_rows(call: dict[str, Any], number: int, seen: set[bytes], counts: Counts) -> tuple[str, list[str]]:
    """One transcript line as a title and the lines of the messages new to the material; ``counts`` adds up the
    messages repeated and cut."""
    api = str(call.get("api") or "other")
    title = (
        f"{TRANSCRIPT} line {number}: call {call.get('call')} ({api} {call.get('path')}, model {call.get('model')}, "
        f"status {call.get('status')})"
    )
    rows: list[str] = []
    repeated = 0
    for role, text in [*_request_messages(api, call.get("request")), *_response_messages(api, call.get("response"))]:
        keys = _keys(role, text)
        if keys[0] in seen:
            repeated += 1
            continue
        if len(seen) < MAX_SEEN:
            seen.update(keys)
        if _CUT.search(text):
            counts.cut += 1  # cut by the proxy, and not shown whole before: part of it is lost
        rows += [f"[{role}]", *text.splitlines()]
    if call.get("truncated") and not all(isinstance(call.get(k), dict | None) for k in ("request", "response")):
        counts.cut += 1  # the proxy kept only the start of the call's JSON
    if repeated:
        counts.repeated += repeated
        rows.insert(0, f"[{repeated} message(s) shown earlier in the material not repeated]")
    if call.get("error"):
        rows.append(f"[error] {call['error']}")
    return title, rows


def _keys(role: str, text: str) -> tuple[bytes, ...]:
    """What tells a message seen before: the hash of its whole text; for a whole one also the hash of its start and end
    (:data:`_ENDS` characters), which is all a copy the proxy cut in the middle keeps of it, so that copy is known."""
    cut = list(_CUT.finditer(text))
    if cut:
        head, tail = text[: cut[0].start()], text[cut[-1].end() :]
        if len(head) >= _ENDS[0] and len(tail) >= _ENDS[1]:
            return (hashlib.sha256(f"{role}\0{head[: _ENDS[0]]}\0{tail[-_ENDS[1] :]}".encode()).digest(),)
        return (hashlib.sha256(f"{role}\0{text}".encode()).digest(),)
    whole = hashlib.sha256(f"{role}\0{text}".encode()).digest()
    if len(text) < sum(_ENDS):
        return (whole,)
    return whole, hashlib.sha256(f"{role}\0{text[: _ENDS[0]]}\0{text[-_ENDS[1] :]}".encode()).digest()


def _request_messages(api: str, request: Any) -> list[tuple[str, str]]:
    """(role, text) of every message of a request, in order."""
    if not isinstance(request, dict):
        return [("request", _text(request))] if request is not None else []
    if api == "chat":
        return [_chat_message(m) for m in _list(request.get("messages"))]
    if api == "messages":
        system = [("system", _text(request["system"]))] if request.get("system") else []
        return system + [_chat_message(m) for m in _list(request.get("messages"))]
    if api == "responses":
        system = [("system", _text(request["instructions"]))] if request.get("instructions") else []
        given = request.get("input")
        items = [("user", given)] if isinstance(given, str) else [_item(i) for i in _list(given)]
        return system + items
    return [("request", _text(request))]


def _response_messages(api: str, response: Any) -> list[tuple[str, str]]:
    """(role, text) of what a call answered, shaped as the next request repeats it."""
    if not isinstance(response, dict):
        return [("response", _text(response))] if response is not None else []
    if api == "chat":
        return [_chat_message(c.get("message")) for c in _list(response.get("choices")) if isinstance(c, dict)]
    if api == "messages":
        return [("assistant", _text(response.get("content")))]
    if api == "responses":
        return [_item(i) for i in _list(response.get("output"))]
    return [("response", _text(response))]


def _chat_message(message: Any) -> tuple[str, str]:
    """A chat or messages-API message: its role, and its text with its tool calls."""
    if not isinstance(message, dict):
        return "message", _text(message)
    parts = [_text(message.get("content"))]
    for call in _list(message.get("tool_calls")):
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            parts.append(f"[tool call {function.get('name')}]\n{_arguments(function.get('arguments'))}")
    if isinstance(message.get("function_call"), dict):
        function = message["function_call"]
        parts.append(f"[tool call {function.get('name')}]\n{_arguments(function.get('arguments'))}")
    return str(message.get("role") or "message"), "\n".join(p for p in parts if p)


def _item(item: Any) -> tuple[str, str]:
    """One item of the Responses API (a message, a tool call, a tool's output, a reasoning summary)."""
    if not isinstance(item, dict):
        return "item", _text(item)
    kind = str(item.get("type") or "message")
    if "role" in item:
        return str(item["role"]), _text(item.get("content"))
    if kind.endswith("_call") and ("arguments" in item or "input" in item or "action" in item):
        given = item.get("arguments", item.get("input", item.get("action")))
        return "assistant", f"[{kind} {item.get('name') or ''}]\n{_arguments(given)}"
    if kind.endswith("_call_output"):
        return "tool", f"[{kind}]\n{_text(item.get('output'))}"
    if kind == "reasoning":
        return "assistant", "[reasoning]\n" + _text(item.get("summary") or item.get("content"))
    return kind, _text(item)


def _text(content: Any) -> str:
    """The text of a message's content: a string, or its parts (text, tool calls and results, images named)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(t for t in (_part(p) for p in content) if t)
    return json.dumps(content, ensure_ascii=False)


def _part(part: Any) -> str:
    if not isinstance(part, dict):
        return _text(part)
    kind = str(part.get("type") or "")
    for key in ("text", "thinking", "refusal"):
        if isinstance(part.get(key), str):
            return part[key] if key == "text" else f"[{key}]\n{part[key]}"
    if kind == "tool_use":
        return f"[tool call {part.get('name')}]\n{_arguments(part.get('input'))}"
    if kind == "tool_result":
        return f"[tool result]\n{_text(part.get('content'))}"
    if "image" in kind or "audio" in kind or kind in ("file", "input_file", "document"):
        return f"[{kind}]"
    return json.dumps(part, ensure_ascii=False)


def _arguments(value: Any) -> str:
    """A tool call's arguments, each on its own lines (a JSON string is decoded, so code shows as code)."""
    if isinstance(value, str):
        try:
            value = loads(value, max_bytes=_MAX_ARGUMENTS)
        except UntrustedJSONError:
            return value
    if isinstance(value, dict):
        return "\n".join(
            f"{k}: {v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}" for k, v in value.items()
        )
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def json_object(raw: bytes) -> dict[str, Any] | None:
    """A transcript line as a JSON object (it holds what the agent sent: any size up to a line's, any nesting),
    or None."""
    try:
        return loads_object(raw, max_bytes=len(raw), max_depth=_MAX_DEPTH)
    except UntrustedJSONError:
        return None
