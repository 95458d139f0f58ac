"""The Responses API over a server that speaks only chat completions (llama.cpp and most local servers).

:func:`chat_request` turns a Responses request into a chat completions one: ``instructions`` and
``input`` items into messages (``message`` items by role, ``developer`` as ``system``; a
``function_call`` into the assistant's ``tool_calls``; a ``function_call_output`` into a ``tool``
message; ``reasoning`` items dropped, as a chat server keeps no reasoning), function ``tools`` (a ``namespace``
of them given as its function tools, chat having no groups) and
``tool_choice`` into chat's, ``text.format`` into ``response_format``, ``max_output_tokens`` into the
server's cap field. What has no chat equivalent (``previous_response_id``, built-in tools such as
web search, other item types) is refused with a 400 that names it. :func:`response_of` turns a
``chat.completion`` into a ``response``, and :class:`ResponsesFromChat` turns a chat stream into the
Responses stream events, event by event, as the chunks arrive.
"""

from __future__ import annotations

import time
from typing import Any

from podium.services.llm.accounting import Refused
from podium.services.llm.chat import ChatStream
from podium.services.llm.responses import failed_events, new_id
from podium.services.llm.sse import Event, as_dict, as_index, event_bytes

__all__ = ["ResponsesFromChat", "chat_request", "response_of"]

_ECHOED = ("instructions", "max_output_tokens", "parallel_tool_calls", "temperature", "tool_choice", "tools", "top_p",
           "text", "metadata", "user")  # fmt: skip
_STATELESS = ("previous_response_id", "conversation", "background", "prompt")
_PASSED = ("temperature", "top_p", "user", "seed", "stop", "frequency_penalty", "presence_penalty")


def chat_request(payload: dict[str, Any], cap_field: str) -> dict[str, Any]:
    """The chat completions request for a Responses request (raises :class:`Refused` for what chat cannot say)."""
    for key in _STATELESS:
        if payload.get(key):
            raise Refused(400, f"{key} needs a provider that keeps responses; this one speaks only chat completions")
    messages: list[dict[str, Any]] = []
    if isinstance(payload.get("instructions"), str) and payload["instructions"]:
        messages.append({"role": "system", "content": payload["instructions"]})
    given = payload.get("input")
    items = [{"type": "message", "role": "user", "content": given}] if isinstance(given, str) else given or []
    if not isinstance(items, list):
        raise Refused(400, "input must be a string or a list of items")
    for item in items:
        _item(item, messages)
    chat: dict[str, Any] = {"model": payload.get("model"), "messages": messages}
    chat |= {k: payload[k] for k in _PASSED if payload.get(k) is not None}
    if payload.get("tools"):
        chat["tools"] = [_tool(t) for t in _flat(payload["tools"])]
        if isinstance(payload.get("parallel_tool_calls"), bool):
            chat["parallel_tool_calls"] = payload["parallel_tool_calls"]
    if payload.get("tool_choice") is not None:
        chat["tool_choice"] = _tool_choice(payload["tool_choice"])
    if isinstance(payload.get("max_output_tokens"), int):
        chat[cap_field] = payload["max_output_tokens"]
    text = payload.get("text")
    form = text.get("format") if isinstance(text, dict) else None
    if isinstance(form, dict) and form.get("type") == "json_schema":
        schema = {k: form[k] for k in ("name", "schema", "strict", "description") if k in form}
        chat["response_format"] = {"type": "json_schema", "json_schema": schema}
    elif isinstance(form, dict) and form.get("type") == "json_object":
        chat["response_format"] = {"type": "json_object"}
    if payload.get("stream"):
        chat["stream"] = True
        chat["stream_options"] = {"include_usage": True}
    return chat


def _item(item: Any, messages: list[dict[str, Any]]) -> None:
    if not isinstance(item, dict):
        raise Refused(400, f"an input item must be an object, not {type(item).__name__}")
    kind = item.get("type") or ("message" if "role" in item else None)
    if kind == "message":
        role = {"developer": "system"}.get(str(item.get("role")), str(item.get("role") or "user"))
        messages.append({"role": role, "content": _content(item.get("content"))})
    elif kind == "function_call":
        call = {
            "id": item.get("call_id") or item.get("id"),
            "type": "function",
            "function": {"name": item.get("name"), "arguments": item.get("arguments") or ""},
        }
        last = messages[-1] if messages else None
        if last is not None and last["role"] == "assistant" and not _answered(messages):
            last.setdefault("tool_calls", []).append(call)
        else:
            messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
    elif kind == "function_call_output":
        output = item.get("output")
        text = output if isinstance(output, str) else _joined(output)
        messages.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": text})
    elif kind not in ("reasoning", "item_reference"):
        raise Refused(400, f"input items of type {kind!r} have no chat completions equivalent; this provider speaks "
                      "only chat completions, so give function tools and messages")  # fmt: skip


def _answered(messages: list[dict[str, Any]]) -> bool:
    """Whether the last message already had a tool result after it (then a new call starts a new message)."""
    return bool(messages) and messages[-1]["role"] == "tool"


def _content(content: Any) -> Any:
    """A message's content for chat: text parts joined into one string (what every chat server takes), parts
    kept as chat's own where there is an image."""
    if not isinstance(content, list):
        return content if isinstance(content, str) else ""
    parts: list[dict[str, Any]] = []
    for part in content:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind in ("input_text", "output_text", "text", "summary_text"):
            parts.append({"type": "text", "text": str(part.get("text") or "")})
        elif kind == "refusal":
            parts.append({"type": "text", "text": str(part.get("refusal") or "")})
        elif kind == "input_image" and isinstance(part.get("image_url"), str):
            parts.append({"type": "image_url", "image_url": {"url": part["image_url"]}})
        else:
            raise Refused(400, f"content parts of type {kind!r} have no chat completions equivalent")
    if all(p["type"] == "text" for p in parts):
        return "".join(p["text"] for p in parts)
    return parts


def _joined(parts: Any) -> str:
    if not isinstance(parts, list):
        return "" if parts is None else str(parts)
    return "".join(str(p.get("text") or "") for p in parts if isinstance(p, dict))


def _flat(tools: Any) -> list[Any]:
    """The tools, a ``namespace``'s own tools in its place (the policy has checked them one level deep)."""
    if not isinstance(tools, list):
        raise Refused(400, "tools must be a list of function tools")
    flat: list[Any] = []
    for tool in tools:
        inner = tool.get("tools") if isinstance(tool, dict) and tool.get("type") == "namespace" else None
        flat += inner if isinstance(inner, list) else [tool]
    return flat


def _tool(tool: Any) -> dict[str, Any]:
    if not isinstance(tool, dict) or tool.get("type") != "function":
        kind = tool.get("type") if isinstance(tool, dict) else type(tool).__name__
        raise Refused(400, f"tools of type {kind!r} have no chat completions equivalent; this provider speaks only "
                      "chat completions, so give function tools")  # fmt: skip
    function = {k: tool[k] for k in ("name", "description", "parameters") if k in tool}
    return {"type": "function", "function": function}


def _tool_choice(choice: Any) -> Any:
    if isinstance(choice, dict) and choice.get("type") == "function":
        return {"type": "function", "function": {"name": choice.get("name")}}
    return choice if isinstance(choice, str) else "auto"


def _usage(usage: Any) -> dict[str, Any] | None:
    if not isinstance(usage, dict):
        return None
    tokens_in, tokens_out = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    reasoning = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0
    return {
        "input_tokens": tokens_in,
        "input_tokens_details": {"cached_tokens": int(cached)},
        "output_tokens": tokens_out,
        "output_tokens_details": {"reasoning_tokens": int(reasoning)},
        "total_tokens": tokens_in + tokens_out,
    }


def _response(request: dict[str, Any], head: dict[str, Any], output: list[dict[str, Any]], finish: Any,
              usage: Any, status: str | None = None) -> dict[str, Any]:  # fmt: skip
    incomplete = finish == "length"
    return {
        "id": head.get("id") or new_id("resp"),
        "object": "response",
        "created_at": head.get("created_at") or int(time.time()),
        "status": status or ("incomplete" if incomplete else "completed"),
        "model": head.get("model") or request.get("model"),
        "output": output,
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete and status is None else None,
        "usage": _usage(usage),
        **{k: request.get(k) for k in _ECHOED if k in request},
    }


def _message_item(text: str, status: str = "completed") -> dict[str, Any]:
    part = {"type": "output_text", "text": text, "annotations": []}
    return {"id": new_id("msg"), "type": "message", "status": status, "role": "assistant", "content": [part]}


def _call_item(call_id: Any, name: Any, arguments: str, status: str = "completed") -> dict[str, Any]:
    return {"id": new_id("fc"), "type": "function_call", "status": status, "call_id": call_id or new_id("call"),
            "name": name, "arguments": arguments}  # fmt: skip


def response_of(answer: Any, request: dict[str, Any]) -> dict[str, Any]:
    """The ``response`` a chat completions answer stands for (its first choice)."""
    answer = answer if isinstance(answer, dict) else {}
    choices = answer.get("choices") or [{}]
    choice = as_dict(choices[0] if isinstance(choices, list) and choices else None)
    message = as_dict(choice.get("message"))
    output = (
        [_message_item(message["content"])] if isinstance(message.get("content"), str) and message["content"] else []
    )
    for call in message.get("tool_calls") or []:
        function = as_dict(as_dict(call).get("function"))
        output.append(_call_item(as_dict(call).get("id"), function.get("name"), str(function.get("arguments") or "")))
    head = {"id": None, "model": answer.get("model"), "created_at": answer.get("created")}
    return _response(request, head, output, choice.get("finish_reason"), answer.get("usage"))


class ResponsesFromChat(ChatStream):
    """A chat stream read as it arrives and given back as the Responses stream events it stands for."""

    def __init__(self, request: dict[str, Any]) -> None:
        super().__init__()
        self.request = request
        self.rid = new_id("resp")
        self.sequence = -1
        self.started = False
        self.open: list[tuple[int, dict[str, Any]]] = []  # (output index, item) not yet done
        self.items: list[dict[str, Any]] = []  # every output item, in order
        self.text_item: int | None = None  # the output index of the message item being streamed
        self.call_items: dict[int, int] = {}  # tool call index -> output index
        self.finish: Any = None
        self.ended = False
        self.status: str | None = "in_progress"  # None once completed: then the finish reason decides

    def _event(self, kind: str, **fields: Any) -> bytes:
        self.sequence += 1
        return event_bytes(kind, {"type": kind, "sequence_number": self.sequence, **fields})

    def _so_far(self, status: str | None = None) -> dict[str, Any]:
        head = {"id": self.rid, "model": self.head.get("model"), "created_at": self.head.get("created")}
        return _response(self.request, head, self.items, self.finish, self.head.get("usage"), status)

    def translate(self, event: Event) -> bytes:
        """The Responses events for one chat chunk (``[DONE]`` ends the response)."""
        if self.ended:
            return b""
        if event.data is None and b"[DONE]" in event.raw:
            return self.end()
        if not isinstance(event.data, dict):
            return b""
        self.feed(event)
        if self.error is not None:
            return self._failed(self.error, "server_error")
        out = self._start()
        for choice in event.data.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue  # a response has one answer
            if choice.get("finish_reason") is not None:
                self.finish = choice["finish_reason"]
            delta = as_dict(choice.get("delta"))
            if isinstance(delta.get("content"), str) and delta["content"]:
                out += self._text(delta["content"])
            for fragment in delta.get("tool_calls") or []:
                if isinstance(fragment, dict):
                    out += self._call(fragment)
        return out

    def _start(self) -> bytes:
        if self.started:
            return b""
        self.started = True
        response = self._so_far("in_progress")
        return self._event("response.created", response=response) + self._event(
            "response.in_progress", response=response
        )

    def _text(self, delta: str) -> bytes:
        out = b""
        if self.text_item is None:
            out += self._close()
            self.text_item = len(self.items)
            item = _message_item("", "in_progress")
            item["content"] = []
            self.items.append(item)
            self.open.append((self.text_item, item))
            out += self._event("response.output_item.added", output_index=self.text_item, item=item)
            part = {"type": "output_text", "text": "", "annotations": []}
            out += self._event("response.content_part.added", item_id=item["id"], output_index=self.text_item,
                               content_index=0, part=part)  # fmt: skip
        item_id = self.items[self.text_item]["id"]
        return out + self._event("response.output_text.delta", item_id=item_id, output_index=self.text_item,
                                 content_index=0, delta=delta)  # fmt: skip

    def _call(self, fragment: dict[str, Any]) -> bytes:
        out = b""
        at = as_index(fragment.get("index"), len(self.call_items))
        function = as_dict(fragment.get("function"))
        if at not in self.call_items:
            out += self._close()
            self.text_item = None
            self.call_items[at] = len(self.items)
            item = _call_item(fragment.get("id"), function.get("name"), "", "in_progress")
            self.items.append(item)
            self.open.append((self.call_items[at], item))
            out += self._event("response.output_item.added", output_index=self.call_items[at], item=item)
        index = self.call_items[at]
        arguments = function.get("arguments")
        if isinstance(arguments, str) and arguments:
            out += self._event("response.function_call_arguments.delta", item_id=self.items[index]["id"],
                               output_index=index, delta=arguments)  # fmt: skip
        return out

    def _close(self, emit: bool = True) -> bytes:
        """Finish the items still open (their ``.done`` events, with their whole text or arguments)."""
        out = b""
        if not emit:  # their text and arguments only, events unsent and sequence numbers untouched
            sequence = self.sequence
            self._close()
            self.sequence = sequence
            return b""
        for index, item in self.open:
            if item["type"] == "message":
                text = self.text((0, "content"))
                part = {"type": "output_text", "text": text, "annotations": []}
                out += self._event("response.output_text.done", item_id=item["id"], output_index=index,
                                   content_index=0, text=text)  # fmt: skip
                out += self._event("response.content_part.done", item_id=item["id"], output_index=index,
                                   content_index=0, part=part)  # fmt: skip
                item.update(content=[part], status="completed")
            else:
                at = next(k for k, v in self.call_items.items() if v == index)
                item.update(arguments=self.text((0, "call", at)), status="completed")
                out += self._event("response.function_call_arguments.done", item_id=item["id"], output_index=index,
                                   arguments=item["arguments"])  # fmt: skip
            out += self._event("response.output_item.done", output_index=index, item=item)
        self.open = []
        return out

    def end(self) -> bytes:
        """The chat stream ended: the items are done and the response completed (or incomplete at its cap)."""
        if self.ended:
            return b""
        self.ended = True
        self.status = None
        out = self._start() + self._close()
        response = self._so_far()
        kind = "response.incomplete" if response["status"] == "incomplete" else "response.completed"
        return out + self._event(kind, response=response)

    def answer(self) -> dict[str, Any] | None:
        if not self.started:
            return None
        self._close(emit=False)
        return self._so_far(self.status)

    def cut(self, message: str, budget: bool = True) -> bytes:
        return self._failed(message, "insufficient_quota" if budget else "server_error")

    def _failed(self, message: str, code: str) -> bytes:
        out = self._start()
        self._close(emit=False)
        self.ended, self.status = True, "failed"
        self.sequence += 1
        return out + failed_events(self._so_far("failed"), message, code, self.sequence)
