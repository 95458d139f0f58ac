"""The judge's model calls, made through podium's own LLM proxy, as a run's agent makes them.

:func:`judge_session` starts an :class:`~podium.services.LLMProxy` for the judge's
:class:`~podium.agents.LLMConfig` on a private Unix socket, with its calls logged to a file podium
chooses (``RUN/audit_llm_calls.jsonl``): the key comes from podium's environment, the budget
(``--max-cost``) and the price table hold, and the proxy's summary gives the judge's tokens and cost.
:class:`JudgeClient` sends chat calls (OpenAI chat completions or Anthropic messages) at temperature 0.
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

__all__ = ["JudgeClient", "JudgeError", "judge_session"]

_TIMEOUT_S = 600.0
_TRIES = 3


class JudgeError(RuntimeError):
    """The judge's model did not answer (after retries), or the proxy refused the call (its budget is spent)."""


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: Path) -> None:
        super().__init__("localhost", timeout=_TIMEOUT_S)
        self.unix_path = str(path)

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self.unix_path)
        self.sock = sock


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
            connection = _UnixConnection(self.socket_path)
            try:
                connection.request("POST", path, body=body, headers=headers)
                response = connection.getresponse()
                status, text = response.status, response.read().decode("utf-8", "replace")
            except (OSError, http.client.HTTPException) as error:
                status, text = 0, f"{type(error).__name__}: {error}"
            finally:
                connection.close()
            if status == 200:
                with contextlib.suppress(ValueError):
                    data = json.loads(text)
                    if isinstance(data, dict):
                        return data
                problem = "the answer is not JSON"
            else:
                problem = f"HTTP {status}: {text.strip()[:300]}"
                if "podium llm proxy" in text or (status and status < 500 and status != 429):
                    break  # refused by the proxy (budget, model) or by the provider: asking again changes nothing
            time.sleep(min(8.0, 2.0**attempt))
        raise JudgeError(f"the judge's model did not answer: {problem}")


@contextlib.contextmanager
def judge_session(config: LLMConfig, log_path: Path, max_tokens: int) -> Iterator[tuple[JudgeClient, Any]]:
    """A proxy for ``config`` on a private socket, logging to ``log_path``; yields (client, proxy)."""
    from podium.services import LLMProxy

    if not config.models:
        raise JudgeError("the judge needs a model: pass --model NAME")
    folder = Path(tempfile.mkdtemp(prefix="podium-judge-"))  # Unix socket paths must be short
    try:
        with LLMProxy(config, folder / "llm.sock", log_path) as proxy:
            model = config.models[0]
            yield JudgeClient(folder / "llm.sock", config.provider.name, model, max_tokens), proxy
    finally:
        shutil.rmtree(folder, ignore_errors=True)
