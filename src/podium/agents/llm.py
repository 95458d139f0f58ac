"""An agent's model access: the ``llm:`` section of its agent.yaml.

The LLM proxy (:mod:`podium.services.llm`) forwards a run's calls to the one provider named
here, with the key from podium's environment, within the budget named here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

from podium.agents.prices import Price, price_of
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
    "max_answer_tokens",
    "max_cost_usd",
    "bridge",
    "apis",
)
#: The wire formats an agent may speak (``llm: {apis: [...]}``), and the path of each.
API_PATHS = {"chat": "/v1/chat/completions", "messages": "/v1/messages", "responses": "/v1/responses"}


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
    #: Names the agent uses -> the provider's names (``models: {alias: name}``); the proxy rewrites them.
    aliases: Mapping[str, str] = field(default_factory=dict)
    max_cost_usd: float | None = None  # USD per run, from the price table (podium.agents.prices)
    #: The most tokens one answer may have: the proxy caps every call to it (small local models that ramble
    #: until their context is full otherwise hold a call for minutes).
    max_answer_tokens: int | None = None
    #: The wire formats the agent speaks (:data:`API_PATHS`); empty: not said (then nothing is checked).
    apis: tuple[str, ...] = ()

    def served_apis(self) -> set[str]:
        """The wire formats the provider serves through the proxy (the Responses API also over chat completions,
        which the proxy translates)."""
        served = {api for api, path in API_PATHS.items() if path in self.provider.paths}
        return served | {"responses"} if "chat" in served else served

    def check_served(self, agent: str) -> None:
        """Refuse an agent whose wire formats the provider does not serve: every call would be refused, and the run
        would count as the agent's (``podium run --agent claude-code --provider openai``)."""
        if self.apis and not set(self.apis) & self.served_apis():
            names = {"chat": "chat completions", "messages": "Anthropic Messages", "responses": "the Responses API"}
            spoken = " or ".join(names[a] for a in self.apis)
            serving = [p for p in ("anthropic", "openai", "openrouter") if set(self.apis) & _served(p)]
            raise UsageError(
                f"--agent {agent} speaks {spoken}, which provider {self.provider.name} does not serve. Fix: "
                f"--provider {' or --provider '.join(serving)}, or an agent that speaks what {self.provider.name} "
                "serves"
            )

    def provider_model(self, name: str) -> str:
        """The provider's name for the model the agent called ``name``."""
        return self.aliases.get(name, name)

    def price(self, name: str) -> Price | None:
        """The price of the model the agent called ``name`` (None if the table does not list it)."""
        return price_of(self.provider.name, self.provider_model(name))

    def check_prices(self) -> None:
        """With a cost budget, every allowed model needs a price (else the budget could not hold)."""
        if self.max_cost_usd is None:
            return
        if not self.models:
            raise UsageError("a cost budget (max_cost_usd, --max-cost) needs the model named (models:, --model)")
        for name in self.models:
            if self.price(name) is None:
                raise UsageError(
                    f"no price for {self.provider.name}/{self.provider_model(name)}, so a cost budget cannot hold. Fix: "
                    "add it to a price file named by PODIUM_PRICES ([input, cached input, output] USD per 1M tokens)"
                )

    def override(
        self,
        *,
        provider: str | None = None,
        model: str | None = None,
        base_url: str | None = None,
        max_cost_usd: float | None = None,
        max_answer_tokens: int | None = None,
    ) -> LLMConfig:
        """This access with the command line's choices (``--provider``, ``--model``, ``--base-url``, ``--max-cost``,
        ``--max-answer-tokens``).

        ``model`` becomes the one model: where the agent calls its model by aliases, every alias now
        stands for it (AIDE's ``aide-code``); otherwise the agent may use that name only.
        """
        chosen = self
        if provider is not None:
            if provider not in PROVIDERS:
                raise UsageError(f"--provider {provider}: choose one of {', '.join(sorted(PROVIDERS))}")
            chosen = replace(chosen, provider=PROVIDERS[provider])
        if base_url is not None:
            url = _checked_url(base_url, "--base-url")
            chosen = replace(chosen, provider=replace(chosen.provider, base_url=url))
        if model is not None:
            if not model.strip():
                raise UsageError("--model names no model. Fix: give a model name such as gpt-4o-2024-08-06")
            if chosen.aliases:
                chosen = replace(chosen, aliases=dict.fromkeys(chosen.aliases, model), models=tuple(chosen.aliases))
            else:
                chosen = replace(chosen, models=(model,))
        if max_cost_usd is not None:
            if not max_cost_usd > 0:
                raise UsageError(f"--max-cost {max_cost_usd}: give a positive amount of USD")
            chosen = replace(chosen, max_cost_usd=float(max_cost_usd))
        if max_answer_tokens is not None:
            if isinstance(max_answer_tokens, bool) or not isinstance(max_answer_tokens, int) or max_answer_tokens < 1:
                raise UsageError(f"--max-answer-tokens {max_answer_tokens}: give a positive number of tokens")
            chosen = replace(chosen, max_answer_tokens=max_answer_tokens)
        return chosen

    @classmethod
    def from_options(
        cls,
        provider: str | None,
        model: str | None,
        base_url: str | None,
        max_cost_usd: float | None,
        max_answer_tokens: int | None = None,
    ) -> LLMConfig:
        """Model access given only on the command line (an agent without an ``llm:`` section)."""
        if model is None:
            raise UsageError(
                "--provider, --base-url, --max-cost and --max-answer-tokens need --model for an agent without an llm: "
                "section"
            )
        return cls(PROVIDERS[provider or "openai"]).override(
            provider=provider,
            model=model,
            base_url=base_url,
            max_cost_usd=max_cost_usd,
            max_answer_tokens=max_answer_tokens,
        )

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
        provider = replace(provider, base_url=_checked_url(str(raw["base_url"]), f"{where}: llm base_url"))
    if raw.get("api_key_env"):
        provider = Provider(provider.name, provider.base_url, str(raw["api_key_env"]), provider.auth, provider.paths)
    models = raw.get("models") or ()
    aliases: dict[str, str] = {}
    if isinstance(models, dict):
        if not all(isinstance(k, str) and isinstance(v, str) and k and v for k, v in models.items()):
            raise UsageError(
                f"{where}: llm models as a mapping must map each alias to a model name, e.g. {{aide-code: gpt-4o}}"
            )
        aliases, models = dict(models), tuple(models)
    if isinstance(models, str) or not all(isinstance(m, str) for m in models):
        raise UsageError(f"{where}: llm models must be a list of model names, or a mapping of aliases to names")
    cost = raw.get("max_cost_usd")
    if cost is not None and (isinstance(cost, bool) or not isinstance(cost, (int, float)) or not cost > 0):
        raise UsageError(f"{where}: llm max_cost_usd must be a positive amount of USD, got {cost!r}")
    limits: dict[str, Any] = {}
    for key in ("max_tokens", "max_requests", "max_tokens_per_call", "max_answer_tokens"):
        value = raw.get(key)
        if value is not None and (not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0):
            raise UsageError(f"{where}: llm {key} must be a positive number, got {value!r}")
        if value is not None:
            limits[key] = int(value)
    apis = raw.get("apis") or ()
    if isinstance(apis, str) or not all(a in API_PATHS for a in apis):
        raise UsageError(f"{where}: llm apis must be a list of {', '.join(API_PATHS)}, got {apis!r}")
    return LLMConfig(
        provider,
        tuple(models),
        apis=tuple(apis),
        bridge=bool(raw.get("bridge", True)),
        aliases=aliases,
        max_cost_usd=None if cost is None else float(cost),
        **limits,
    )


def _served(provider: str) -> set[str]:
    return LLMConfig(PROVIDERS[provider]).served_apis()


def _checked_url(text: str, what: str) -> str:
    url = text.rstrip("/")
    if urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).hostname:
        raise UsageError(f"{what} {url!r} must be an http(s) URL such as https://api.openai.com")
    return url
