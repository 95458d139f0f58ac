"""The scripted model server speaks both wire formats, fails and stalls on cue, and says when it runs out."""

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

from podium.testing import Fail, Reply, ScriptedLLM, Stall, ToolCall


def _post(base: str, path: str, body: dict[str, Any], timeout: float = 10) -> tuple[int, dict[str, str], bytes]:
    url = urlsplit(base)
    connection = http.client.HTTPConnection(url.hostname or "", url.port, timeout=timeout)
    connection.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    data = response.read()
    connection.close()
    return response.status, dict(response.getheaders()), data


CHAT = {"model": "m", "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "say hi"}]}


def test_openai_and_anthropic_answers_with_counted_tokens() -> None:
    with ScriptedLLM(
        [Reply("hello there"), Reply("hi"), ToolCall("submit", {"metric": 1}), ToolCall("submit", "{bad")]
    ) as llm:
        status, _, chat = _post(llm.base_url, "/v1/chat/completions", CHAT)
        _, _, msg = _post(
            llm.base_url,
            "/v1/messages",
            {"model": "c", "system": "x y", "messages": [{"role": "user", "content": "a b c"}]},
        )
        _, _, tool = _post(llm.base_url, "/v1/chat/completions", {**CHAT, "tools": [{"type": "function"}]})
        _, _, bad = _post(llm.base_url, "/v1/messages", {"model": "c", "messages": []})
    answer = json.loads(chat)
    assert status == 200 and answer["choices"][0]["message"]["content"] == "hello there"
    assert answer["usage"] == {"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6} and answer["model"] == "m"
    anthropic = json.loads(msg)
    assert anthropic["content"] == [{"type": "text", "text": "hi"}] and anthropic["usage"] == {
        "input_tokens": 5,
        "output_tokens": 1,
    }
    call = json.loads(tool)["choices"][0]
    assert call["finish_reason"] == "tool_calls" and json.loads(
        call["message"]["tool_calls"][0]["function"]["arguments"]
    ) == {"metric": 1}
    block = json.loads(bad)["content"][0]
    # each tool call gets an id of its own (OpenHands pairs results with calls by id)
    assert block.pop("id").startswith("toolu_")
    assert block == {"type": "tool_use", "name": "submit", "input": "{bad"}
    assert [r["path"] for r in llm.requests] == [
        "/v1/chat/completions",
        "/v1/messages",
        "/v1/chat/completions",
        "/v1/messages",
    ]


def test_streams_failures_stalls_and_the_end_of_the_script() -> None:
    script = [
        Reply("a b"),
        Fail(429, "slow down", retry_after=0.5),
        Stall(30),
        lambda request: Reply(request["body"]["model"]),
    ]
    with ScriptedLLM(script) as llm:
        _, headers, stream = _post(
            llm.base_url, "/v1/chat/completions", {**CHAT, "stream": True, "stream_options": {"include_usage": True}}
        )
        status, headers, error = _post(llm.base_url, "/v1/chat/completions", CHAT)
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            _post(llm.base_url, "/v1/chat/completions", CHAT, timeout=1)
        assert time.monotonic() - started < 5
        _, _, echoed = _post(llm.base_url, "/v1/chat/completions", {**CHAT, "model": "echo-me"})
        exhausted = _post(llm.base_url, "/v1/chat/completions", CHAT)
    events = [json.loads(line[6:]) for line in stream.decode().splitlines() if line.startswith("data: {")]
    assert events[0]["choices"][0]["delta"]["content"] == "a b" and events[-1]["usage"]["completion_tokens"] == 2
    assert stream.decode().rstrip().endswith("data: [DONE]")
    assert status == 429 and headers["Retry-After"] == "0.5" and b"slow down" in error
    assert json.loads(echoed)["choices"][0]["message"]["content"] == "echo-me"
    assert exhausted[0] == 500 and b"script exhausted" in exhausted[2]


def test_the_command_line_serves_a_json_script(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"reply": "from a file"}, {"fail": 503}]))
    child = subprocess.Popen(
        [sys.executable, "-m", "podium.testing.scripted_llm", "--script", str(script)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        base = child.stdout.readline().strip()
        _, _, body = _post(base, "/v1/chat/completions", CHAT)
        status, _, _ = _post(base, "/v1/chat/completions", CHAT)
    finally:
        child.kill()
        child.wait()
    assert json.loads(body)["choices"][0]["message"]["content"] == "from a file" and status == 503
