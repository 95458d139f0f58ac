"""The LLM proxy against a provider stand-in on loopback that speaks the OpenAI and Anthropic wire formats.

The stand-in is a real HTTP server (``http.server``) that checks the key it is given and answers with
JSON bodies or server-sent-event streams shaped as the two providers' APIs document them. The proxy
is reached through its Unix socket, as an agent reaches it; the end-to-end tests run an agent in
the real sandboxes through ``podium run``.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from podium.agents import PROVIDERS, LLMConfig, Provider, parse_llm_config
from podium.agents.prices import Price, price_of, price_table
from podium.errors import PodiumError, UsageError
from podium.services import LLMProxy
from podium.testing import Fail, Reply, ScriptedLLM, ToolCall

KEY = "sk-test-the-real-key-only-podium-holds"


class Provider_(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    calls: list[dict[str, Any]]

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.calls.append({"path": self.path, "headers": dict(self.headers), "body": body})  # type: ignore[attr-defined]
        openai = self.path.endswith("/chat/completions")
        key = self.headers.get("Authorization", "").removeprefix("Bearer ") if openai else self.headers.get("x-api-key")
        if key != KEY:
            return self._json(401, {"error": {"message": "bad key"}})
        time.sleep(self.server.delay)  # type: ignore[attr-defined]
        # an answer of 7 tokens, or of all its cap allows when the test says so; never over the cap
        cap = body.get("max_completion_tokens") or body.get("max_tokens")
        answer = cap if cap and self.server.spend_all else min(7, cap or 7)  # type: ignore[attr-defined]
        if not body.get("stream"):
            cached = self.server.cached  # type: ignore[attr-defined]
            if openai:
                usage = {"prompt_tokens": 11, "completion_tokens": answer, "total_tokens": 11 + answer}
                if cached:
                    usage["prompt_tokens_details"] = {"cached_tokens": cached}
                return self._json(
                    200,
                    {
                        "model": body.get("model"),
                        "choices": [{"message": {"role": "assistant", "content": "hi"}}],
                        "usage": usage,
                    },
                )
            usage = {"input_tokens": 9, "output_tokens": 4}
            if cached:
                usage |= {"cache_read_input_tokens": cached, "cache_creation_input_tokens": 2}
            return self._json(200, {"content": [{"type": "text", "text": "hi"}], "usage": usage})
        if openai:
            events = [{"model": body.get("model"), "choices": [{"delta": {"content": w}}]} for w in ("a", "b", "c")]
            if (body.get("stream_options") or {}).get("include_usage"):
                events.append({"choices": [], "usage": {"prompt_tokens": 13, "completion_tokens": 3}})
            lines = [f"data: {json.dumps(e)}\n\n" for e in events] + ["data: [DONE]\n\n"]
        else:
            events = [
                (
                    "message_start",
                    {"type": "message_start", "message": {"usage": {"input_tokens": 20, "output_tokens": 1}}},
                ),
                ("content_block_delta", {"type": "content_block_delta", "delta": {"text": "hello"}}),
                ("message_delta", {"type": "message_delta", "usage": {"output_tokens": 15}}),
                ("message_stop", {"type": "message_stop"}),
            ]
            lines = [f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        for line in lines:
            self.wfile.write(line.encode())
            self.wfile.flush()
        self.close_connection = True

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def upstream() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Provider_)
    server.calls = []  # type: ignore[attr-defined]
    server.delay = 0.0  # type: ignore[attr-defined]
    server.spend_all = False  # type: ignore[attr-defined]
    server.cached = 0  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _config(upstream: ThreadingHTTPServer, provider: str = "openai", **kw: Any) -> LLMConfig:
    base = PROVIDERS[provider]
    url = f"http://127.0.0.1:{upstream.server_address[1]}"
    return LLMConfig(Provider(base.name, url, "PODIUM_TEST_LLM_KEY", base.auth, base.paths), **kw)


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: Path) -> None:
        super().__init__("localhost", timeout=30)
        self.unix_path = str(path)

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.unix_path)


def _post(sock: Path, path: str, payload: dict[str, Any], headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    connection = _UnixConnection(sock)
    body = json.dumps(payload).encode()
    connection.request("POST", path, body=body, headers={"Content-Type": "application/json", **(headers or {})})
    response = connection.getresponse()
    data = response.read()
    connection.close()
    return response.status, data


@pytest.fixture
def short_dir() -> Iterator[Path]:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="podium-llm-") as folder:  # Unix socket paths must be short
        yield Path(folder)


def test_forwards_with_the_real_key_and_counts_tokens(upstream: ThreadingHTTPServer, short_dir: Path) -> None:
    log = short_dir / "calls.jsonl"
    with LLMProxy(_config(upstream), short_dir / "llm.sock", log, api_key=KEY) as proxy:
        status, body = _post(
            short_dir / "llm.sock",
            "/v1/chat/completions",
            {"model": "gpt-x", "messages": [{"role": "user", "content": "hi"}]},
            {"Authorization": "Bearer agent-made-this-up", "Host": "evil.example"},
        )
        summary = proxy.summary()
    assert status == 200 and json.loads(body)["choices"][0]["message"]["content"] == "hi"
    (call,) = upstream.calls  # type: ignore[attr-defined]
    assert call["headers"]["Authorization"] == f"Bearer {KEY}"
    assert call["headers"]["Host"].startswith("127.0.0.1")
    assert summary["calls"] == 1 and (summary["input_tokens"], summary["output_tokens"]) == (11, 7)
    (entry,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert entry["model"] == "gpt-x" and entry["status"] == 200 and entry["input_tokens"] == 11


def test_streams_pass_through_and_their_usage_is_counted(upstream: ThreadingHTTPServer, short_dir: Path) -> None:
    with LLMProxy(_config(upstream), short_dir / "a.sock", short_dir / "a.jsonl", api_key=KEY) as proxy:
        status, body = _post(short_dir / "a.sock", "/v1/chat/completions", {"model": "m", "stream": True})
        openai = proxy.summary()
    assert status == 200 and body.count(b"data: ") == 5 and body.endswith(b"data: [DONE]\n\n")
    assert upstream.calls[0]["body"]["stream_options"] == {"include_usage": True}  # type: ignore[attr-defined]
    assert (openai["input_tokens"], openai["output_tokens"]) == (13, 3)
    config = _config(upstream, "anthropic")
    with LLMProxy(config, short_dir / "b.sock", short_dir / "b.jsonl", api_key=KEY) as proxy:
        status, body = _post(short_dir / "b.sock", "/v1/messages", {"model": "claude-x", "stream": True})
        status_json, _ = _post(short_dir / "b.sock", "/v1/messages", {"model": "claude-x"})
        anthropic = proxy.summary()
    assert status == 200 and status_json == 200 and b"event: message_stop" in body
    assert upstream.calls[1]["headers"]["x-api-key"] == KEY  # type: ignore[attr-defined]
    assert (anthropic["input_tokens"], anthropic["output_tokens"]) == (20 + 9, 15 + 4)


def test_refuses_other_paths_models_and_spent_budgets(upstream: ThreadingHTTPServer, short_dir: Path) -> None:
    config = _config(upstream, models=("gpt-ok",), max_tokens=80)
    with LLMProxy(config, short_dir / "c.sock", short_dir / "c.jsonl", api_key=KEY) as proxy:
        other_path = _post(short_dir / "c.sock", "/v1/files", {"model": "gpt-ok"})
        other_model = _post(short_dir / "c.sock", "/v1/chat/completions", {"model": "gpt-expensive"})
        chunked = _post(
            short_dir / "c.sock", "/v1/chat/completions", {"model": "gpt-ok"}, {"Transfer-Encoding": "chunked"}
        )
        # each call reserves its 36 bytes and the 7 tokens it asks for at most (43), and uses 11 + 7
        ask = {"model": "gpt-ok", "max_tokens": 7}
        spent = [_post(short_dir / "c.sock", "/v1/chat/completions", ask)[0] for _ in range(4)]
        summary = proxy.summary()
    assert other_path[0] == 403 and b"/v1/files is not forwarded" in other_path[1]
    assert chunked[0] == 411
    assert other_model[0] == 403 and b"not allowed" in other_model[1]
    # used 0, 18, 36 of 80: 43 fit each time; then 26 are left, less than 43: refused before it leaves
    assert spent == [200, 200, 200, 429]
    assert summary["input_tokens"] + summary["output_tokens"] == 54
    assert len(upstream.calls) == 3 and summary["refused"] == 4  # type: ignore[attr-defined]
    assert len((short_dir / "c.jsonl").read_text().splitlines()) == 7
    with LLMProxy(config, short_dir / "e.sock", short_dir / "e.jsonl", api_key=KEY):
        big = _post(short_dir / "e.sock", "/v1/chat/completions", {"model": "gpt-ok", "max_tokens": 100})
    assert big[0] == 429 and b"ask for a shorter answer" in big[1]


def test_parallel_calls_cannot_overshoot_the_token_budget(upstream: ThreadingHTTPServer, short_dir: Path) -> None:
    """Six calls at once, each asking for (and using) 100 output tokens, on a budget of 400: before the proxy
    reserved tokens, all six passed and used 6 x 111 tokens. Now calls wait for those in flight, and the ones that
    no longer fit are refused."""
    upstream.delay = 0.3  # type: ignore[attr-defined]  # so that the six are in flight together
    upstream.spend_all = True  # type: ignore[attr-defined]
    config = _config(upstream, max_tokens=400)
    payload = {"model": "m", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}
    size = len(json.dumps(payload).encode())
    with LLMProxy(config, short_dir / "p.sock", short_dir / "p.jsonl", api_key=KEY) as proxy:
        with ThreadPoolExecutor(6) as pool:
            statuses = sorted(
                pool.map(lambda _: _post(short_dir / "p.sock", "/v1/chat/completions", payload)[0], range(6))
            )
        summary = proxy.summary()
    used = summary["input_tokens"] + summary["output_tokens"]
    forwarded = statuses.count(200)
    assert used == forwarded * 111 and used <= 400, (statuses, summary)
    # each call is reserved size + 100 tokens; calls were forwarded while that fitted next to what was used
    assert forwarded == _fits(400, size + 100, 111) and statuses.count(429) == 6 - forwarded
    assert len(upstream.calls) == forwarded  # type: ignore[attr-defined]
    # a call without a cap gets the cap that is left added to its request, so it cannot overshoot either
    upstream.calls.clear()  # type: ignore[attr-defined]
    with LLMProxy(_config(upstream, max_tokens=200), short_dir / "q.sock", short_dir / "q.jsonl", api_key=KEY) as proxy:
        status, _ = _post(short_dir / "q.sock", "/v1/chat/completions", {"model": "m"})
        summary = proxy.summary()
    (call,) = upstream.calls  # type: ignore[attr-defined]
    # (as max_tokens: the field every OpenAI-compatible server reads; OpenAI's own API gets max_completion_tokens)
    assert status == 200 and call["body"]["max_tokens"] == 200 - len(b'{"model": "m"}')
    assert summary["input_tokens"] + summary["output_tokens"] > 200 - len(b'{"model": "m"}')


def test_max_answer_tokens_caps_every_answer(upstream: ThreadingHTTPServer, short_dir: Path) -> None:
    """A small local model that rambles until its context is full held one AIDE call for minutes (seen with
    SmolLM2): max_answer_tokens adds a cap to the calls that name none and lowers larger ones."""
    upstream.spend_all = True  # type: ignore[attr-defined]  # each answer as long as its cap allows
    config = _config(upstream, max_answer_tokens=50)
    asked = [{"model": "m"}, {"model": "m", "max_tokens": 500}, {"model": "m", "max_tokens": 20}]
    with LLMProxy(config, short_dir / "c.sock", short_dir / "c.jsonl", api_key=KEY) as proxy:
        statuses = [_post(short_dir / "c.sock", "/v1/chat/completions", body)[0] for body in asked]
        summary = proxy.summary()
    sent = [call["body"] for call in upstream.calls]  # type: ignore[attr-defined]
    assert statuses == [200, 200, 200] and [b.get("max_tokens") for b in sent] == [50, 50, 20]
    assert "max_completion_tokens" not in sent[0]  # a local server's field, not OpenAI's newer one
    assert summary["output_tokens"] == 50 + 50 + 20 and summary["max_answer_tokens"] == 50
    logged = [json.loads(line) for line in (short_dir / "c.jsonl").read_text().splitlines()]
    assert [entry.get("cap_added") for entry in logged] == [50, 50, None]


def test_the_cap_field_follows_the_address() -> None:
    from podium.services.llm.accounting import cap_field

    local = replace(PROVIDERS["openai"], base_url="http://127.0.0.1:8080")
    assert cap_field(PROVIDERS["openai"], "/v1/chat/completions") == "max_completion_tokens"
    assert cap_field(local, "/v1/chat/completions") == "max_tokens"
    assert cap_field(PROVIDERS["anthropic"], "/v1/messages") == "max_tokens"
    assert cap_field(PROVIDERS["openai"], "/v1/responses") == "max_output_tokens"
    assert cap_field(PROVIDERS["openai"], "/v1/embeddings") is None


def _fits(budget: int, reserved: int, used: int) -> int:
    """How many calls are forwarded one after another when each reserves ``reserved`` and then uses ``used``."""
    count, spent = 0, 0
    while spent + reserved <= budget:
        count, spent = count + 1, spent + used
    return count


def test_a_refusal_waits_for_the_request_body_so_the_client_never_meets_a_broken_pipe(
    upstream: ThreadingHTTPServer, short_dir: Path
) -> None:
    """The race behind a flaky BrokenPipeError: the proxy refused (403) after reading the headers and closed the
    socket while the client was still sending its body. A client that sends its body late must still read the
    refusal, also when the body's length is unknown (chunked)."""
    with LLMProxy(_config(upstream), short_dir / "r.sock", short_dir / "r.jsonl", api_key=KEY):
        for path, extra in (
            ("/v1/files", b"Content-Length: 17\r\n"),
            ("/v1/chat/completions", b"Transfer-Encoding: chunked\r\n"),
        ):
            with socket.socket(socket.AF_UNIX) as client:
                client.connect(str(short_dir / "r.sock"))
                client.sendall(b"POST " + path.encode() + b" HTTP/1.1\r\nHost: x\r\n" + extra + b"\r\n")
                time.sleep(0.3)  # the old proxy had answered and closed by now
                body = (
                    b'{"model": "gpt"}\n'
                    if b"Length" in extra
                    else b"11\r\n" + b'{"model": "gpt"}\n' + b"\r\n0\r\n\r\n"
                )
                client.sendall(body)  # BrokenPipeError on the old proxy
                client.shutdown(socket.SHUT_WR)
                answer = b""
                while chunk := client.recv(65536):
                    answer += chunk
            assert answer.split(b" ")[1] in (b"403", b"411"), answer


def test_an_unreachable_provider_is_a_502_not_a_hang(short_dir: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    base = PROVIDERS["openai"]
    config = LLMConfig(Provider("openai", f"http://127.0.0.1:{port}", "X", base.auth, base.paths))
    with LLMProxy(config, short_dir / "d.sock", short_dir / "d.jsonl", api_key=KEY):
        status, body = _post(short_dir / "d.sock", "/v1/chat/completions", {"model": "m"})
    assert status == 502 and b"could not be reached" in body


def test_agent_yaml_llm_section_is_checked() -> None:
    config = parse_llm_config({"provider": "anthropic", "models": ["claude-x"], "max_tokens": 1e6}, "agent.yaml")
    assert config.provider.base_url == "https://api.anthropic.com" and config.max_tokens == 1_000_000
    assert config.max_tokens_per_call == 16384
    assert parse_llm_config({"provider": "openai", "max_tokens_per_call": 4096}, "a").max_tokens_per_call == 4096
    for bad, message in (
        ({"provider": "acme"}, "not one of"),
        ({"provider": "openai", "base_url": "ftp://x"}, "http"),
        ({"provider": "openai", "max_tokens": -1}, "positive"),
        ({"provider": "openai", "max_tokens_per_call": 0}, "positive"),
        ({"provider": "openai", "colour": "red"}, "unknown key"),
    ):
        with pytest.raises(PodiumError, match=message):
            parse_llm_config(bad, "agent.yaml")
    with pytest.raises(PodiumError, match="set OPENAI_API_KEY"):
        parse_llm_config({"provider": "openai"}, "agent.yaml").api_key({})


# --- end to end: an agent in the sandbox reaches its model only through the proxy --------------------

AGENT = r"""
import json, os, shutil, socket, sys, urllib.request
report = {"env_key": os.environ.get("OPENAI_API_KEY"), "secret": os.environ.get("PODIUM_TEST_LLM_KEY")}
request = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"] + "/chat/completions",
    data=json.dumps({"model": "gpt-ok", "messages": [{"role": "user", "content": "hi"}]}).encode(),
    headers={"Content-Type": "application/json", "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]},
)
report["answer"] = json.load(urllib.request.urlopen(request, timeout=30))["choices"][0]["message"]["content"]
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3).close()
    report["direct"] = "connected"
except OSError as error:
    report["direct"] = type(error).__name__
json.dump(report, open("/home/logs/llm.json", "w"))
shutil.copyfile("/home/data/sample_submission.csv", "/home/submission/submission.csv")
"""


@pytest.mark.parametrize("sandbox", ["bwrap", "docker"])
def test_an_agent_in_the_sandbox_reaches_its_model_only_through_the_proxy(
    sandbox: str, upstream: ThreadingHTTPServer, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    from podium import registry
    from podium.data.prepare import prepare_competition
    from podium.fixtures import make_raw

    if sandbox == "docker":
        request.getfixturevalue("docker_sandbox")
    elif subprocess.run(["sh", "-c", "command -v bwrap"], capture_output=True).returncode != 0:
        pytest.skip("bubblewrap is not installed")
    comp = registry.get("spaceship-titanic")
    prepare_competition(comp, tmp_path / "data", source=make_raw(comp, tmp_path / "raw"))
    port = upstream.server_address[1]
    agent = tmp_path / "llm-agent"
    agent.mkdir()
    (agent / "main.py").write_text(AGENT)
    (agent / "agent.yaml").write_text(
        "name: llm-agent\n"
        f"command: [python3, /home/agent/main.py, '{port}']\n"
        f"llm: {{provider: openai, base_url: 'http://127.0.0.1:{port}', api_key_env: PODIUM_TEST_LLM_KEY, "
        "models: [gpt-ok], max_tokens: 1000}\n"
    )
    args = ["run", "--agent", str(agent), "--competitions", comp.id, "--time-limit", "2m", "--sandbox", sandbox,
            "--data-dir", str(tmp_path / "data"), "--runs-dir", str(tmp_path / "runs")]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "PODIUM_TEST_LLM_KEY"}
    missing = subprocess.run([sys.executable, "-m", "podium", *args], capture_output=True, text=True, env=env)
    assert missing.returncode == 2 and "set PODIUM_TEST_LLM_KEY" in missing.stderr
    env["PODIUM_TEST_LLM_KEY"] = KEY
    result = subprocess.run([sys.executable, "-m", "podium", *args], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    run_dir = tmp_path / "runs" / "default" / comp.id / "0"
    report = json.loads((run_dir / "logs" / "llm.json").read_text())
    assert report["answer"] == "hi" and report["direct"] != "connected"
    assert report["secret"] is None and KEY not in json.dumps(report)
    record = json.loads((run_dir / "record.json").read_text())
    assert record["llm"]["calls"] == 1 and record["llm"]["input_tokens"] == 11 and record["llm"]["output_tokens"] == 7
    assert upstream.calls[0]["headers"]["Authorization"] == f"Bearer {KEY}"  # type: ignore[attr-defined]
    assert json.loads((run_dir / "llm_calls.jsonl").read_text())["status"] == 200
    assert record["grade"]["valid_submission"]


def test_aliases_are_rewritten_and_other_names_refused(upstream: ThreadingHTTPServer, short_dir: Path) -> None:
    config = parse_llm_config({"provider": "openai", "models": {"aide-code": "gpt-4o-2024-08-06"}}, "a")
    config = replace(config, provider=_config(upstream).provider)
    assert config.models == ("aide-code",) and config.provider_model("aide-code") == "gpt-4o-2024-08-06"
    with LLMProxy(config, short_dir / "al.sock", short_dir / "al.jsonl", api_key=KEY) as proxy:
        ok = _post(short_dir / "al.sock", "/v1/chat/completions", {"model": "aide-code"})
        direct = _post(short_dir / "al.sock", "/v1/chat/completions", {"model": "gpt-4o-2024-08-06"})
        streamed = _post(short_dir / "al.sock", "/v1/chat/completions", {"model": "aide-code", "stream": True})
        summary = proxy.summary()
    assert ok[0] == 200 and direct[0] == 403
    assert json.loads(ok[1])["model"] == "aide-code"  # the answer comes back under the name the agent asked by
    events = [json.loads(line[5:]) for line in streamed[1].splitlines() if line.startswith(b"data: {")]
    assert len(events) == 4 and [e.get("model") for e in events[:3]] == ["aide-code"] * 3, streamed[1]
    assert [c["body"]["model"] for c in upstream.calls] == ["gpt-4o-2024-08-06"] * 2  # type: ignore[attr-defined]
    logged = json.loads((short_dir / "al.jsonl").read_text().splitlines()[0])
    assert logged["model"] == "aide-code" and logged["provider_model"] == "gpt-4o-2024-08-06"
    assert summary["models"] == {"aide-code": "gpt-4o-2024-08-06"}


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_each_call_is_priced_cached_input_apart(provider: str, upstream: ThreadingHTTPServer, short_dir: Path) -> None:
    upstream.cached = 5  # type: ignore[attr-defined]
    model = "gpt-4o-2024-08-06" if provider == "openai" else "claude-3-5-sonnet-20240620"
    price = price_of(provider, model)
    assert price is not None and price.date == price_table()["date"]
    path = "/v1/chat/completions" if provider == "openai" else "/v1/messages"
    with LLMProxy(_config(upstream, provider), short_dir / "pr.sock", short_dir / "pr.jsonl", api_key=KEY) as proxy:
        _post(short_dir / "pr.sock", path, {"model": model, "max_tokens": 7})
        summary = proxy.summary()
    if provider == "openai":  # 11 in (5 of them cached), 7 out
        assert summary["input_tokens"] == 11 and summary["cached_input_tokens"] == 5
        expected = (6 * price.input + 5 * price.cached_input + 7 * price.output) / 1e6
    else:  # 9 fresh + 5 read + 2 written in, 4 out; writes are priced as input
        assert summary["input_tokens"] == 16 and summary["cached_input_tokens"] == 5
        expected = (11 * price.input + 5 * price.cached_input + 4 * price.output) / 1e6
    assert summary["cost_usd"] == pytest.approx(expected) and summary["price_date"] == price.date


def test_prices_match_dated_names_by_prefix_and_a_user_file_overrides(tmp_path: Path) -> None:
    assert price_of("openai", "gpt-4o-mini-2024-07-18") == price_of("openai", "gpt-4o-mini")
    assert price_of("openai", "gpt-4o-mini") != price_of("openai", "gpt-4o")
    assert price_of("openai", "my-finetune") is None
    user = tmp_path / "prices.yaml"
    user.write_text("openai:\n  my-finetune: [1.0, 0.5, 2.0]\n")
    assert price_of("openai", "my-finetune", str(user)) == Price(1.0, 0.5, 2.0, price_table()["date"])
    assert price_of("openai", "gpt-4o", str(user)) == price_of("openai", "gpt-4o")


def test_the_cost_budget_holds_for_parallel_calls(upstream: ThreadingHTTPServer, short_dir: Path) -> None:
    upstream.delay = 0.3  # type: ignore[attr-defined]
    upstream.spend_all = True  # type: ignore[attr-defined]
    price = price_of("openai", "gpt-4o")
    assert price is not None
    payload = {"model": "gpt-4o", "max_tokens": 1000}
    size = len(json.dumps(payload).encode())
    per_call = price.cost(size, 1000)
    config = replace(_config(upstream), models=("gpt-4o",), max_cost_usd=per_call * 3.5)
    with LLMProxy(config, short_dir / "cb.sock", short_dir / "cb.jsonl", api_key=KEY) as proxy:
        with ThreadPoolExecutor(6) as pool:
            statuses = sorted(
                pool.map(lambda _: _post(short_dir / "cb.sock", "/v1/chat/completions", payload), range(6))
            )
        summary = proxy.summary()
    codes = [s for s, _ in statuses]
    assert codes.count(200) == 3 and codes.count(429) == 3
    assert summary["cost_usd"] <= config.max_cost_usd  # type: ignore[operator]
    assert any(b"cost budget" in body for code, body in statuses if code == 429)


def test_overrides_from_the_command_line() -> None:
    aide = parse_llm_config({"provider": "openai", "models": {"aide-code": "gpt-4o"}}, "a")
    moved = aide.override(model="gpt-4.1", base_url="http://127.0.0.1:9/", max_cost_usd=2.5)
    assert moved.aliases == {"aide-code": "gpt-4.1"} and moved.models == ("aide-code",)
    assert moved.provider.base_url == "http://127.0.0.1:9" and moved.max_cost_usd == 2.5
    plain = LLMConfig.from_options("anthropic", "claude-3-5-sonnet-20240620", None, None)
    assert plain.provider.name == "anthropic" and plain.models == ("claude-3-5-sonnet-20240620",)
    for bad, message in (
        ({"provider": "acme"}, "--provider acme"),
        ({"base_url": "ftp://x"}, "must be an http"),
        ({"max_cost_usd": 0}, "positive amount"),
        ({"model": " "}, "names no model"),
    ):
        with pytest.raises(UsageError, match=message):
            aide.override(**bad)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="no price for openai/my-finetune"):
        replace(plain, provider=PROVIDERS["openai"], models=("my-finetune",), max_cost_usd=1.0).check_prices()
    with pytest.raises(UsageError, match="--max-answer-tokens 0"):
        aide.override(max_answer_tokens=0)
    assert aide.override(max_answer_tokens=512).max_answer_tokens == 512
    # the budgets also come from agent.yaml's llm: section
    section = {"provider": "openai", "models": ["gpt-4o"], "max_cost_usd": 2.5, "max_answer_tokens": 1024}
    parsed = parse_llm_config(section, "agent.yaml")
    assert (parsed.max_cost_usd, parsed.max_answer_tokens) == (2.5, 1024)
    with pytest.raises(UsageError, match="max_answer_tokens must be a positive number"):
        parse_llm_config({**section, "max_answer_tokens": -1}, "agent.yaml")
    with pytest.raises(UsageError, match="need --model"):
        LLMConfig.from_options("openai", None, None, 1.0)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_transcript_keeps_every_call_whole_with_its_secrets_redacted(
    upstream: ThreadingHTTPServer, short_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Interface I1: one line a call (refused ones too), the request as the agent sent it, the answer (a stream's
    assembled into the non-streaming shape), keys redacted wherever they appear, the line bounded."""
    from podium.services.llm.transcript import MAX_LINE_BYTES, REDACTED

    monkeypatch.setenv("PODIUM_OTHER_SERVICE_TOKEN", "tok-podium-holds-this-0123")
    leaks = (
        f"my key is {KEY}; header Authorization: Bearer abcdefghijkl0123456789; x-api-key=sk-ant-api03-{'q' * 30} and "
        "the other token tok-podium-holds-this-0123"
    )
    transcript = short_dir / "t.jsonl"
    with LLMProxy(_config(upstream, models=("gpt-ok",)), short_dir / "t.sock", short_dir / "t.log", KEY, transcript):
        ask = {"model": "gpt-ok", "messages": [{"role": "user", "content": leaks}]}
        assert _post(short_dir / "t.sock", "/v1/chat/completions", ask)[0] == 200
        assert _post(short_dir / "t.sock", "/v1/chat/completions", {**ask, "stream": True})[0] == 200
        assert _post(short_dir / "t.sock", "/v1/chat/completions", {"model": "gpt-other"})[0] == 403
        huge = {"model": "gpt-ok", "messages": [{"role": "user", "content": "x" * (3 << 20)}]}
        assert _post(short_dir / "t.sock", "/v1/chat/completions", huge)[0] == 200
        named = _post(short_dir / "t.sock", "/v1/chat/completions", {"model": "g" * (2 << 20)})
        code = {"model": "gpt-ok", "messages": [{"role": "user", "content": "api_key = os.environ['KEY_NAME']"}]}
        assert _post(short_dir / "t.sock", "/v1/chat/completions", code)[0] == 200
    assert named[0] == 403 and len(named[1]) < 1000  # a huge model name is not echoed back whole
    lines = _lines(transcript)
    text = transcript.read_text()
    assert [line["call"] for line in lines] == [1, 2, 3, 4, 5, 6]
    assert (
        KEY not in text
        and "abcdefghijkl0123456789" not in text
        and "qqqqqqqqqq" not in text
        and "tok-podium" not in text
    )
    plain, stream, refused, cut, long_name, code_line = lines
    assert long_name["status"] == 403 and len(long_name["model"]) <= 200
    assert code_line["request"]["messages"][0]["content"] == "api_key = os.environ['KEY_NAME']"  # code, not a key
    assert set(plain) == {"call", "time", "api", "path", "model", "status", "stream", "request", "response", "error",
                          "truncated"}  # fmt: skip
    assert plain["api"] == "chat" and plain["status"] == 200 and plain["stream"] is False and plain["error"] is None
    said = plain["request"]["messages"][0]["content"]
    assert said.count(REDACTED) == 4 and said.startswith("my key is ") and "Authorization: Bearer " in said
    assert plain["response"]["choices"][0]["message"]["content"] == "hi"
    # the stream's chunks assembled into one chat.completion, as the API would have answered without streaming
    assert stream["stream"] is True and stream["response"]["object"] == "chat.completion"
    assert stream["response"]["choices"][0]["message"]["content"] == "abc"
    assert stream["response"]["usage"] == {"prompt_tokens": 13, "completion_tokens": 3}
    assert (
        refused["status"] == 403 and "not allowed" in refused["error"] and refused["request"] == {"model": "gpt-other"}
    )
    assert cut["truncated"] is True and len(json.dumps(cut)) < MAX_LINE_BYTES
    assert "podium cut" in cut["request"]["messages"][0]["content"]
    assert all(len(line) < MAX_LINE_BYTES for line in text.splitlines())
    logged = _lines(short_dir / "t.log")
    assert [entry["call"] for entry in logged] == [1, 2, 3, 4, 5, 6]  # the log's lines join the transcript's by number


# --- streams metered mid-way, the Responses API (native and translated), failed providers -------------------------


@pytest.fixture
def relay() -> Iterator[Any]:
    """A TCP address for a proxy socket, relayed by the sandbox's own ``llm_bridge.py`` (what SDKs reach in a run)."""
    import importlib.util

    from podium.services import sandbox_file

    spec = importlib.util.spec_from_file_location("llm_bridge", sandbox_file("llm_bridge.py"))
    assert spec is not None and spec.loader is not None
    bridge = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bridge)
    started: list[tuple[socket.socket, threading.Thread]] = []

    def start(sock: Path) -> str:
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        accepting = threading.Thread(target=bridge._accept, args=(listener, str(sock)), daemon=True)
        accepting.start()
        started.append((listener, accepting))
        return f"http://127.0.0.1:{listener.getsockname()[1]}"

    yield start
    for listener, accepting in started:
        # shut down first: a close alone leaves the thread in accept(), and once the descriptor's number is
        # reused by the next test's listener, it takes that test's connections to this test's (gone) socket
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)
        accepting.join(5)
        listener.close()


def _scripted(model: Any, provider: str = "openai", **kw: Any) -> LLMConfig:
    base = PROVIDERS[provider]
    return LLMConfig(Provider(base.name, model.base_url, "X", base.auth, base.paths), **kw)


def _sse(data: bytes) -> list[tuple[str | None, Any]]:
    out = []
    for block in data.decode().split("\n\n"):
        lines = block.splitlines()
        if not lines:
            continue
        name = next((line[7:] for line in lines if line.startswith("event: ")), None)
        raw = "\n".join(line[6:] for line in lines if line.startswith("data: "))
        out.append((name, raw if raw in ("", "[DONE]") else json.loads(raw)))
    return out


SONNET = "claude-3-5-sonnet-20240620"
LONG = Reply("token " * 400)  # 400 output tokens, streamed a word at a time


def test_an_anthropic_stream_that_passes_the_cost_budget_is_ended_with_its_error_event(short_dir: Path) -> None:
    """Claude Code always streams. A stream that goes past what it reserved (here a server that ignores max_tokens)
    is metered as it comes and ended, once it passes --max-cost, with Anthropic's own error event; the next call is
    refused, and the transcript keeps what streamed."""
    price = price_of("anthropic", SONNET)
    assert price is not None
    ask = {"model": SONNET, "max_tokens": 10, "stream": True, "messages": [{"role": "user", "content": "go"}]}
    reserved = price.cost(len(json.dumps(ask)), 10)
    budget = reserved + price.cost(0, 100)  # room for ~100 tokens past the reservation, not 400
    with ScriptedLLM([LONG, Reply("never")], caps=False) as model:
        config = _scripted(model, "anthropic", models=(SONNET,), max_cost_usd=budget)
        transcript = short_dir / "tr.jsonl"
        with LLMProxy(config, short_dir / "m.sock", short_dir / "m.jsonl", KEY, transcript) as proxy:
            status, body = _post(short_dir / "m.sock", "/v1/messages", ask)
            after = _post(short_dir / "m.sock", "/v1/messages", {**ask, "stream": False})
            summary = proxy.summary()
    events = _sse(body)
    assert status == 200 and events[0][0] == "message_start"
    name, error = events[-1]
    assert name == "error" and error["type"] == "error" and error["error"]["type"] == "invalid_request_error"
    assert "cost budget passed mid-stream" in error["error"]["message"]
    assert "message_stop" not in [n for n, _ in events]
    streamed = "".join(d["delta"]["text"] for n, d in events if n == "content_block_delta")
    assert 0 < streamed.count("token") < 400
    assert after[0] == 429 and b"cost budget spent" in after[1] and len(model.requests) == 1
    assert summary["cut_streams"] == 1 and summary["cost_usd"] >= budget
    assert summary["cost_usd"] <= budget + price.cost(0, 4)  # past it by the one event that passed it at most
    line = _lines(transcript)[0]
    assert line["api"] == "messages" and line["stream"] is True and "mid-stream" in line["error"]
    assert line["response"]["content"][0]["text"] == streamed and line["response"]["model"] == SONNET


def test_the_anthropic_sdk_reads_the_ended_stream_as_an_api_error(short_dir: Path, relay: Any) -> None:
    anthropic = pytest.importorskip("anthropic", reason="the anthropic SDK is not installed")
    price = price_of("anthropic", SONNET)
    assert price is not None
    with ScriptedLLM([Reply("fine answer"), LONG], caps=False) as model:
        config = _scripted(model, "anthropic", models=(SONNET,), max_cost_usd=price.cost(400, 120))
        with LLMProxy(config, short_dir / "s.sock", short_dir / "s.jsonl", KEY):
            client = anthropic.Anthropic(base_url=relay(short_dir / "s.sock"), api_key="unused", max_retries=0)
            ask = {"model": SONNET, "max_tokens": 10, "messages": [{"role": "user", "content": "go"}]}
            with client.messages.stream(**ask) as stream:
                assert stream.get_final_message().content[0].text == "fine answer"
            with (
                pytest.raises(anthropic.APIError, match="budget passed mid-stream"),
                client.messages.stream(**ask) as s,
            ):
                s.get_final_message()


RESPONSES_TOOLS = [{"type": "function", "name": "shell", "parameters": {"type": "object"}}]


def test_the_responses_api_is_forwarded_plain_and_streamed_and_counted(short_dir: Path) -> None:
    with ScriptedLLM([Reply("plain one"), ToolCall("shell", {"command": ["ls"]})]) as model:
        transcript = short_dir / "r.jsonl"
        with LLMProxy(_scripted(model), short_dir / "r.sock", short_dir / "r.log", KEY, transcript) as proxy:
            ask = {"model": "gpt-x", "input": "hello there", "tools": RESPONSES_TOOLS}
            plain = _post(short_dir / "r.sock", "/v1/responses", ask)
            streamed = _post(short_dir / "r.sock", "/v1/responses", {**ask, "stream": True})
            summary = proxy.summary()
    assert [r["path"] for r in model.requests] == ["/v1/responses"] * 2  # spoken natively
    assert plain[0] == 200 and json.loads(plain[1])["output"][0]["content"][0]["text"] == "plain one"
    events = _sse(streamed[1])
    assert events[-1][0] == "response.completed"
    assert (summary["input_tokens"], summary["output_tokens"]) == (2 + 2, 2 + 2)  # words, as the server counts
    stream_line = _lines(transcript)[1]
    assert stream_line["api"] == "responses" and stream_line["response"] == events[-1][1]["response"]
    assert json.loads(stream_line["response"]["output"][0]["arguments"]) == {"command": ["ls"]}


def test_a_responses_stream_past_the_budget_ends_with_response_failed(short_dir: Path) -> None:
    """A call that names no cap is reserved max_tokens_per_call (and gets it as its cap); from a server that ignores
    the cap, an answer longer than that is metered and ended with response.failed (code insufficient_quota, which
    Codex does not retry), in both directions of translation."""
    for apis in (None, ("/v1/chat/completions",)):
        with ScriptedLLM([LONG], apis=apis, caps=False) as model:
            config = _scripted(model, max_tokens=300, max_tokens_per_call=20)
            with LLMProxy(config, short_dir / "f.sock", short_dir / "f.jsonl", KEY) as proxy:
                _, body = _post(short_dir / "f.sock", "/v1/responses", {"model": "m", "input": "go", "stream": True})
                summary = proxy.summary()
        name, failed = _sse(body)[-1]
        assert name == "response.failed" and failed["response"]["status"] == "failed", apis
        assert failed["response"]["error"]["code"] == "insufficient_quota"
        assert "token budget passed mid-stream" in failed["response"]["error"]["message"]
        # charged what it was metered at: its request's bytes (no usage came) and its output so far
        assert summary["cut_streams"] == 1 and 300 < summary["input_tokens"] + summary["output_tokens"] <= 303


def test_a_chat_stream_past_the_budget_ends_with_an_error_chunk(short_dir: Path) -> None:
    with ScriptedLLM([LONG], caps=False) as model:  # a server that ignores the cap the proxy added
        config = _scripted(model, max_tokens=200, max_tokens_per_call=20)
        with LLMProxy(config, short_dir / "c.sock", short_dir / "c.jsonl", KEY):
            _, body = _post(short_dir / "c.sock", "/v1/chat/completions", {"model": "m", "stream": True})
    events = _sse(body)
    assert events[-1] == (None, "[DONE]") and events[-2][1]["error"]["code"] == "insufficient_quota"


def test_the_responses_api_is_translated_for_a_server_that_speaks_only_chat(short_dir: Path) -> None:
    """llama.cpp and most local servers speak chat completions only: the first Responses call meets a 404, is sent
    again as chat completions, and so are the run's later ones; answers come back as Responses, streams as its
    events. What chat cannot say is refused before anything is sent."""
    history = [
        {"role": "developer", "content": "be brief"},
        {"role": "user", "content": [{"type": "input_text", "text": "list files"}]},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "function_call", "call_id": "call_1", "name": "shell", "arguments": '{"command": ["ls"]}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "a.txt"},
    ]
    script = [Reply("there is a.txt"), ToolCall("shell", {"command": ["cat", "a.txt"]})]
    with ScriptedLLM(script, apis=("/v1/chat/completions",)) as model:
        transcript = short_dir / "x.jsonl"
        with LLMProxy(_scripted(model), short_dir / "x.sock", short_dir / "x.log", KEY, transcript) as proxy:
            ask = {"model": "local", "instructions": "you are terse", "input": history, "tools": RESPONSES_TOOLS,
                   "max_output_tokens": 50}  # fmt: skip
            plain = _post(short_dir / "x.sock", "/v1/responses", ask)
            streamed = _post(short_dir / "x.sock", "/v1/responses", {**ask, "stream": True})
            web = _post(short_dir / "x.sock", "/v1/responses", {**ask, "tools": [{"type": "web_search"}]})
            summary = proxy.summary()
    assert [r["path"] for r in model.requests] == ["/v1/chat/completions"] * 2  # after the 404 to /v1/responses
    sent = model.requests[1]["body"]
    assert [m["role"] for m in sent["messages"]] == ["system", "system", "user", "assistant", "tool"]
    assert sent["messages"][3]["tool_calls"][0]["id"] == "call_1" and sent["messages"][4]["content"] == "a.txt"
    assert sent["tools"] == [{"type": "function", "function": {"name": "shell", "parameters": {"type": "object"}}}]
    assert sent["max_tokens"] == 50 and "input" not in sent
    answer = json.loads(plain[1])
    assert plain[0] == 200 and answer["object"] == "response" and answer["status"] == "completed"
    assert answer["output"][0]["content"][0]["text"] == "there is a.txt" and answer["usage"]["output_tokens"] == 3
    events = _sse(streamed[1])
    assert [n for n, _ in events] == [
        "response.created", "response.in_progress", "response.output_item.added",
        *["response.function_call_arguments.delta"] * 3, "response.function_call_arguments.done",
        "response.output_item.done", "response.completed",
    ]  # fmt: skip
    assert [d["sequence_number"] for _, d in events] == list(range(len(events)))
    call = events[-1][1]["response"]["output"][0]
    assert call["type"] == "function_call" and json.loads(call["arguments"]) == {"command": ["cat", "a.txt"]}
    assert web[0] == 400 and b"tools[0] is of type 'web_search', a tool the provider would run" in web[1]
    assert summary["calls"] == 2 and summary["refused"] == 1 and summary["output_tokens"] == 3 + 3
    lines = _lines(transcript)
    assert lines[1]["response"]["output"][0] == call and lines[2]["status"] == 400
    logged = _lines(short_dir / "x.log")
    assert [e.get("translated") for e in logged] == [True, True, None]


def test_the_openai_sdk_streams_responses_through_the_translation(short_dir: Path, relay: Any) -> None:
    openai = pytest.importorskip("openai", reason="the openai SDK is not installed")
    with (
        ScriptedLLM(
            [ToolCall("shell", {"command": ["ls"]}), Reply("done now")], apis=("/v1/chat/completions",)
        ) as model,
        LLMProxy(_scripted(model), short_dir / "o.sock", short_dir / "o.jsonl", KEY),
    ):
        client = openai.OpenAI(base_url=relay(short_dir / "o.sock") + "/v1", api_key="unused", max_retries=0)
        with client.responses.stream(model="m", input="hi", tools=RESPONSES_TOOLS) as stream:  # type: ignore[arg-type]
            called = stream.get_final_response()
        with client.responses.stream(model="m", input="hi") as stream:
            said = stream.get_final_response()
    assert called.output[0].type == "function_call" and json.loads(called.output[0].arguments) == {"command": ["ls"]}
    assert said.output_text == "done now" and said.usage is not None and said.usage.output_tokens == 2


def test_a_provider_that_never_answers_is_the_harness_failure_the_summary_names(short_dir: Path) -> None:
    """Every call the proxy forwarded failed on the provider's side (unreachable, its key refused, its server
    failing): model_failure says so; an answered call, or the agent's own bad request, is not that."""
    from podium.services import model_failure

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    base = PROVIDERS["openai"]
    config = LLMConfig(Provider("openai", f"http://127.0.0.1:{port}/v1", "X", base.auth, base.paths))
    with LLMProxy(config, short_dir / "u.sock", short_dir / "u.jsonl", KEY) as proxy:
        statuses = [_post(short_dir / "u.sock", "/v1/chat/completions", {"model": "m"})[0] for _ in range(3)]
        summary = proxy.summary()
    assert statuses == [502] * 3 and (summary["failed_calls"], summary["answered_calls"]) == (3, 0)
    failure = model_failure(summary)
    assert failure is not None and "every model call failed (3 of 3)" in failure
    assert f"http://127.0.0.1:{port}/v1/chat/completions could not be reached" in failure  # /v1 given once
    script = [Fail(401, "bad key"), Fail(503, "down"), Fail(400, "bad request"), Reply("ok")]
    with ScriptedLLM(script) as model, LLMProxy(_scripted(model), short_dir / "k.sock", short_dir / "k.log", KEY) as p:
        for _ in range(2):
            _post(short_dir / "k.sock", "/v1/chat/completions", {"model": "m"})
        down = p.summary()
        _post(short_dir / "k.sock", "/v1/chat/completions", {"model": "m"})
        agents_fault = p.summary()
        _post(short_dir / "k.sock", "/v1/chat/completions", {"model": "m"})
        answered = p.summary()
    assert "HTTP 503" in (model_failure(down) or "") and down["failed_calls"] == 2
    assert model_failure(agents_fault) is None and model_failure(answered) is None
    assert model_failure(None) is None and model_failure({"calls": 0, "failed_calls": 0}) is None


UNREACHED_AGENT = r"""
import json, os, shutil, urllib.error, urllib.request
for _ in range(2):
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=json.dumps({"model": "m"}).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        urllib.request.urlopen(request, timeout=30)
    except urllib.error.HTTPError as error:
        print("the model failed:", error.code)
shutil.copyfile("/home/data/sample_submission.csv", "/home/submission/submission.csv")  # and ends well
"""


def test_a_run_whose_model_calls_all_failed_is_the_harness_failure_and_is_run_again(
    tmp_path: Path, spaceship_data_dir: Path
) -> None:
    """Issue 29 item 5: an agent whose model was never reached still placed the sample submission and exited 0,
    and the run counted as a good one. It is a failure of the harness's making: recorded with the proxy's reason
    (the summary kept), left out of the agent's figures, and run again by the next command (--redo failed too)."""
    if subprocess.run(["sh", "-c", "command -v bwrap"], capture_output=True).returncode != 0:
        pytest.skip("bubblewrap is not installed")
    from podium import registry
    from podium import run as run_module
    from podium.agents import folder_digest, load_agent
    from podium.records import RunRecord
    from podium.store import RunStore

    agent = tmp_path / "unreached"
    agent.mkdir()
    (agent / "main.py").write_text(UNREACHED_AGENT)
    (agent / "agent.yaml").write_text(
        "name: unreached\ncommand: [python3, /home/agent/main.py]\n"
        "llm: {provider: openai, base_url: 'http://127.0.0.1:9/v1', api_key_env: PODIUM_TEST_LLM_KEY, models: [m]}\n"
    )
    os.environ["PODIUM_TEST_LLM_KEY"] = KEY
    try:
        config = run_module.RunConfig(
            agent=load_agent(str(agent)), seeds=1, time_limit=120, sandbox="bwrap", cpus=None, memory_bytes=None,
            gpus=0, run_group="g", data_dir=spaceship_data_dir, runs_dir=tmp_path / "runs",
        )  # fmt: skip
        comp = registry.get("spaceship-titanic")
        batch = run_module.run_batch(config, [comp])
        assert batch.records == [] and batch.not_run == [f"{comp.ref} seed 0"]
        run = tmp_path / "runs" / "g" / comp.id / "0"
        record = json.loads((run / "record.json").read_text())
        assert record["status"] == "harness_error" and record["grade"] is None
        assert "every model call failed (2 of 2)" in record["error"]
        assert "http://127.0.0.1:9/v1/chat/completions could not be reached" in record["error"]
        assert record["llm"]["failed_calls"] == 2 and record["llm"]["answered_calls"] == 0
        assert (run / "submission" / "submission.csv").is_file()  # what the agent left stays, for the diagnosis
        assert [line["status"] for line in _lines(run / "llm_transcript.jsonl")] == [502, 502]
        assert "every model call failed" in (RunRecord.from_dict(record).harness_failure() or "")
        rows = RunStore(tmp_path / "runs").rows("g")
        assert run_module.agent_failures(rows) == []  # not the agent's failure
        (tmp_path / "spaceship.txt").write_text(comp.id + "\n")
        report = subprocess.run([sys.executable, "-m", "podium", "report", str(tmp_path / "runs" / "g"),
                                 "--format", "json", "--split", str(tmp_path / "spaceship.txt")],
                                capture_output=True, text=True)  # fmt: skip
        assert report.returncode == 0, report.stderr[-2000:]
        assert '"harness_failures": 1' in report.stdout
        hashed = replace(config, agent_hash=folder_digest(agent, skip=[config.runs_dir]))
        redo = run_module.group.plan(hashed, [comp], RunStore(tmp_path / "runs"), "failed")
        assert [(c.id, s) for c, s in redo.todo] == [(comp.id, 0)]
    finally:
        del os.environ["PODIUM_TEST_LLM_KEY"]


def test_mlab_with_an_unreachable_base_url_is_not_counted_as_a_good_run(tmp_path: Path, minimal_env_dir: Path) -> None:
    """Issue 29 item 5 as it was seen: `podium run --agent mlab --base-url http://127.0.0.1:9/v1` "finished" with the
    sample submission's score. The agent is mlab's own folder with one setting changed: its model client tries a
    failed call once more instead of six times (`MLAB_MODEL_RETRIES`), so the run waits seconds, not a minute."""
    import yaml

    from podium import registry
    from podium.agents.spec import BUILTIN
    from podium.data.prepare import prepare_competition

    if subprocess.run(["sh", "-c", "command -v bwrap"], capture_output=True).returncode != 0:
        pytest.skip("bubblewrap is not installed")
    prepare_competition(registry.get("practice-wine"), tmp_path / "data")
    agent = shutil.copytree(BUILTIN / "mlab", tmp_path / "mlab")
    spec = yaml.safe_load((agent / "agent.yaml").read_text())
    spec["env"]["MLAB_MODEL_RETRIES"] = "1"
    (agent / "agent.yaml").write_text(yaml.safe_dump(spec))
    result = subprocess.run(
        [sys.executable, "-m", "podium", "run", "--agent", str(agent), "--base-url", "http://127.0.0.1:9/v1",
         "--competitions", "practice-wine", "--time-limit", "4m", "--data-dir", str(tmp_path / "data"),
         "--runs-dir", str(tmp_path / "runs")],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "PODIUM_ENV_DIR": str(minimal_env_dir), "OPENAI_API_KEY": "sk-test", "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    assert result.returncode == 1, result.stderr[-3000:]
    assert "harness error (not the agent's; a rerun runs it again): every model call failed" in result.stderr
    assert "http://127.0.0.1:9/v1/chat/completions could not be reached" in result.stderr
    record = json.loads((tmp_path / "runs" / "default" / "practice-wine" / "0" / "record.json").read_text())
    assert record["status"] == "harness_error" and record["grade"] is None
    assert record["llm"]["calls"] == record["llm"]["failed_calls"] > 0
    # the group's report says so, beside the published aggregation that counts it as a failure
    assert record["llm"]["calls"] == 2  # one call, tried once more: the setting reached the client
    assert "| practice-wine@1 | mlab | 0 | harness failure |" in result.stdout
    assert "1 run(s) failed because of the harness, not the agent" in result.stdout
