"""An agent's model access: the ``llm:`` section of its agent.yaml.

The LLM proxy (:mod:`podium.services.llm_proxy`) forwards a run's calls to the one provider named
here, with the key from podium's environment, within the budget named here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from podium.errors import PodiumError, UsageError

__all__ = ["DEFAULT_MAX_TOKENS_PER_CALL", "LLM_KEYS", "PROVIDERS", "LLMConfig", "Provider", "parse_llm_config"]

DEFAULT_MAX_TOKENS_PER_CALL = 16384
#: The keys of the ``llm:`` section.
LLM_KEYS = (
    "provider",
    "base_url",
    "api_key_env",
    "models",
    "max_tokens",
    "max_requests",
    "max_tokens_per_call",
    "bridge",
)


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
    max_tokens_per_call: int = DEFAULT_MAX_TOKENS_PER_CALL  # an answer's reservation when its request names no cap
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
    """The ``llm:`` section of an agent.yaml (its keys already checked against :data:`LLM_KEYS`)."""
    if not isinstance(raw, dict):
        raise UsageError(f"{where}: 'llm' must be a mapping such as {{provider: openai, models: [gpt-4o]}}")
    unknown = set(raw) - set(LLM_KEYS)
    if unknown:
        raise UsageError(f"{where}: unknown key(s) under 'llm': {sorted(unknown)}; the keys are {', '.join(LLM_KEYS)}")
    if "bridge" in raw and not isinstance(raw["bridge"], bool):
        raise UsageError(f"{where}: llm.bridge must be true or false, got {raw['bridge']!r}")
    name = str(raw.get("provider", ""))
    if name not in PROVIDERS:
        raise UsageError(f"{where}: llm provider {name!r} is not one of {sorted(PROVIDERS)}")
    provider = PROVIDERS[name]
    if raw.get("base_url"):
        url = str(raw["base_url"]).rstrip("/")
        if urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).hostname:
            raise UsageError(f"{where}: llm base_url {url!r} must be an http(s) URL such as https://api.openai.com")
        provider = Provider(provider.name, url, provider.api_key_env, provider.auth, provider.paths)
    if raw.get("api_key_env"):
        provider = Provider(provider.name, provider.base_url, str(raw["api_key_env"]), provider.auth, provider.paths)
    models = raw.get("models") or ()
    if isinstance(models, str) or not all(isinstance(m, str) for m in models):
        raise UsageError(f"{where}: llm models must be a list of model names")
    limits: dict[str, Any] = {}
    for key in ("max_tokens", "max_requests", "max_tokens_per_call"):
        value = raw.get(key)
        if value is not None and (not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0):
            raise UsageError(f"{where}: llm {key} must be a positive number, got {value!r}")
        if value is not None:
            limits[key] = int(value)
    return LLMConfig(provider, tuple(models), bridge=bool(raw.get("bridge", True)), **limits)
