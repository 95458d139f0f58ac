"""The scripted model's answers shaped as each API documents them: chat completions, Anthropic messages and the
Responses API, plain and streamed (the events each sends, in order), held to the cap the request names, with
token counts in whitespace-separated words; and each API's error body."""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from podium.testing.scripted_steps import Reply, ToolCall, _messages, _text_of


def _words(value: Any) -> int:
    return len(_text_of(value).split())


def _input_tokens(body: dict[str, Any]) -> int:
    system = _words(body.get("system") or "") + _words(body.get("instructions") or "")
    return system + sum(_words(m.get("content")) for m in _messages(body))


def _pieces(text: str) -> list[str]:
    """A text as a stream sends it: a word (with the space after it) at a time."""
    return re.findall(r"\s*\S+\s*", text) or ([text] if text else [])


def _cap(body: dict[str, Any], path: str) -> int | None:
    fields = {"/v1/messages": ("max_tokens",), "/v1/responses": ("max_output_tokens",)}
    caps = [body.get(k) for k in fields.get(path, ("max_completion_tokens", "max_tokens"))]
    named = [c for c in caps if isinstance(c, int) and not isinstance(c, bool) and c >= 0]
    return min(named) if named else None


@dataclass
class _Answer:
    """One answer, before it is shaped for its API."""

    model: str
    text: str
    call: ToolCall | None
    arguments: str | None
    tokens_in: int
    tokens_out: int
    capped: bool  # the text was cut at the request's cap


def _shape(step: Reply | ToolCall, body: dict[str, Any], path: str, caps: bool) -> _Answer:
    text = step.text if isinstance(step, Reply) else ""
    call = step if isinstance(step, ToolCall) else None
    arguments = None
    if call is not None:
        arguments = call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)
    cap = _cap(body, path) if caps else None
    pieces = _pieces(text)
    capped = cap is not None and len(pieces) > cap
    if capped:
        text = "".join(pieces[:cap])
    tokens_out = _words(text) + (len(arguments.split()) if arguments else 0)
    return _Answer(str(body.get("model") or "scripted"), text, call, arguments, _input_tokens(body), tokens_out, capped)


def _id(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:24]}"


# -- chat completions ----------------------------------------------------------------------------------------


def _chat(a: _Answer) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": a.text or None}
    if a.call is not None:  # a fresh id each time, as providers give
        function = {"name": a.call.name, "arguments": a.arguments}
        message["tool_calls"] = [{"id": _id("call_"), "type": "function", "function": function}]
    finish = "tool_calls" if a.call else "length" if a.capped else "stop"
    return {
        "id": _id("chatcmpl-"), "object": "chat.completion", "created": int(time.time()), "model": a.model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": a.tokens_in, "completion_tokens": a.tokens_out,
                  "total_tokens": a.tokens_in + a.tokens_out},
    }  # fmt: skip


def _chat_events(a: _Answer, body: dict[str, Any]) -> Iterator[tuple[str | None, Any]]:
    head = {"id": _id("chatcmpl-"), "object": "chat.completion.chunk", "created": int(time.time()), "model": a.model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[None, dict[str, Any]]:
        return None, {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": "" if a.call is None else None})
    for piece in _pieces(a.text):
        yield chunk({"content": piece})
    if a.call is not None and a.arguments is not None:
        start = {"index": 0, "id": _id("call_"), "type": "function", "function": {"name": a.call.name, "arguments": ""}}
        yield chunk({"tool_calls": [start]})
        for piece in _pieces(a.arguments):
            yield chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
    yield chunk({}, "tool_calls" if a.call else "length" if a.capped else "stop")
    if (body.get("stream_options") or {}).get("include_usage"):
        usage = {
            "prompt_tokens": a.tokens_in,
            "completion_tokens": a.tokens_out,
            "total_tokens": a.tokens_in + a.tokens_out,
        }
        yield None, {**head, "choices": [], "usage": usage}
    yield None, "[DONE]"


# -- Anthropic messages ----------------------------------------------------------------------------------------


def _stop_reason(a: _Answer) -> str:
    return "tool_use" if a.call else "max_tokens" if a.capped else "end_turn"


def _messages_answer(a: _Answer) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": a.text}] if a.text else []
    if a.call is not None:
        blocks.append({"type": "tool_use", "id": _id("toolu_"), "name": a.call.name, "input": a.call.arguments})
    return {
        "id": _id("msg_"), "type": "message", "role": "assistant", "model": a.model, "content": blocks,
        "stop_reason": _stop_reason(a), "stop_sequence": None,
        "usage": {"input_tokens": a.tokens_in, "output_tokens": a.tokens_out},
    }  # fmt: skip


def _messages_events(a: _Answer) -> Iterator[tuple[str | None, Any]]:
    start = {**_messages_answer(a), "content": [], "stop_reason": None}
    start["usage"] = {"input_tokens": a.tokens_in, "output_tokens": 1}
    yield "message_start", {"type": "message_start", "message": start}
    index = 0
    if a.text:
        yield (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        )
        yield "ping", {"type": "ping"}
        for piece in _pieces(a.text):
            delta = {"type": "text_delta", "text": piece}
            yield "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": 0}
        index = 1
    if a.call is not None and a.arguments is not None:
        block = {"type": "tool_use", "id": _id("toolu_"), "name": a.call.name, "input": {}}
        yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": block}
        for piece in _pieces(a.arguments):
            delta = {"type": "input_json_delta", "partial_json": piece}
            yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    end = {"stop_reason": _stop_reason(a), "stop_sequence": None}
    yield "message_delta", {"type": "message_delta", "delta": end, "usage": {"output_tokens": a.tokens_out}}
    yield "message_stop", {"type": "message_stop"}


# -- Responses ----------------------------------------------------------------------------------------------


def _output_items(a: _Answer) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if a.text:
        part = {"type": "output_text", "text": a.text, "annotations": []}
        items.append(
            {"id": _id("msg_"), "type": "message", "status": "completed", "role": "assistant", "content": [part]}
        )
    if a.call is not None:
        items.append({"id": _id("fc_"), "type": "function_call", "status": "completed", "call_id": _id("call_"),
                      "name": a.call.name, "arguments": a.arguments})  # fmt: skip
    return items


def _response(a: _Answer, body: dict[str, Any], rid: str, output: list[dict[str, Any]], status: str) -> dict[str, Any]:
    usage = None
    if status != "in_progress":
        usage = {"input_tokens": a.tokens_in, "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens": a.tokens_out, "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": a.tokens_in + a.tokens_out}  # fmt: skip
    return {
        "id": rid, "object": "response", "created_at": int(time.time()), "status": status, "model": a.model,
        "output": output, "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
        "instructions": body.get("instructions"), "max_output_tokens": body.get("max_output_tokens"),
        "parallel_tool_calls": body.get("parallel_tool_calls", True), "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [], "usage": usage,
    }  # fmt: skip


def _responses_events(a: _Answer, body: dict[str, Any]) -> Iterator[tuple[str | None, Any]]:
    rid, sequence = _id("resp_"), iter(range(1 << 30))

    def event(kind: str, **fields: Any) -> tuple[str, dict[str, Any]]:
        return kind, {"type": kind, "sequence_number": next(sequence), **fields}

    yield event("response.created", response=_response(a, body, rid, [], "in_progress"))
    yield event("response.in_progress", response=_response(a, body, rid, [], "in_progress"))
    items = _output_items(a)
    for index, item in enumerate(items):
        opened = {**item, "status": "in_progress"}
        if item["type"] == "message":
            opened["content"] = []
            yield event("response.output_item.added", output_index=index, item=opened)
            part = {"type": "output_text", "text": "", "annotations": []}
            where = {"item_id": item["id"], "output_index": index, "content_index": 0}
            yield event("response.content_part.added", **where, part=part)
            for piece in _pieces(a.text):
                yield event("response.output_text.delta", **where, delta=piece)
            yield event("response.output_text.done", **where, text=a.text)
            yield event("response.content_part.done", **where, part=item["content"][0])
        else:
            opened["arguments"] = ""
            yield event("response.output_item.added", output_index=index, item=opened)
            for piece in _pieces(item["arguments"]):
                yield event(
                    "response.function_call_arguments.delta", item_id=item["id"], output_index=index, delta=piece
                )
            yield event("response.function_call_arguments.done", item_id=item["id"], output_index=index,
                        arguments=item["arguments"])  # fmt: skip
        yield event("response.output_item.done", output_index=index, item=item)
    status = "incomplete" if a.capped else "completed"
    yield event(f"response.{status}", response=_response(a, body, rid, items, status))


def _error(path: str, status: int, message: str) -> dict[str, Any]:
    """An error answer as each API shapes it."""
    if path == "/v1/messages":
        kind = {429: "rate_limit_error", 529: "overloaded_error"}.get(
            status, "api_error" if status >= 500 else "invalid_request_error"
        )
        return {"type": "error", "error": {"type": kind, "message": message}}
    code = "rate_limit_exceeded" if status == 429 else "server_error" if status >= 500 else "invalid_request_error"
    return {"error": {"message": message, "type": code, "code": code, "param": None}}
