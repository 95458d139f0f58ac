"""Agents: what to start inside the sandbox, and with what (see :mod:`podium.agents.spec` for agent.yaml).

Built-in agents are folders under ``podium/agents/builtin`` (``dummy``, ``baseline``); any folder
holding an ``agent.yaml`` works the same way. :func:`instructions` is the task text every agent
finds at ``/home/instructions.md`` (``podium/agents/instructions.md``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from podium.agents.builtin_names import BUILTIN
from podium.lazy import exports

if TYPE_CHECKING:
    from podium.agents.llm import PROVIDERS, LLMConfig, Provider, parse_llm_config
    from podium.agents.spec import KEYS, AgentSpec, folder_digest

_LLM, _SPEC = "podium.agents.llm", "podium.agents.spec"
#: Where each name lives, loaded on first use: the command line's help names the built-in agents without their
#: model clients and YAML reader.
_WHERE = {
    "PROVIDERS": _LLM, "LLMConfig": _LLM, "Provider": _LLM, "parse_llm_config": _LLM, "KEYS": _SPEC,
    "AgentSpec": _SPEC, "folder_digest": _SPEC, "load_agent_folder": _SPEC,
}  # fmt: skip
__getattr__, __dir__ = exports(__name__, globals(), _WHERE)

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


def load_agent(name_or_path: str) -> AgentSpec:
    """An agent: an MLE-bench agent by ``AGENTS_DIR:AGENT_ID`` (:mod:`podium.agents.mlebench`), a built-in
    by name, or an agent folder (or its agent.yaml) by path (:func:`podium.agents.spec.load_agent_folder`)."""
    from podium.agents.mlebench import is_mlebench_ref, load_mlebench_agent
    from podium.agents.spec import load_agent_folder

    if is_mlebench_ref(name_or_path):
        return load_mlebench_agent(name_or_path)
    return load_agent_folder(name_or_path)


def instructions(*, time_limit: str, time_limit_secs: int, hardware: str) -> str:
    """The task text for a run: ``instructions.md`` with the run's time limit and hardware filled in."""
    template = (Path(__file__).resolve().parent / "instructions.md").read_text(encoding="utf-8")
    return template.format(time_limit=time_limit, time_limit_secs=time_limit_secs, hardware=hardware)
