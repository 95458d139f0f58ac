"""The judge's model calls, made through podium's own LLM proxy, as a run's agent makes them.

:func:`judge_session` starts an :class:`~podium.services.LLMProxy` for the judge's
:class:`~podium.agents.LLMConfig` on a private Unix socket, with its calls logged to a file podium
chooses (``RUN/audit_llm_calls.jsonl``): the key comes from podium's environment, the budget
(``--max-cost``) and the price table hold, and the proxy's summary gives the judge's tokens and cost.
:class:`JudgeClient` sends chat calls (OpenAI chat completions or Anthropic messages) at temperature 0.

What goes wrong is told apart by whose fault it is. A reason of the harness (no API key, a model
that cannot be reached or keeps failing, a key the provider refuses, a proxy that does not answer)
raises :class:`~podium.errors.HarnessError`: the judge could not run, which is no verdict on the run.
A call the proxy refuses because the judge's budget is spent raises :class:`JudgeBudgetSpent`, and
one the provider refuses for what it was sent (too long, filtered) raises :class:`JudgeError`: the
judge ran, and its answer on that material is ``unclear``.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import shutil
import socket
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from podium.agents.llm import LLMConfig
from podium.errors import HarnessError, PodiumError
from podium.untrusted import loads

__all__ = ["JudgeBudgetSpent", "JudgeClient", "JudgeError", "judge_session", "require_key"]

_TIMEOUT_S = 600.0
_TRIES = 3
#: Seconds before the first retry (doubled for each further one).
_BACKOFF_S = 1.0
#: Statuses whose cause is the material sent: asking again with the same material changes nothing.
_REFUSED_FOR_CONTENT = (400, 413, 422)


class JudgeError(RuntimeError):
    """The provider refused one call for what it was sent (HTTP 400, 413, 422): that part of the material
    could not be judged."""


class JudgeBudgetSpent(JudgeError):
    """The proxy refused a call: the judge's budget (``--max-cost``) is spent."""


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: Path) -> None:
        super().__init__("localhost", timeout=_TIMEOUT_S)
        self.unix_path = str(path)

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self.unix_path)
        self.sock = sock


def _proxy_refusal(text: str) -> bool:
    """Whether an error answer is the proxy's own refusal (not the provider's, which it passes on)."""
    with contextlib.suppress(ValueError, AttributeError, KeyError, TypeError):
        return bool(loads(text, max_bytes=1 << 20)["error"].get("type") == "podium_proxy")
    return False


@dataclass
class JudgeClient:
    """Chat calls to one model through the proxy's socket; answers at temperature 0, at most ``max_tokens`` long."""

    socket_path: Path
    provider: str
    model: str
    max_tokens: int = 1024

    def chat(self, system: str, messages: list[dict[str, str]]) -> str:
        """The model's answer to a conversation (``messages`` of user and assistant turns)."""
        payload: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens, "temperature": 0}
        if self.provider == "anthropic":
            payload.update(system=system, messages=messages)
            data = self._post("/v1/messages", payload)
            return "".join(b.get("text", "") for b in data.get("content") or [] if b.get("type") == "text")
        payload["messages"] = [{"role": "system", "content": system}, *messages]
        data = self._post("/v1/chat/completions", payload)
        message = ((data.get("choices") or [{}])[0]).get("message") or {}
        return str(message.get("content") or "")

    def _post(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        body = json.dumps(payload).encode()
        headers = {"Content-Type": "application/json"}
        if self.provider == "anthropic":
            headers["anthropic-version"] = "2023-06-01"
        problem = ""
        for attempt in range(_TRIES):
            if attempt:
                time.sleep(_BACKOFF_S * 2 ** (attempt - 1))
            status, text = self._send(path, body, headers)
            if status == 200:
                with contextlib.suppress(ValueError):  # UntrustedJSONError too: a deep answer is no answer
                    data = loads(text, max_bytes=len(text.encode()), max_depth=200)
                    if isinstance(data, dict):
                        return data
                problem = "its answer is not a JSON object"
                continue
            problem = f"HTTP {status}: {text.strip()[:300]}" if status else text
            if status and _proxy_refusal(text):
                if status == 429:
                    raise JudgeBudgetSpent(f"podium's proxy refused the judge's call: {problem}")
                break  # the proxy refused the judge's own settings (its model): a harness error
            if status in _REFUSED_FOR_CONTENT:
                raise JudgeError(f"the judge's model refused the material: {problem}")
            if status and status < 500 and status != 429:
                break  # a key or a model the provider refuses: asking again changes nothing
        raise HarnessError(f"the judge's model {self.model!r} could not be used ({self.provider}): {problem}")

    def _send(self, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, str]:
        """(status, text) of one call; (0, what failed) when the proxy could not be reached or hung up."""
        connection = _UnixConnection(self.socket_path)
        try:
            connection.request("POST", path, body=body, headers=headers)
            response = connection.getresponse()
            return response.status, response.read().decode("utf-8", "replace")
        except (OSError, http.client.HTTPException) as error:
            return 0, f"podium's proxy did not answer: {type(error).__name__}: {error}"
        finally:
            connection.close()


def require_key(config: LLMConfig) -> str:
    """The judge's API key from podium's environment; a :class:`~podium.errors.HarnessError` naming the variable
    to set when it is missing."""
    try:
        return config.api_key()
    except PodiumError:
        raise HarnessError(
            f"the judge's model (provider {config.provider.name}) needs an API key in podium's environment: "
            f"set {config.provider.api_key_env}"
        ) from None


@contextlib.contextmanager
def judge_session(config: LLMConfig, log_path: Path, max_tokens: int) -> Iterator[tuple[JudgeClient, Any]]:
    """A proxy for ``config`` on a private socket, logging to ``log_path``; yields (client, proxy). A missing
    key or a proxy that cannot start is a :class:`~podium.errors.HarnessError`."""
    from podium.services import LLMProxy

    if not config.models:
        raise HarnessError("the judge needs a model: pass --model NAME")
    key = require_key(config)
    folder = Path(tempfile.mkdtemp(prefix="podium-judge-"))  # Unix socket paths must be short
    try:
        proxy = LLMProxy(config, folder / "llm.sock", log_path, api_key=key)
        try:
            proxy.start()
        except (OSError, ValueError) as error:
            raise HarnessError(f"podium's proxy for the judge could not start: {error}") from error
        try:
            yield JudgeClient(folder / "llm.sock", config.provider.name, config.models[0], max_tokens), proxy
        finally:
            proxy.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
