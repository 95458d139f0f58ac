"""Agents: what to start inside the sandbox, and with what (see :mod:`podium.agents.spec` for agent.yaml).

Built-in agents are folders under ``podium/agents/builtin`` (``dummy``, ``baseline``); any folder
holding an ``agent.yaml`` works the same way. :func:`instructions` is the task text every agent
finds at ``/home/instructions.md`` (``podium/agents/instructions.md``).
"""

from __future__ import annotations

from importlib import resources

from podium.agents.llm import PROVIDERS, LLMConfig, Provider, parse_llm_config
from podium.agents.spec import BUILTIN, KEYS, AgentSpec, folder_digest, load_agent

__all__ = [
    "BUILTIN",
    "KEYS",
    "PROVIDERS",
    "AgentSpec",
    "LLMConfig",
    "Provider",
    "folder_digest",
    "instructions",
    "load_agent",
    "parse_llm_config",
]


def instructions(*, time_limit: str, time_limit_secs: int, hardware: str) -> str:
    """The task text for a run: ``instructions.md`` with the run's time limit and hardware filled in."""
    template = (resources.files("podium") / "agents" / "instructions.md").read_text(encoding="utf-8")
    return template.format(time_limit=time_limit, time_limit_secs=time_limit_secs, hardware=hardware)
