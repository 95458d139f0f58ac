"""The harness-controlled path from a sandboxed agent to its LLM provider: a proxy on a Unix socket.

A sandbox has no network. An LLM-driven agent (AIDE, OpenHands, MLAgentBench, our own) still needs
its model, so each run gets one :class:`LLMProxy`: an HTTP server on a Unix socket mounted into the
sandbox at ``/home/llm.sock``. It

* forwards only to the one configured provider (its base URL is podium's, whatever the request says),
  and only the API paths that provider's completions use (``POST /v1/chat/completions`` and so on);
* adds the API key from podium's own environment: the agent never holds a key, so it cannot use
  it elsewhere or leak it into its logs;
* refuses models outside the configured list, and every call once the run's token or request
  budget is spent (HTTP 429, with a message the agent can read);
* counts tokens from each response's ``usage`` (JSON bodies and server-sent-event streams, OpenAI
  and Anthropic shapes; for OpenAI chat streams it asks for the usage chunk), and logs every call
  (time, path, model, status, tokens, seconds) to ``llm_calls.jsonl`` in the run's folder.

Clients that speak HTTP over TCP only reach the socket through ``llm_bridge.py``, which podium
starts inside the sandbox in front of the agent: it listens on the sandbox's own loopback
(``127.0.0.1:8399``; private to the run) and relays bytes to the socket. ``OPENAI_BASE_URL`` and
``ANTHROPIC_BASE_URL`` point there. Nothing else leaves the sandbox.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socketserver
import stat
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from podium.errors import PodiumError

__all__ = ["PROVIDERS", "LLMConfig", "LLMProxy", "Provider", "parse_llm_config"]

BRIDGE_PORT = 8399
MAX_REQUEST_BYTES = 32 << 20
_UPSTREAM_TIMEOUT_SECONDS = 600
_MAX_UNIX_PATH = 100
_DROPPED_REQUEST_HEADERS = {"authorization", "x-api-key", "api-key", "host", "cookie", "content-length", "connection"}
_FORWARDED_RESPONSE_HEADERS = {"content-type", "request-id", "x-request-id", "openai-processing-ms"}


@dataclass(frozen=True)
class Provider:
    """Where a provider's API lives, how it takes its key, and which paths its completions use."""

    name: str
    base_url: str
    api_key_env: str
    auth: str  # "bearer" (Authorization: Bearer KEY) or "x-api-key"
    paths: tuple[str, ...]


PROVIDERS = {
    "openai": Provider(
        "openai",
        "https://api.openai.com",
        "OPENAI_API_KEY",
        "bearer",
        ("/v1/chat/completions", "/v1/responses", "/v1/completions", "/v1/embeddings"),
    ),
    "anthropic": Provider(
        "anthropic", "https://api.anthropic.com", "ANTHROPIC_API_KEY", "x-api-key", ("/v1/messages",)
    ),
    "openrouter": Provider(
        "openrouter", "https://openrouter.ai/api", "OPENROUTER_API_KEY", "bearer", ("/v1/chat/completions",)
    ),
}


@dataclass(frozen=True)
class LLMConfig:
    """An agent's model access: provider, optional base-URL and key-variable overrides, models, budget."""

    provider: Provider
    models: tuple[str, ...] = ()  # empty: any model the provider serves
    max_tokens: int | None = None  # input + output tokens per run
    max_requests: int | None = None
    bridge: bool = True  # start llm_bridge.py in front of the agent (needs python3 in the sandbox)

    def api_key(self, environ: Mapping[str, str] | None = None) -> str:
        """The key, from podium's environment (never the agent's)."""
        key = (environ if environ is not None else os.environ).get(self.provider.api_key_env, "")
        if not key:
            raise PodiumError(
                f"the agent's model access (provider {self.provider.name!r}) needs an API key in podium's environment: "
                f"set {self.provider.api_key_env}. The agent never sees it; the proxy adds it to each forwarded call."
            )
        return key


def parse_llm_config(raw: Any, where: str) -> LLMConfig:
    """The ``llm:`` section of an agent.yaml."""
    if not isinstance(raw, dict):
        raise PodiumError(f"{where}: 'llm' must be a mapping such as {{provider: openai, models: [gpt-4o]}}")
    unknown = set(raw) - {"provider", "base_url", "api_key_env", "models", "max_tokens", "max_requests", "bridge"}
    if unknown:
        raise PodiumError(f"{where}: unknown key(s) under 'llm': {sorted(unknown)}")
    name = str(raw.get("provider", ""))
    if name not in PROVIDERS:
        raise PodiumError(f"{where}: llm provider {name!r} is not one of {sorted(PROVIDERS)}")
    provider = PROVIDERS[name]
    if raw.get("base_url"):
        url = str(raw["base_url"]).rstrip("/")
        if urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).hostname:
            raise PodiumError(f"{where}: llm base_url {url!r} must be an http(s) URL such as https://api.openai.com")
        provider = Provider(provider.name, url, provider.api_key_env, provider.auth, provider.paths)
    if raw.get("api_key_env"):
        provider = Provider(provider.name, provider.base_url, str(raw["api_key_env"]), provider.auth, provider.paths)
    models = raw.get("models") or ()
    if isinstance(models, str) or not all(isinstance(m, str) for m in models):
        raise PodiumError(f"{where}: llm models must be a list of model names")
    limits = {}
    for key in ("max_tokens", "max_requests"):
        value = raw.get(key)
        if value is not None and (not isinstance(value, (int, float)) or value <= 0):
            raise PodiumError(f"{where}: llm {key} must be a positive number, got {value!r}")
        limits[key] = int(value) if value is not None else None
    return LLMConfig(provider, tuple(models), bridge=bool(raw.get("bridge", True)), **limits)


@dataclass
class _Totals:
    calls: int = 0
    refused: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


class _Server(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True

    def __init__(self, path: str, owner: LLMProxy) -> None:
        self.owner = owner
        super().__init__(path, _Handler)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.0"  # close-delimited responses: streams pass through as they arrive

    def log_message(self, format: str, *args: Any) -> None:  # the proxy keeps its own log
        pass

    def do_POST(self) -> None:
        self.server.owner._handle(self)

    def do_GET(self) -> None:
        if self.path == "/health":
            self.server.owner._reply(self, 200, {"ok": True, "provider": self.server.owner.config.provider.name})
        else:
            self.server.owner._refuse(self, 405, "only POST to the provider's completion paths is forwarded")

    do_PUT = do_DELETE = do_PATCH = do_GET


class LLMProxy:
    """Forward a run's model calls to one provider, with its key, within its budget; log every call."""

    def __init__(self, config: LLMConfig, socket_path: Path, log_path: Path, api_key: str | None = None) -> None:
        self.config = config
        self.socket_path = Path(socket_path)
        self.log_path = Path(log_path)
        self._key = api_key if api_key is not None else config.api_key()
        self._totals = _Totals()
        self._lock = threading.RLock()  # a refusal inside the budget check logs under the same lock
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> LLMProxy:
        path = str(self.socket_path)
        if len(path) > _MAX_UNIX_PATH:
            raise ValueError(f"socket path is too long for a Unix socket ({len(path)} > {_MAX_UNIX_PATH}): {path}")
        if self.socket_path.exists() and not stat.S_ISSOCK(self.socket_path.lstat().st_mode):
            raise FileExistsError(f"{path} exists and is not a socket; refusing to replace it")
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()
        self._server = _Server(path, self)
        os.chmod(path, 0o666)  # the sandbox's user connects
        self._thread = threading.Thread(target=self._server.serve_forever, name="podium-llm-proxy", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()

    def __enter__(self) -> LLMProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def summary(self) -> dict[str, Any]:
        """What the run used: calls, refusals, tokens, and the budget it had."""
        with self._lock:
            t = self._totals
            return {
                "provider": self.config.provider.name,
                "base_url": self.config.provider.base_url,
                "calls": t.calls,
                "refused": t.refused,
                "input_tokens": t.input_tokens,
                "output_tokens": t.output_tokens,
                "max_tokens": self.config.max_tokens,
                "max_requests": self.config.max_requests,
            }

    # -- handling ----------------------------------------------------------------------------------

    def _handle(self, handler: _Handler) -> None:
        started = time.monotonic()
        entry: dict[str, Any] = {"time": datetime.now(UTC).isoformat(timespec="milliseconds"), "path": handler.path}
        path = handler.path.split("?", 1)[0]
        if path not in self.config.provider.paths:
            allowed = ", ".join(self.config.provider.paths)
            return self._refuse(handler, 403, f"{path} is not forwarded; allowed: POST {allowed}", entry)
        if "chunked" in (handler.headers.get("Transfer-Encoding") or "").lower():
            return self._refuse(handler, 411, "send the request with a Content-Length, not chunked", entry)
        try:
            length = int(handler.headers.get("Content-Length") or 0)
        except ValueError:
            return self._refuse(handler, 400, "bad Content-Length", entry)
        if length > MAX_REQUEST_BYTES:
            return self._refuse(handler, 413, f"request body over {MAX_REQUEST_BYTES} bytes", entry)
        body = handler.rfile.read(length)
        try:
            payload = json.loads(body or b"{}")
        except ValueError:
            return self._refuse(handler, 400, "the request body is not JSON", entry)
        model = payload.get("model") if isinstance(payload, dict) else None
        entry["model"] = model
        if self.config.models and model not in self.config.models:
            return self._refuse(
                handler, 403, f"model {model!r} is not allowed; allowed: {list(self.config.models)}", entry
            )
        with self._lock:
            t = self._totals
            if self.config.max_requests is not None and t.calls >= self.config.max_requests:
                return self._refuse(handler, 429, f"request budget spent ({self.config.max_requests} calls)", entry)
            if self.config.max_tokens is not None and t.input_tokens + t.output_tokens >= self.config.max_tokens:
                return self._refuse(handler, 429, f"token budget spent ({self.config.max_tokens} tokens)", entry)
            t.calls += 1
        streaming = bool(isinstance(payload, dict) and payload.get("stream"))
        if streaming and path == "/v1/chat/completions" and self.config.provider.auth == "bearer":
            options = payload.get("stream_options") if isinstance(payload.get("stream_options"), dict) else {}
            payload["stream_options"] = {**options, "include_usage": True}  # so the stream reports its tokens
            body = json.dumps(payload).encode()
        entry["stream"] = streaming
        usage = self._forward(handler, path, body, entry)
        entry["input_tokens"], entry["output_tokens"] = usage
        entry["seconds"] = round(time.monotonic() - started, 3)
        with self._lock:
            self._totals.input_tokens += usage[0]
            self._totals.output_tokens += usage[1]
        self._log(entry)

    def _forward(self, handler: _Handler, path: str, body: bytes, entry: dict[str, Any]) -> tuple[int, int]:
        """Send the call upstream and stream the answer back; returns (input, output) tokens seen."""
        url = urlsplit(self.config.provider.base_url)
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in _DROPPED_REQUEST_HEADERS}
        headers["Content-Length"] = str(len(body))
        headers.setdefault("Content-Type", "application/json")
        if self.config.provider.auth == "bearer":
            headers["Authorization"] = f"Bearer {self._key}"
        else:
            headers["x-api-key"] = self._key
            headers.setdefault("anthropic-version", "2023-06-01")
        connection_class = http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
        connection = connection_class(url.hostname or "", url.port, timeout=_UPSTREAM_TIMEOUT_SECONDS)
        counter = _UsageCounter()
        try:
            connection.request("POST", url.path.rstrip("/") + path, body=body, headers=headers)
            response = connection.getresponse()
            entry["status"] = response.status
            handler.send_response(response.status)
            for key, value in response.getheaders():
                if key.lower() in _FORWARDED_RESPONSE_HEADERS:
                    handler.send_header(key, value)
            handler.send_header("Connection", "close")
            handler.end_headers()
            streaming = "text/event-stream" in (response.getheader("Content-Type") or "")
            while chunk := (response.read1(65536) if streaming else response.read(65536)):
                counter.feed(chunk, streaming)
                with contextlib.suppress(OSError):  # the agent hung up: still drain, count and log
                    handler.wfile.write(chunk)
                    handler.wfile.flush()
            counter.finish(streaming)
        except (OSError, http.client.HTTPException) as error:
            entry["status"] = 502
            entry["error"] = f"{type(error).__name__}: {error}"
            with contextlib.suppress(OSError):
                self._reply(handler, 502, {"error": {"message": f"the provider could not be reached: {error}"}})
        finally:
            connection.close()
        return counter.input_tokens, counter.output_tokens

    def _refuse(self, handler: _Handler, status: int, message: str, entry: dict[str, Any] | None = None) -> None:
        self._reply(handler, status, {"error": {"message": f"podium llm proxy: {message}", "type": "podium_proxy"}})
        if entry is not None:
            entry.update(status=status, refused=message, input_tokens=0, output_tokens=0)
            with self._lock:
                self._totals.refused += 1
            self._log(entry)

    @staticmethod
    def _reply(handler: _Handler, status: int, payload: dict[str, Any]) -> None:
        body = json.dumps(payload).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    def _log(self, entry: dict[str, Any]) -> None:
        line = json.dumps(entry) + "\n"
        with self._lock, open(self.log_path, "a", encoding="utf-8") as log:
            log.write(line)


class _UsageCounter:
    """Token counts from a JSON body or an event stream, in the OpenAI and Anthropic shapes."""

    def __init__(self) -> None:
        self.input_tokens = 0
        self.output_tokens = 0
        self._buffer = b""

    def feed(self, chunk: bytes, streaming: bool) -> None:
        self._buffer += chunk
        if streaming:
            *lines, self._buffer = self._buffer.split(b"\n")
            for line in lines:
                self._event_line(line)

    def finish(self, streaming: bool) -> None:
        if streaming:
            self._event_line(self._buffer)
        else:
            with contextlib.suppress(ValueError):
                self._take(json.loads(self._buffer or b"null"))
        self._buffer = b""

    def _event_line(self, line: bytes) -> None:
        line = line.strip()
        if line.startswith(b"data:") and line[5:].strip() not in (b"", b"[DONE]"):
            with contextlib.suppress(ValueError):
                self._take(json.loads(line[5:]))

    def _take(self, message: Any) -> None:
        if not isinstance(message, dict):
            return
        for holder in (message, message.get("message"), message.get("response")):
            usage = holder.get("usage") if isinstance(holder, dict) else None
            if isinstance(usage, dict):
                # Counts in a stream are cumulative (Anthropic's message_delta, OpenAI's last chunk): keep the largest.
                self.input_tokens = max(self.input_tokens, _int(usage.get("prompt_tokens", usage.get("input_tokens"))))
                self.output_tokens = max(
                    self.output_tokens, _int(usage.get("completion_tokens", usage.get("output_tokens")))
                )


def _int(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) else 0
