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
import socket
import threading
from pathlib import Path
from typing import Any

from podium.agents import LLMConfig
from podium.errors import UsageError
from podium.sandbox_files.llm_bridge import serve_one  # the same relay the sandbox's bridge runs
from podium.services import LLMProxy

__all__ = ["PolicyModel", "policy_llm_config"]

_LLM_KEYS = ("model", "provider", "base_url", "max_cost", "max_answer_tokens", "api_key_env")


def policy_llm_config(raw: dict[str, Any]) -> LLMConfig:
    """``llm=`` as an :class:`LLMConfig` (one model, its provider, budget), each wrong key one line."""
    unknown = sorted(set(raw) - set(_LLM_KEYS))
    if unknown:
        raise UsageError(f"llm= has unknown key(s) {unknown}; the keys are {', '.join(_LLM_KEYS)}")
    config = LLMConfig.from_options(
        raw.get("provider"), raw.get("model"), raw.get("base_url"), raw.get("max_cost"), raw.get("max_answer_tokens")
    )
    if raw.get("api_key_env"):
        from dataclasses import replace

        config = replace(config, provider=replace(config.provider, api_key_env=str(raw["api_key_env"])))
    config.check_prices()
    return config


class PolicyModel:
    """One episode's proxy for the policy, and a loopback TCP port relayed to it."""

    def __init__(self, config: LLMConfig, socket_path: Path, run_dir: Path) -> None:
        self.proxy = LLMProxy(config, socket_path, run_dir / "llm_calls.jsonl",
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
