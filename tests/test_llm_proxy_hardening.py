"""The proxy lets only completions out and cannot be exhausted (issue 35 §2): provider-side tools and state refused,
headers allowlisted, bodies and connections bounded, every call capped, the meter conservative, a provider that
cannot serve the agent refused up front, and a failed handler written down."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from podium.agents.llm import PROVIDERS, LLMConfig
from podium.errors import UsageError
from podium.services import LLMProxy, model_failure
from podium.services.llm.chat import ChatStream
from podium.testing import Reply, ScriptedLLM
from test_llm_proxy import KEY, _post, _scripted, short_dir  # noqa: F401  (fixture)

REFUSED = [
    # (path, the request's extra fields, what the refusal names)
    ("/v1/messages", {"tools": [{"type": "web_search_20250305", "name": "web_search"}]}, "web_search_20250305"),
    ("/v1/messages", {"tools": [{"type": "web_fetch_20250910", "name": "web_fetch"}]}, "web_fetch_20250910"),
    ("/v1/messages", {"mcp_servers": [{"type": "url", "url": "https://example.com/sse", "name": "x"}]}, "mcp_servers"),
    ("/v1/messages", {"messages": [{"role": "user", "content": [
        {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}]}]}, "messages[0].content[0]"),
    ("/v1/messages", {"messages": [{"role": "user", "content": [
        {"type": "document", "source": {"type": "file", "file_id": "file_1"}}]}]}, "document"),
    ("/v1/responses", {"tools": [{"type": "web_search"}]}, "'web_search'"),
    ("/v1/responses", {"tools": [{"type": "mcp", "server_label": "x", "server_url": "https://example.com"}]}, "'mcp'"),
    ("/v1/responses", {"previous_response_id": "resp_1"}, "previous_response_id"),
    ("/v1/responses", {"conversation": "conv_1"}, "conversation"),
    ("/v1/responses", {"background": True}, "background"),
    ("/v1/responses", {"prompt": {"id": "pmpt_1"}}, "prompt"),
    ("/v1/responses", {"input": [{"type": "item_reference", "id": "msg_1"}]}, "item_reference"),
    ("/v1/responses", {"input": [{"role": "user", "content": [
        {"type": "input_image", "image_url": "https://example.com/a.png"}]}]}, "input[0].content[0]"),
    ("/v1/chat/completions", {"web_search_options": {}}, "web_search_options"),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "http://169.254.169.254/"}}]}]}, "messages[0].content[0]"),
    ("/v1/chat/completions", {"tools": [{"type": "file_search"}]}, "'file_search'"),
]  # fmt: skip


@pytest.mark.parametrize(("path", "extra", "named"), REFUSED, ids=[f"{p.rsplit('/', 1)[1]}-{n}" for p, _, n in REFUSED])
def test_provider_side_tools_urls_and_state_never_reach_the_provider(short_dir, path, extra, named):  # noqa: F811
    provider = "anthropic" if path == "/v1/messages" else "openai"
    base = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}], "input": "hi"}
    with ScriptedLLM([Reply("never")]) as model:
        with LLMProxy(_scripted(model, provider), short_dir / "p.sock", short_dir / "p.jsonl", KEY):
            status, body = _post(short_dir / "p.sock", path, {**base, **extra})
        assert model.requests == []
    assert status == 400, body
    message = json.loads(body)["error"]["message"]
    assert named in message and "\n" not in message


def test_store_is_forced_off_and_only_known_headers_and_local_betas_go_upstream(short_dir):  # noqa: F811
    with ScriptedLLM([Reply("one"), Reply("two")]) as model:
        with LLMProxy(_scripted(model, "openai"), short_dir / "p.sock", short_dir / "p.jsonl", KEY):
            headers = {"OpenAI-Organization": "org-agent", "X-Forwarded-Host": "evil.example", "Accept-Encoding": "gzip",
                       "Cookie": "a=b", "User-Agent": "agent/1"}  # fmt: skip
            status, _ = _post(
                short_dir / "p.sock", "/v1/responses", {"model": "m", "input": "hi", "store": True}, headers
            )
        assert status == 200
        sent = model.requests[0]
        assert sent["body"]["store"] is False
        names = {k.lower() for k in sent["headers"]}
        assert not names & {"openai-organization", "x-forwarded-host", "cookie"}
        assert sent["headers"].get("Accept-Encoding") in (None, "identity")  # an answer the proxy can read and meter
        assert sent["headers"].get("User-Agent") == "agent/1"
    with ScriptedLLM([Reply("one")]) as model:
        with LLMProxy(_scripted(model, "anthropic"), short_dir / "a.sock", short_dir / "a.jsonl", KEY):
            beta = "web-fetch-2025-09-10,prompt-caching-2024-07-31,mcp-client-2025-04-04,made-up-1"
            ask = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
            _post(short_dir / "a.sock", "/v1/messages", ask, {"anthropic-beta": beta})
        assert model.requests[0]["headers"].get("anthropic-beta") == "prompt-caching-2024-07-31"
    logged = [json.loads(line) for line in (short_dir / "a.jsonl").read_text().splitlines()]
    assert "anthropic-beta:web-fetch-2025-09-10" in logged[0]["dropped_headers"]


def _rss() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _raw(sock: Path, data: bytes) -> bytes:
    """What the proxy answers to ``data``, sent as a client that keeps sending while the answer comes (a refused
    body is not read to its end: the proxy closes the connection after its answer)."""
    client = socket.socket(socket.AF_UNIX)
    client.settimeout(30)
    client.connect(str(sock))

    def send() -> None:
        with contextlib.suppress(OSError):
            client.sendall(data)

    sender = threading.Thread(target=send)
    sender.start()
    answer = b""
    with contextlib.suppress(OSError):
        while piece := client.recv(65536):
            answer += piece
    client.close()
    sender.join()
    return answer


def test_large_and_container_heavy_bodies_are_refused_before_they_cost_memory(short_dir):  # noqa: F811
    with (
        ScriptedLLM([Reply("fine")]) as model,
        LLMProxy(_scripted(model), short_dir / "p.sock", short_dir / "p.jsonl", KEY),
    ):
        big = b'{"model":"nope","x":[' + b"{}," * ((28 << 20) // 3) + b"{}]}"  # the 28 MB body
        request = f"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: {len(big)}\r\n\r\n".encode() + big
        dense = b'{"model":"nope","x":[' + b"{}," * 2_000_000 + b"{}]}"  # 6 MB: under the size cap
        before = _rss()  # the test's own bodies are made: what grows now is the proxy's
        answers: list[bytes] = []
        threads = [
            threading.Thread(target=lambda: answers.append(_raw(short_dir / "p.sock", request))) for _ in range(4)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(answers) == 4 and all(b" 413 " in a.split(b"\r\n", 1)[0] for a in answers), answers[:1]
        status, body = _post_bytes(short_dir / "p.sock", dense)
        assert status == 400 and b"JSON objects and arrays, over the" in body
        assert _rss() - before < 64 << 20  # the parser never built millions of objects
        assert _post(short_dir / "p.sock", "/v1/chat/completions", {"model": "m", "messages": []})[0] == 200


def _post_bytes(sock: Path, body: bytes) -> tuple[int, bytes]:
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: {len(body)}\r\nContent-Type: application/json\r\n\r\n"
    )
    answer = _raw(sock, head.encode() + body)
    status = int(answer.split(b" ", 2)[1])
    return status, answer.split(b"\r\n\r\n", 1)[1]


def test_a_deep_body_is_a_refusal_not_a_crash(short_dir):  # noqa: F811
    with ScriptedLLM([]) as model, LLMProxy(_scripted(model), short_dir / "p.sock", short_dir / "p.jsonl", KEY):
        status, body = _post_bytes(short_dir / "p.sock", b"[" * 100_000 + b"]" * 100_000)
    assert status == 400 and b"nests" in body


def test_stalled_connections_cannot_starve_the_run(short_dir):  # noqa: F811
    """Hundreds of connections that send one byte: at most max_connections hold a thread, the rest are answered 503
    at once, each stalled one is cut off after the read timeout, and then a normal call goes through."""
    with ScriptedLLM([Reply("fine")]) as model:
        proxy = LLMProxy(_scripted(model), short_dir / "p.sock", short_dir / "p.jsonl", KEY)
        proxy.read_timeout = 1.0
        with proxy:
            threads_before = threading.active_count()
            stalled = []
            for _ in range(300):
                client = socket.socket(socket.AF_UNIX)
                client.connect(str(short_dir / "p.sock"))
                with contextlib.suppress(OSError):  # already answered 503 and closed: a race under load
                    client.sendall(b"P")
                stalled.append(client)
            time.sleep(0.3)
            assert threading.active_count() - threads_before <= proxy.max_connections
            busy = sum(1 for c in stalled[-50:] if _answered_busy(c))
            assert busy == 50
            time.sleep(proxy.read_timeout + 1.0)  # the stalled ones are cut off: their slots are free again
            status, body = _post(short_dir / "p.sock", "/v1/chat/completions", {"model": "m", "messages": []})
            assert status == 200, body
            for client in stalled:
                client.close()
        assert "refused a connection" in (short_dir / "service_errors.log").read_text()


def _answered_busy(client: socket.socket) -> bool:
    client.settimeout(5)
    try:
        return b" 503 " in client.recv(200)
    except OSError:
        return False


def test_every_call_gets_a_cap_and_an_unreported_stream_is_charged_the_larger(short_dir):  # noqa: F811
    with ScriptedLLM([Reply("short answer")]) as model:
        config = _scripted(model, max_tokens_per_call=77)
        with LLMProxy(config, short_dir / "p.sock", short_dir / "p.jsonl", KEY):  # no budget at all
            _post(short_dir / "p.sock", "/v1/chat/completions", {"model": "m", "messages": []})
        assert model.requests[0]["body"]["max_tokens"] == 77
    from podium.services.llm.accounting import Ledger, Reservation, Usage

    ledger = Ledger(LLMConfig(PROVIDERS["openai"], max_tokens=100_000))
    held = Reservation(tokens=50, size=10, counted=True, output_estimate=400)  # metered past what it reserved
    ledger.totals.reserved, ledger.totals.in_flight = 50, 1
    entry: dict[str, Any] = {}
    ledger.settle(held, Usage(), None, 200, entry)
    assert entry["unreported_tokens"] == 410 and ledger.totals.used == 410


def test_the_meter_counts_dense_non_ascii_text_conservatively():
    stream = ChatStream()
    stream.add(0, "数据" * 500)  # 1,000 characters of 3 bytes: 4 bytes a token would say 750 tokens
    assert stream.streamed_tokens >= 1000
    ascii_only = ChatStream()
    ascii_only.add(0, "word " * 100)
    assert ascii_only.streamed_tokens == 125


def test_an_agent_whose_wire_format_the_provider_does_not_serve_is_refused_up_front(tmp_path):
    llm = LLMConfig(PROVIDERS["openai"], apis=("messages",))
    with pytest.raises(UsageError, match="speaks Anthropic Messages, which provider openai does not serve"):
        llm.check_served("claude-code")
    LLMConfig(PROVIDERS["openrouter"], apis=("responses",)).check_served("codex")  # translated over chat: served
    env = {**os.environ, "OPENAI_API_KEY": "sk-test-unused-xxxxxxxxxxxxxxxx"}
    done = subprocess.run([sys.executable, "-m", "podium", "run", "--agent", "claude-code", "--provider", "openai",
                           "--runs-dir", str(tmp_path / "runs")], capture_output=True, text=True, env=env, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 2 and "--provider anthropic" in done.stderr, done.stderr
    assert not (tmp_path / "runs").exists()


def test_a_run_whose_every_call_was_refused_for_its_setup_is_a_harness_failure(short_dir):  # noqa: F811
    with ScriptedLLM([]) as model:
        config = _scripted(model, "anthropic")
        with LLMProxy(config, short_dir / "p.sock", short_dir / "p.jsonl", KEY) as proxy:
            assert _post(short_dir / "p.sock", "/v1/chat/completions", {"model": "m"})[0] == 403
            summary = proxy.summary()
    reason = model_failure(summary)
    assert reason is not None and "refused by podium's proxy for how the run is set up" in reason


def test_a_failed_handler_is_written_down(short_dir, monkeypatch):  # noqa: F811
    with ScriptedLLM([]) as model:
        proxy = LLMProxy(_scripted(model), short_dir / "p.sock", short_dir / "p.jsonl", KEY)

        def broken(*args: Any) -> None:
            raise RuntimeError("a bug podium must not lose")

        monkeypatch.setattr(proxy, "_handle", broken)
        with proxy:
            with pytest.raises(Exception):  # noqa: B017  (the connection closes without an answer)
                _post(short_dir / "p.sock", "/v1/chat/completions", {"model": "m"})
            time.sleep(0.2)
    log = (short_dir / "service_errors.log").read_text()
    assert "a request's handler failed" in log and "a bug podium must not lose" in log
