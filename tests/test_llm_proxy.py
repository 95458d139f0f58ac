"""The LLM proxy against a provider stand-in on loopback that speaks the OpenAI and Anthropic wire formats.

The stand-in is a real HTTP server (``http.server``) that checks the key it is given and answers with
JSON bodies or server-sent-event streams shaped as the two providers' APIs document them. The proxy
is reached through its Unix socket, as an agent reaches it; the end-to-end tests run an agent in
the real sandboxes through ``podium run``.
"""

from __future__ import annotations

import http.client
import json
import os
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
        f"my key is {KEY}; header Authorization: Bearer abcdefghijkl; x-api-key=sk-ant-api03-{'q' * 30} and "
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
    lines = _lines(transcript)
    text = transcript.read_text()
    assert [line["call"] for line in lines] == [1, 2, 3, 4]
    assert KEY not in text and "abcdefghijkl" not in text and "qqqqqqqqqq" not in text and "tok-podium" not in text
    plain, stream, refused, cut = lines
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
    assert [entry["call"] for entry in logged] == [1, 2, 3, 4]  # the log's lines join the transcript's by number
