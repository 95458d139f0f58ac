"""Model calls for podium's own agents (``search``, ``mlab``): OpenAI chat completions or Anthropic
messages, through podium's proxy. Mounted at ``/home/podium_llm.py`` in a sandbox whose agent has an
``llm:`` section.

Standard library only: the agent runs with whatever Python its environment has. Calls go to the
proxy's Unix socket (``PODIUM_LLM_SOCKET``) or, outside podium, to ``PODIUM_LLM_BASE_URL`` over
TCP. A provider's 429 and 5xx answers, timeouts and dropped connections are retried with
exponential backoff (honouring ``Retry-After``) and counted; an answer that says the run's budget
is spent raises :class:`BudgetSpent`, which ends the agent's work with its best submission in place.

The run's seed (``SEED``) goes with every OpenAI-format call as its ``seed`` (sampling is then as
repeatable as the server makes it; a server that refuses the field gets the call again without it).
Anthropic's messages API has no seed.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import socket
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

__all__ = ["BudgetSpent", "Completion", "LLMClient", "ModelError"]


class ModelError(Exception):
    """The model could not be reached or refused the call (after the retries)."""


class BudgetSpent(ModelError):
    """The proxy says the run's token, request or cost budget is spent."""


@dataclass
class Completion:
    """One answer: its text, the arguments of a tool call it made (or None), and its tokens."""

    text: str
    tool_arguments: dict[str, Any] | None
    tool_error: str | None
    input_tokens: int
    output_tokens: int


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self.path_ = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self.path_)
        self.sock = sock


@dataclass
class LLMClient:
    """Chat with one model of one provider (``openai`` or ``anthropic``); every call is counted."""

    provider: str
    model: str
    socket_path: str | None = None
    base_url: str | None = None
    timeout_s: float = 600.0
    retries: int = 6
    max_tokens: int = 4096
    seed: int | None = None
    calls: int = 0
    retried: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    errors: list[str] = field(default_factory=list)

    @classmethod
    def from_environment(cls, prefix: str = "SEARCH", default_tokens: int = 4096) -> LLMClient:
        """The provider, model and way to the proxy that podium gives the run; ``<prefix>_MODEL``,
        ``<prefix>_MAX_TOKENS`` (an answer's cap, else ``default_tokens``) and ``<prefix>_MODEL_RETRIES`` (how often
        a failed call is tried again, with backoff: 6, about a minute, unless set) are the agent's own settings."""
        provider = os.environ.get("PODIUM_LLM_PROVIDER", "openai")
        models = [m for m in os.environ.get("PODIUM_LLM_MODELS", "").split(",") if m]
        model = os.environ.get(f"{prefix}_MODEL") or (models[0] if models else "")
        if not model:
            raise ModelError(f"no model: set {prefix}_MODEL, or give the agent a model (podium run --model NAME)")
        socket_path = os.environ.get("PODIUM_LLM_SOCKET")
        base_url = os.environ.get("PODIUM_LLM_BASE_URL")
        return cls(
            provider,
            model,
            socket_path=socket_path if socket_path and os.path.exists(socket_path) else None,
            base_url=base_url,
            max_tokens=int(os.environ.get(f"{prefix}_MAX_TOKENS") or default_tokens),
            retries=int(os.environ.get(f"{prefix}_MODEL_RETRIES") or cls.retries),
            seed=int(os.environ["SEED"]) if os.environ.get("SEED", "").isdigit() else None,
        )

    # -- the wire --------------------------------------------------------------------------------

    def _connection(self) -> http.client.HTTPConnection:
        if self.socket_path:
            return _UnixConnection(self.socket_path, self.timeout_s)
        url = urlsplit(self.base_url or "http://127.0.0.1:8399")
        cls = http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
        return cls(url.hostname or "127.0.0.1", url.port, timeout=self.timeout_s)

    def _post(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        body = json.dumps(payload).encode()
        headers = {"Content-Type": "application/json", "Content-Length": str(len(body))}
        if self.provider == "anthropic":
            headers["anthropic-version"] = "2023-06-01"
        delay = 1.0
        for attempt in range(self.retries + 1):
            connection = self._connection()
            try:
                connection.request("POST", path, body=body, headers=headers)
                response = connection.getresponse()
                raw = response.read()
                status, retry_after = response.status, response.getheader("Retry-After")
            except (OSError, http.client.HTTPException) as error:  # timeouts, resets, a stalled answer
                status, raw, retry_after = 0, str(error).encode(), None
            finally:
                connection.close()
            text = raw.decode("utf-8", "replace")
            if status == 200:
                try:
                    data: dict[str, Any] = json.loads(text)
                    return data
                except ValueError:
                    status = 0
            if status in (403, 429) and "budget" in text:
                raise BudgetSpent(_message(text))
            if status not in (0, 408, 409, 429) and status < 500:
                raise ModelError(f"HTTP {status}: {_message(text)}")
            self.errors.append(f"HTTP {status}: {_message(text)[:200]}")
            if attempt == self.retries:
                break
            self.retried += 1
            wait = float(retry_after) if retry_after and retry_after.replace(".", "", 1).isdigit() else delay
            time.sleep(min(60.0, wait) * (1 + random.random() / 4))
            delay = min(60.0, delay * 2)
        raise ModelError(f"the model did not answer after {self.retries + 1} tries: {self.errors[-1]}")

    # -- one call --------------------------------------------------------------------------------

    def complete(self, system: str, prompt: str, *, tool: dict[str, Any] | None = None) -> Completion:
        """The model's answer to ``prompt``; with ``tool`` (name, description, JSON schema of its
        arguments) the model is made to call that tool, and its arguments come back parsed."""
        self.calls += 1
        if self.provider == "anthropic":
            return self._anthropic(system, prompt, tool)
        return self._openai(system, prompt, tool)

    def _openai(self, system: str, prompt: str, tool: dict[str, Any] | None) -> Completion:
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": prompt}],
            "max_tokens": self.max_tokens,
        }
        if tool is not None:
            payload["tools"] = [{"type": "function", "function": tool}]
            payload["tool_choice"] = {"type": "function", "function": {"name": tool["name"]}}
        if self.seed is not None:
            payload["seed"] = self.seed
        try:
            data = self._post("/v1/chat/completions", payload)
        except ModelError as refused:
            if "seed" not in payload or "HTTP 400" not in str(refused) or "seed" not in str(refused).lower():
                raise
            self.seed = None  # this server takes no seed: the calls go on without one
            del payload["seed"]
            data = self._post("/v1/chat/completions", payload)
        usage = data.get("usage") or {}
        message = ((data.get("choices") or [{}])[0]).get("message") or {}
        arguments, error = None, None
        if tool is not None:
            calls = message.get("tool_calls") or []
            if not calls:
                error = "the answer made no tool call"
            else:
                arguments, error = _arguments(calls[0].get("function", {}).get("arguments"))
        return self._counted(message.get("content") or "", arguments, error, usage.get("prompt_tokens"),
                             usage.get("completion_tokens"))  # fmt: skip

    def _anthropic(self, system: str, prompt: str, tool: dict[str, Any] | None) -> Completion:
        payload: dict[str, Any] = {
            "model": self.model,
            "system": system,
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": self.max_tokens,
        }
        if tool is not None:
            payload["tools"] = [
                {"name": tool["name"], "description": tool["description"], "input_schema": tool["parameters"]}
            ]
            payload["tool_choice"] = {"type": "tool", "name": tool["name"]}
        data = self._post("/v1/messages", payload)
        usage = data.get("usage") or {}
        blocks = data.get("content") or []
        text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        arguments, error = None, None
        if tool is not None:
            uses = [b for b in blocks if b.get("type") == "tool_use"]
            if not uses:
                error = "the answer made no tool call"
            else:
                arguments, error = _arguments(uses[0].get("input"))
        return self._counted(text, arguments, error, usage.get("input_tokens"), usage.get("output_tokens"))

    def _counted(
        self, text: str, arguments: dict[str, Any] | None, error: str | None, tokens_in: Any, tokens_out: Any
    ) -> Completion:
        tokens_in = int(tokens_in or 0)
        tokens_out = int(tokens_out or 0)
        self.input_tokens += tokens_in
        self.output_tokens += tokens_out
        return Completion(text, arguments, error, tokens_in, tokens_out)


def _arguments(raw: Any) -> tuple[dict[str, Any] | None, str | None]:
    """A tool call's arguments as a mapping, or why they are not one."""
    if isinstance(raw, dict):
        return raw, None
    try:
        value = json.loads(raw) if isinstance(raw, str) else None
    except ValueError as error:
        return None, f"the tool call's arguments are not JSON ({error})"
    if not isinstance(value, dict):
        return None, "the tool call's arguments are not a JSON object"
    return value, None


def _message(text: str) -> str:
    """The error message inside a provider's (or the proxy's) error body."""
    try:
        data = json.loads(text)
    except ValueError:
        return text.strip()[:500]
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        return str(error.get("message") or error)[:500]
    return str(error or data)[:500]
