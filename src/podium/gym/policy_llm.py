"""The policy's model, through podium's LLM proxy: ``gymnasium.make(..., llm={...})``.

A policy that calls a model (``podium rollout``, a trainer's own loop) gets, at each reset, an address on the host's
loopback (``info["llm_base_url"]``, chat completions as OpenAI's SDK takes it) that relays to the episode's own
:class:`~podium.services.LLMProxy`: the key stays in podium's environment, every call is metered against the
episode's budget (``max_cost``), written to the run's ``llm_calls.jsonl`` and ``llm_transcript.jsonl``, and summed
in its record's ``llm``, as for an agent's run. The proxy's socket is never mounted into the sandbox: the code the
policy runs there has no model.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import socket
import threading
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from podium.agents import PROVIDERS, LLMConfig
from podium.errors import UsageError
from podium.gym.options import check_llm
from podium.sandbox_files.llm_bridge import serve_one  # the same relay the sandbox's bridge runs
from podium.services import LLMProxy

__all__ = ["PolicyModel", "is_loopback", "policy_key", "policy_llm_config"]


def policy_llm_config(raw: dict[str, Any]) -> LLMConfig:
    """``llm=`` as an :class:`LLMConfig` (one model, its provider, budget), each wrong key one line."""
    check_llm(raw)
    config = LLMConfig.from_options(
        raw.get("provider"), raw.get("model"), raw.get("base_url"), raw.get("max_cost"), raw.get("max_answer_tokens")
    )
    if raw.get("api_key_env"):
        config = replace(config, provider=replace(config.provider, api_key_env=str(raw["api_key_env"])))
    config.check_prices()
    return config


def is_loopback(url: str) -> bool:
    """Whether ``url``'s host is this machine's loopback (``localhost``, 127.0.0.0/8, ``::1``)."""
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def policy_key(config: LLMConfig, environ: Mapping[str, str] | None = None) -> str:
    """The key the proxy sends the policy's server, from podium's environment. A server on the loopback (a local
    vLLM or llama.cpp) needs none: without its provider's variable set, the key is empty. A variable named with
    ``api_key_env`` is always asked for."""
    variable = config.provider.api_key_env
    key = (os.environ if environ is None else environ).get(variable, "")
    default = PROVIDERS[config.provider.name].api_key_env
    if key or (variable == default and is_loopback(config.provider.base_url)):
        return key
    raise UsageError(
        f"the policy's model at {config.provider.base_url} needs its key in podium's environment: set {variable}, or "
        "name the variable that holds it (llm={'api_key_env': NAME}; podium rollout --api-key-env NAME). A server "
        "on the loopback (http://127.0.0.1:PORT) needs none. The sandbox never sees the key."
    )


class PolicyModel:
    """One episode's proxy for the policy, and a loopback TCP port relayed to it."""

    def __init__(self, config: LLMConfig, socket_path: Path, run_dir: Path) -> None:
        self.proxy = LLMProxy(config, socket_path, run_dir / "llm_calls.jsonl", api_key=policy_key(config),
                              transcript_path=run_dir / "llm_transcript.jsonl")  # fmt: skip
        self._listener: socket.socket | None = None
        self._threads: list[threading.Thread] = []

    @property
    def base_url(self) -> str:
        assert self._listener is not None
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}/v1"

    def start(self) -> PolicyModel:
        self.proxy.start()
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        self._listener = listener
        accept = threading.Thread(target=self._accept, name="podium-gym-llm", daemon=True)
        accept.start()
        self._threads.append(accept)
        return self

    def _accept(self) -> None:
        while self._listener is not None:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._relay, args=(client,), daemon=True).start()

    def _relay(self, client: socket.socket) -> None:
        serve_one(client, str(self.proxy.socket_path), wait=700)

    def summary(self) -> dict[str, Any]:
        return self.proxy.summary()

    def stop(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.close()
        self.proxy.stop()
