"""What the proxy's allowlist missed at first (issue 35 §2): URLs nested in a tool's output or in a document given
as content, a tool_choice that turns on a server tool, OpenRouter's web plugins and ``:online`` models; and JSON from
the provider nested too deep to parse is passed on, not a handler that dies with the call unlogged."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from typing import Any

import pytest

from podium.services import LLMProxy
from podium.services.llm.messages import MessagesStream
from podium.services.llm.sse import EventSplitter
from podium.testing import Reply, ScriptedLLM
from test_llm_proxy import KEY, _post, _scripted, short_dir  # noqa: F401  (fixture)

_URL = "https://example.com/a.png"
REFUSED = [
    # (path, the request's extra fields, what the refusal names)
    ("/v1/responses", {"input": [{"type": "function_call_output", "call_id": "c1", "output": [
        {"type": "input_image", "image_url": _URL}]}]}, "input[0].output[0]"),
    ("/v1/messages", {"messages": [{"role": "user", "content": [{"type": "document", "source": {
        "type": "content", "content": [{"type": "image", "source": {"type": "url", "url": _URL}}]}}]}]},
     "messages[0].content[0].source.content[0]"),
    ("/v1/messages", {"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
        "content": [{"type": "document", "source": {"type": "content", "content": [
            {"type": "document", "source": {"type": "url", "url": _URL}}]}}]}]}]}, "source.content[0]"),
    ("/v1/responses", {"tool_choice": {"type": "web_search_preview"}}, "'web_search_preview'"),
    ("/v1/responses", {"tool_choice": {"type": "mcp", "server_label": "x"}}, "tool_choice"),
    ("/v1/chat/completions", {"plugins": [{"id": "web"}]}, "plugins"),
    ("/v1/chat/completions", {"plugins": [{"id": "file-parser"}]}, "plugins"),
    ("/v1/chat/completions", {"model": "openai/gpt-4o:online"}, ":online"),
    ("/v1/responses", {"tools": [{"type": "namespace", "name": "ns", "description": "d", "tools": [
        {"type": "function", "name": "f"}, {"type": "web_search"}]}]}, "tools[0].tools[1] is of type 'web_search'"),
    ("/v1/responses", {"tools": [{"type": "namespace", "name": "ns", "description": "d", "tools": [
        {"type": "namespace", "name": "inner", "tools": []}]}]}, "tools[0].tools[0] is of type 'namespace'"),
    ("/v1/responses", {"tools": [{"type": "namespace", "name": "ns", "tools": {"type": "mcp"}}]},
     "tools[0].tools must be a list"),
    ("/v1/chat/completions", {"tools": [{"type": "namespace", "name": "ns", "tools": []}]}, "'namespace'"),
]  # fmt: skip


@pytest.mark.parametrize(("path", "extra", "named"), REFUSED, ids=[f"{p.rsplit('/', 1)[1]}-{n}" for p, _, n in REFUSED])
def test_nested_urls_server_tool_choices_and_web_plugins_never_reach_the_provider(short_dir, path, extra, named):  # noqa: F811
    provider = "anthropic" if path == "/v1/messages" else "openrouter" if "chat" in path else "openai"
    base = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}], "input": "hi"}
    with ScriptedLLM([Reply("never")]) as model:
        with LLMProxy(_scripted(model, provider), short_dir / "p.sock", short_dir / "p.jsonl", KEY):
            status, body = _post(short_dir / "p.sock", path, {**base, **extra})
        assert model.requests == []
    assert status == 400, body
    message = json.loads(body)["error"]["message"]
    assert named in message and "\n" not in message


def test_the_agents_own_tool_choices_and_inline_nested_content_still_go_through(short_dir):  # noqa: F811
    """An Anthropic tool_choice of the agent's own tool, inline content nested in a tool result and a document; a
    Responses function tool chosen; and a Responses namespace of the agent's own tools (Codex groups its
    sub-agent tools so: refusing it left Codex with no model at all)."""
    inline = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}
    ask = {"model": "m", "max_tokens": 10, "tool_choice": {"type": "tool", "name": "bash"},
           "tools": [{"name": "bash", "input_schema": {"type": "object"}}],
           "messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": [inline]},
                                                     {"type": "document", "source": {"type": "content",
                                                                                     "content": [inline]}}]}]}  # fmt: skip
    with ScriptedLLM([Reply("fine")] * 3) as model:
        with LLMProxy(_scripted(model, "anthropic"), short_dir / "a.sock", short_dir / "a.jsonl", KEY):
            assert _post(short_dir / "a.sock", "/v1/messages", ask)[0] == 200
        with LLMProxy(_scripted(model, "openai"), short_dir / "o.sock", short_dir / "o.jsonl", KEY):
            chosen = {"model": "m", "input": "hi", "tool_choice": {"type": "function", "name": "f"},
                      "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}]}  # fmt: skip
            assert _post(short_dir / "o.sock", "/v1/responses", chosen)[0] == 200
            grouped = {"model": "m", "input": "hi", "tools": [  # Codex's sub-agent tools: its own, grouped
                {"type": "namespace", "name": "multi_agent_v1", "description": "sub-agents", "tools": [
                    {"type": "function", "name": "spawn_agent", "parameters": {"type": "object"}},
                    {"type": "custom", "name": "note"}]}]}  # fmt: skip
            assert _post(short_dir / "o.sock", "/v1/responses", grouped)[0] == 200
        assert len(model.requests) == 3 and model.requests[2]["body"]["tools"] == grouped["tools"]


def test_provider_json_nested_too_deep_is_passed_on_not_a_dead_handler():
    deep = "[" * 50_000 + "]" * 50_000
    events = list(EventSplitter().feed(f"event: x\ndata: {deep}\n\n".encode()))
    assert len(events) == 1 and events[0].data is None  # not parsed, passed on as it came
    stream = MessagesStream()
    stream.take({"content_block": {"type": "tool_use", "id": "t", "name": "f", "input": {}}}, "content_block_start")
    stream.take({"index": 0, "delta": {"type": "input_json_delta", "partial_json": deep}}, "content_block_delta")
    answer = stream.answer()
    assert answer is not None and answer["content"][0]["input"] == deep  # kept as text for the transcript


def test_one_runs_stalled_connections_do_not_starve_another_run_in_the_same_process(short_dir):  # noqa: F811
    """Two runs' proxies in one podium process: the first run's connections all stall; the second run's calls are
    answered at once, and the first one's extra connections are refused 503 at once rather than queued."""
    with ScriptedLLM([Reply("one"), Reply("two")]) as model:
        first = LLMProxy(_scripted(model), short_dir / "1.sock", short_dir / "1.jsonl", KEY)
        second = LLMProxy(_scripted(model), short_dir / "2.sock", short_dir / "2.jsonl", KEY)
        with first, second:
            stalled = []
            for _ in range(first.max_connections + 20):
                client = socket.socket(socket.AF_UNIX)
                client.connect(str(short_dir / "1.sock"))
                with contextlib.suppress(OSError):  # already answered 503 and closed: a race under load
                    client.sendall(b"P")
                stalled.append(client)
            started = time.monotonic()
            results: list[Any] = []
            callers = [
                threading.Thread(
                    target=lambda: results.append(
                        _post(short_dir / "2.sock", "/v1/chat/completions", {"model": "m", "messages": []})[0]
                    )
                )
                for _ in range(2)
            ]
            for caller in callers:
                caller.start()
            for caller in callers:
                caller.join(10)
            assert results == [200, 200] and time.monotonic() - started < first.read_timeout / 2
            stalled[-1].settimeout(5)
            assert b" 503 " in stalled[-1].recv(200)
            for client in stalled:
                client.close()


def test_a_namespace_of_function_tools_reaches_a_chat_only_provider_as_its_function_tools():
    from podium.services.llm.accounting import Refused
    from podium.services.llm.translate import chat_request

    shell = {"type": "function", "name": "shell", "parameters": {"type": "object"}}
    spawn = {"type": "function", "name": "spawn_agent", "description": "a sub-agent"}
    grouped = {"type": "namespace", "name": "multi_agent_v1", "description": "sub-agents", "tools": [spawn]}
    chat = chat_request({"model": "m", "input": "hi", "tools": [shell, grouped]}, "max_tokens")
    assert chat["tools"] == [
        {"type": "function", "function": {"name": "shell", "parameters": {"type": "object"}}},
        {"type": "function", "function": {"name": "spawn_agent", "description": "a sub-agent"}},
    ]
    custom = {**grouped, "tools": [{"type": "custom", "name": "note"}]}
    with pytest.raises(Refused, match="tools of type 'custom' have no chat completions equivalent"):
        chat_request({"model": "m", "input": "hi", "tools": [custom]}, "max_tokens")
