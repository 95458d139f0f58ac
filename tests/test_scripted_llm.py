"""The scripted model server speaks chat completions, Anthropic messages and the Responses API, plain and streamed,
with tool calls; it fails and stalls on cue, plays a whole crash-then-fix session, and says when it runs out.

The event sequences are checked on the wire against the APIs' documented order, and (when installed) by the
official ``anthropic`` and ``openai`` SDKs, whose stream helpers assemble them into their final messages.
"""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from podium.testing import (
    ByContent,
    Fail,
    Reply,
    ScriptedLLM,
    Shell,
    Stall,
    ToolCall,
    crash_then_fix,
    last_tool_output,
)


def _post(base: str, path: str, body: dict[str, Any], timeout: float = 10) -> tuple[int, dict[str, str], bytes]:
    url = urlsplit(base)
    connection = http.client.HTTPConnection(url.hostname or "", url.port, timeout=timeout)
    connection.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    data = response.read()
    connection.close()
    return response.status, dict(response.getheaders()), data


def _events(stream: bytes) -> list[tuple[str | None, Any]]:
    """(event name, data) of each server-sent event."""
    out = []
    for block in stream.decode().split("\n\n"):
        if not block.strip():
            continue
        lines = block.splitlines()
        name = next((line[7:] for line in lines if line.startswith("event: ")), None)
        data = "\n".join(line[6:] for line in lines if line.startswith("data: "))
        out.append((name, data if data == "[DONE]" else json.loads(data)))
    return out


CHAT = {"model": "m", "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "say hi"}]}
MESSAGES = {"model": "c", "max_tokens": 100, "system": "x y", "messages": [{"role": "user", "content": "a b c"}]}
RESPONSES = {"model": "r", "instructions": "be brief", "input": [{"role": "user", "content": [{"type": "input_text", "text": "say hi"}]}]}  # fmt: skip


def test_the_three_formats_answer_with_counted_tokens() -> None:
    with ScriptedLLM(
        [
            Reply("hello there"),
            Reply("hi"),
            ToolCall("submit", {"metric": 1}),
            ToolCall("submit", "{bad"),
            Reply("from responses"),
            ToolCall("shell", {"command": ["ls"]}),
        ]
    ) as llm:
        status, _, chat = _post(llm.base_url, "/v1/chat/completions", CHAT)
        _, _, msg = _post(llm.base_url, "/v1/messages?beta=true", MESSAGES)  # Claude Code's query string
        _, _, tool = _post(llm.base_url, "/v1/chat/completions", {**CHAT, "tools": [{"type": "function"}]})
        _, _, bad = _post(llm.base_url, "/v1/messages", {"model": "c", "messages": []})
        _, _, text = _post(llm.base_url, "/v1/responses", RESPONSES)
        _, _, call = _post(llm.base_url, "/v1/responses", {**RESPONSES, "input": "list the files"})
    answer = json.loads(chat)
    assert status == 200 and answer["choices"][0]["message"]["content"] == "hello there"
    assert answer["usage"] == {"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6} and answer["model"] == "m"
    anthropic = json.loads(msg)
    assert anthropic["content"] == [{"type": "text", "text": "hi"}] and anthropic["stop_reason"] == "end_turn"
    assert anthropic["usage"] == {"input_tokens": 5, "output_tokens": 1}
    choice = json.loads(tool)["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert json.loads(choice["message"]["tool_calls"][0]["function"]["arguments"]) == {"metric": 1}
    block = json.loads(bad)["content"][0]
    # each tool call gets an id of its own (OpenHands pairs results with calls by id)
    assert block.pop("id").startswith("toolu_")
    assert block == {"type": "tool_use", "name": "submit", "input": "{bad"}
    response = json.loads(text)
    assert response["object"] == "response" and response["status"] == "completed"
    assert response["output"][0]["content"][0] == {"type": "output_text", "text": "from responses", "annotations": []}
    assert response["usage"]["input_tokens"] == 4 and response["usage"]["output_tokens"] == 2
    item = json.loads(call)["output"][0]
    assert item["type"] == "function_call" and item["name"] == "shell" and item["call_id"].startswith("call_")
    assert json.loads(item["arguments"]) == {"command": ["ls"]}
    assert [r["path"] for r in llm.requests][:2] == ["/v1/chat/completions", "/v1/messages"]


def test_streams_follow_each_api_event_order() -> None:
    """The event names and their order, as the three APIs document them, for a text and for a tool call."""
    script = [Reply("one two"), ToolCall("Bash", {"command": "ls"})] * 3
    with ScriptedLLM(script) as llm:
        streams = []
        for path, body in (("/v1/chat/completions", CHAT), ("/v1/messages", MESSAGES), ("/v1/responses", RESPONSES)):
            for _ in range(2):
                options = {"stream_options": {"include_usage": True}} if "chat" in path else {}
                streams.append(_events(_post(llm.base_url, path, {**body, "stream": True, **options})[2]))
    chat_text, chat_call, msg_text, msg_call, resp_text, resp_call = streams
    deltas = [data["choices"][0]["delta"] for _, data in chat_text[:-2]]
    assert deltas == [{"role": "assistant", "content": ""}, {"content": "one "}, {"content": "two"}, {}]
    assert chat_text[-2][1]["usage"]["completion_tokens"] == 2 and chat_text[-1] == (None, "[DONE]")
    fragments = [d["choices"][0]["delta"].get("tool_calls") for _, d in chat_call[1:-3]]
    assert fragments[0][0]["id"].startswith("call_") and fragments[0][0]["function"] == {
        "name": "Bash",
        "arguments": "",
    }
    assert "".join(f[0]["function"]["arguments"] for f in fragments) == '{"command": "ls"}'
    assert chat_call[-3][1]["choices"][0]["finish_reason"] == "tool_calls"
    assert [name for name, _ in msg_text] == [
        "message_start", "content_block_start", "ping", "content_block_delta", "content_block_delta",
        "content_block_stop", "message_delta", "message_stop",
    ]  # fmt: skip
    assert all(name == data["type"] for name, data in msg_text)
    assert msg_text[0][1]["message"]["usage"] == {"input_tokens": 5, "output_tokens": 1}
    assert msg_text[-2][1]["usage"] == {"output_tokens": 2} and msg_text[-2][1]["delta"]["stop_reason"] == "end_turn"
    assert msg_call[1][1]["content_block"]["type"] == "tool_use" and msg_call[1][1]["content_block"]["input"] == {}
    partial = "".join(d["delta"]["partial_json"] for n, d in msg_call if n == "content_block_delta")
    assert json.loads(partial) == {"command": "ls"} and msg_call[-2][1]["delta"]["stop_reason"] == "tool_use"
    assert [name for name, _ in resp_text] == [
        "response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
        "response.output_text.delta", "response.output_text.delta", "response.output_text.done",
        "response.content_part.done", "response.output_item.done", "response.completed",
    ]  # fmt: skip
    assert [data["sequence_number"] for _, data in resp_text] == list(range(len(resp_text)))
    completed = resp_text[-1][1]["response"]
    assert completed["status"] == "completed" and completed["usage"]["output_tokens"] == 2
    assert [name for name, _ in resp_call][2:] == [
        "response.output_item.added", "response.function_call_arguments.delta",
        "response.function_call_arguments.delta", "response.function_call_arguments.done",
        "response.output_item.done", "response.completed",
    ]  # fmt: skip
    assert json.loads(resp_call[-3][1]["arguments"]) == {"command": "ls"}


def test_official_sdks_assemble_the_streams() -> None:
    """Claude Code streams Anthropic messages, Codex the Responses API: the SDKs' own stream helpers must read
    what the server sends into the messages it stands for."""
    anthropic = pytest.importorskip("anthropic", reason="the anthropic SDK is not installed")
    openai = pytest.importorskip("openai", reason="the openai SDK is not installed")
    script = [Reply("hello there friend"), ToolCall("Bash", {"command": "ls -la"}), Reply("chat words"),
              Reply("resp text here"), ToolCall("shell", {"command": ["bash", "-lc", "ls"]})]  # fmt: skip
    ask = [{"role": "user", "content": "hi"}]
    with ScriptedLLM(script) as llm:
        claude = anthropic.Anthropic(base_url=llm.base_url, api_key="unused", max_retries=0)
        with claude.messages.stream(model="c", max_tokens=100, messages=ask) as stream:
            text = "".join(stream.text_stream)
            message = stream.get_final_message()
        tools = [{"name": "Bash", "input_schema": {"type": "object"}}]
        with claude.messages.stream(model="c", max_tokens=100, messages=ask, tools=tools) as stream:
            used = stream.get_final_message()
        gpt = openai.OpenAI(base_url=llm.base_url + "/v1", api_key="unused", max_retries=0)
        chunks = list(gpt.chat.completions.create(model="m", messages=ask, stream=True))
        with gpt.responses.stream(model="r", input="hi") as stream:
            final = stream.get_final_response()
        shell = [{"type": "function", "name": "shell", "parameters": {"type": "object"}}]
        with gpt.responses.stream(model="r", input="hi", tools=shell) as stream:
            called = stream.get_final_response()
    assert text == "hello there friend" and message.stop_reason == "end_turn" and message.usage.output_tokens == 3
    assert used.content[0].type == "tool_use" and used.content[0].input == {"command": "ls -la"}
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "chat words"
    assert final.output_text == "resp text here" and final.usage is not None and final.usage.output_tokens == 3
    assert called.output[0].type == "function_call" and json.loads(called.output[0].arguments)["command"][0] == "bash"


def test_answers_are_held_to_their_cap_unless_the_server_ignores_caps() -> None:
    long = Reply("w " * 50)
    with ScriptedLLM([long, long, long]) as llm:
        chat = json.loads(_post(llm.base_url, "/v1/chat/completions", {**CHAT, "max_completion_tokens": 5})[2])
        msg = json.loads(_post(llm.base_url, "/v1/messages", {**MESSAGES, "max_tokens": 3})[2])
        resp = json.loads(_post(llm.base_url, "/v1/responses", {**RESPONSES, "max_output_tokens": 4})[2])
    assert chat["choices"][0]["finish_reason"] == "length" and chat["usage"]["completion_tokens"] == 5
    assert msg["stop_reason"] == "max_tokens" and msg["usage"]["output_tokens"] == 3
    assert resp["status"] == "incomplete" and resp["incomplete_details"] == {"reason": "max_output_tokens"}
    with ScriptedLLM([long], caps=False) as llm:
        ignored = json.loads(_post(llm.base_url, "/v1/chat/completions", {**CHAT, "max_tokens": 5})[2])
    assert ignored["usage"]["completion_tokens"] == 50 and ignored["choices"][0]["finish_reason"] == "stop"


def test_streams_failures_stalls_and_the_end_of_the_script() -> None:
    script = [
        Reply("a b"),
        Fail(429, "slow down", retry_after=0.5),
        Stall(30),
        lambda request: Reply(request["body"]["model"]),
        ByContent({"say (hi|ho)": "matched"}, "default"),
    ]
    with ScriptedLLM(script) as llm:
        _, headers, stream = _post(
            llm.base_url, "/v1/chat/completions", {**CHAT, "stream": True, "stream_options": {"include_usage": True}}
        )
        status, headers, error = _post(llm.base_url, "/v1/messages", MESSAGES)
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            _post(llm.base_url, "/v1/chat/completions", CHAT, timeout=1)
        assert time.monotonic() - started < 5
        _, _, echoed = _post(llm.base_url, "/v1/chat/completions", {**CHAT, "model": "echo-me"})
        _, _, matched = _post(llm.base_url, "/v1/responses", RESPONSES)
        exhausted = _post(llm.base_url, "/v1/chat/completions", CHAT)
    events = _events(stream)
    assert "".join(e["choices"][0]["delta"].get("content", "") for _, e in events[:-2]) == "a b"
    assert events[-2][1]["usage"]["completion_tokens"] == 2 and events[-1][1] == "[DONE]"
    assert status == 429 and headers["Retry-After"] == "0.5"
    assert json.loads(error) == {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
    assert json.loads(echoed)["choices"][0]["message"]["content"] == "echo-me"
    assert json.loads(matched)["output"][0]["content"][0]["text"] == "matched"  # ByContent reads Responses input too
    assert exhausted[0] == 500 and json.loads(exhausted[2])["error"]["message"] == "script exhausted"


def _run_tool(name: str, arguments: dict[str, Any]) -> str:
    """What an agent's shell tool would do with the call: run it and give back its output."""
    command = arguments.get("command") or arguments.get("cmd")
    argv = command if isinstance(command, list) else ["bash", "-lc", str(command)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    return done.stdout + done.stderr


def test_crash_then_fix_plays_a_whole_session_through_each_clients_shell_tool(tmp_path: Path) -> None:
    """A small agent loop runs the scripted session for real: Claude Code's Bash over Anthropic messages, Codex's
    shell over the Responses API. The fix comes only once the crash's traceback was sent back."""
    for client in ("claude", "codex"):
        home = tmp_path / client
        (home / "data").mkdir(parents=True)
        (home / "submission").mkdir()
        (home / "data" / "sample_submission.csv").write_text("id,y\n1,0\n")
        steps = crash_then_fix(str(home / "data"), str(home / "submission"), str(home / "code"))
        with ScriptedLLM(steps) as llm:
            if client == "claude":
                messages: list[dict[str, Any]] = [{"role": "user", "content": "solve the task"}]
                tools = [{"name": "Bash", "input_schema": {"type": "object"}}]
                while True:
                    answer = json.loads(
                        _post(llm.base_url, "/v1/messages", {**MESSAGES, "messages": messages, "tools": tools})[2]
                    )
                    assert "error" not in answer, answer
                    messages.append({"role": "assistant", "content": answer["content"]})
                    if answer["stop_reason"] != "tool_use":
                        break
                    use = answer["content"][-1]
                    result = {"type": "tool_result", "tool_use_id": use["id"], "content": _run_tool(use["name"], use["input"])}  # fmt: skip
                    messages.append({"role": "user", "content": [result]})
                final = answer["content"][0]["text"]
            else:
                items: list[dict[str, Any]] = [{"role": "user", "content": "solve the task"}]
                tools = [{"type": "function", "name": "shell", "parameters": {"type": "object"}}]
                while True:
                    answer = json.loads(
                        _post(llm.base_url, "/v1/responses", {"model": "r", "input": items, "tools": tools})[2]
                    )
                    assert "error" not in answer or answer["error"] is None, answer
                    items += answer["output"]
                    calls = [i for i in answer["output"] if i["type"] == "function_call"]
                    if not calls:
                        break
                    output = _run_tool(calls[0]["name"], json.loads(calls[0]["arguments"]))
                    items.append({"type": "function_call_output", "call_id": calls[0]["call_id"], "output": output})
                final = answer["output"][0]["content"][0]["text"]
        assert len(llm.requests) == 3 and "fixed one wrote" in final
        assert "NameError" in (last_tool_output(llm.requests[1]["body"]) or "")
        assert (home / "submission" / "submission.csv").read_text() == "id,y\n1,0\n"
    with ScriptedLLM([Shell("ls")]) as llm:
        refused = _post(llm.base_url, "/v1/chat/completions", CHAT)  # no shell tool offered: it says so
    assert refused[0] == 500 and b"wants a shell tool" in refused[2]


def test_the_command_line_serves_a_json_script(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    steps = [
        {"reply": "from a file"},
        {"shell": "echo hi"},
        {"expect": "hi", "then": {"reply": "saw it"}},
        {"fail": 503},
    ]
    script.write_text(json.dumps(steps))
    child = subprocess.Popen(
        [sys.executable, "-m", "podium.testing.scripted_llm", "--script", str(script)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        base = child.stdout.readline().strip()
        _, _, body = _post(base, "/v1/chat/completions", CHAT)
        tools = [{"type": "function", "function": {"name": "bash"}}]
        _, _, shell = _post(base, "/v1/chat/completions", {**CHAT, "tools": tools})
        told = {**CHAT, "messages": [*CHAT["messages"], {"role": "tool", "tool_call_id": "x", "content": "hi\n"}]}
        _, _, saw = _post(base, "/v1/chat/completions", told)
        status, _, _ = _post(base, "/v1/chat/completions", CHAT)
    finally:
        child.kill()
        child.wait()
    assert json.loads(body)["choices"][0]["message"]["content"] == "from a file" and status == 503
    call = json.loads(shell)["choices"][0]["message"]["tool_calls"][0]["function"]
    assert call["name"] == "bash" and json.loads(call["arguments"]) == {"command": "echo hi"}
    assert json.loads(saw)["choices"][0]["message"]["content"] == "saw it"
