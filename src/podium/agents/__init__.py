"""Agents: what to start inside the sandbox, and with what.

An agent is a folder holding ``agent.yaml``::

    name: my-agent
    command: [python3, /home/agent/main.py]   # run in /home inside the sandbox
    env: {MY_SETTING: "1"}                     # added to the agent's environment
    resources: {cpus: 2, memory: 8G, disk: 50G}  # defaults; `podium run` flags override them

Without ``image``, the agent runs on the host's system and Python (bwrap, or docker's host image)
and its folder is mounted read-only at ``/home/agent``. With ``image: NAME`` (docker only) it runs
in that image, which must already be on the local engine (podium never pulls) and carries the
agent itself, as MLE-bench agents' images do; ``build: FOLDER`` (relative to the agent folder)
has podium build the image from that folder's Dockerfile on the local engine first. An ``llm:``
section (provider, models, token and request budget) gives the agent its model through podium's
LLM proxy (``podium.llm_proxy``), the only way out of the sandbox. Built-in
agents (``dummy``, ``baseline``) are folders under ``podium/agents/builtin``; any other folder
works the same way, so users and tests plug in their own agents without touching podium.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from podium.errors import PodiumError
from podium.llm_proxy import LLMConfig, parse_llm_config

__all__ = ["BUILTIN", "AgentSpec", "load_agent", "parse_size"]

BUILTIN = Path(str(resources.files("podium") / "agents" / "builtin"))


@dataclass(frozen=True)
class AgentSpec:
    name: str
    folder: Path
    command: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    cpus: float | None = None
    memory_bytes: int | None = None
    disk_bytes: int | None = None
    image: str | None = None
    build: Path | None = None
    llm: LLMConfig | None = None

    @property
    def needs_docker(self) -> bool:
        return self.image is not None or self.build is not None


def parse_size(text: str | int | None) -> int | None:
    """'16G' / '512M' / bytes -> bytes."""
    if text is None or isinstance(text, int):
        return text
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    value = text.strip().upper().removesuffix("B")
    try:
        if value and value[-1] in units:
            return int(float(value[:-1]) * units[value[-1]])
        return int(value)
    except ValueError:
        raise PodiumError(f"cannot read the size {text!r}; write it like 16G, 512M or a number of bytes") from None


def load_agent(name_or_path: str) -> AgentSpec:
    """A built-in agent by name, or an agent folder (or its agent.yaml) by path."""
    path = Path(name_or_path)
    folder = path.parent if path.name == "agent.yaml" else path
    if not (folder / "agent.yaml").is_file():
        builtin = BUILTIN / name_or_path
        if not (builtin / "agent.yaml").is_file():
            names = sorted(p.name for p in BUILTIN.iterdir() if (p / "agent.yaml").is_file())
            close = difflib.get_close_matches(name_or_path, names, n=2)
            hint = f" Did you mean {', '.join(close)}?" if close else ""
            raise PodiumError(
                f"no agent {name_or_path!r}: not a built-in ({', '.join(names)}) and no agent.yaml at {folder}.{hint}"
            )
        folder = builtin
    raw: dict[str, Any] = yaml.safe_load((folder / "agent.yaml").read_text(encoding="utf-8")) or {}
    command = raw.get("command")
    if not command or not isinstance(command, list):
        raise PodiumError(f"{folder / 'agent.yaml'}: 'command' must be a list such as [python3, /home/agent/main.py]")
    res = raw.get("resources") or {}
    image = raw.get("image")
    if image is not None and (not isinstance(image, str) or not image.strip()):
        raise PodiumError(f"{folder / 'agent.yaml'}: 'image' must be an image name such as my-agent:1, got {image!r}")
    build = None
    if raw.get("build") is not None:
        build = (folder / str(raw["build"])).resolve()
        if not (build / "Dockerfile").is_file():
            raise PodiumError(
                f"{folder / 'agent.yaml'}: 'build: {raw['build']}' should name a folder holding a Dockerfile; "
                f"{build / 'Dockerfile'} does not exist"
            )
    return AgentSpec(
        name=str(raw.get("name") or folder.name),
        folder=folder.resolve(),
        command=tuple(str(c) for c in command),
        env={str(k): str(v) for k, v in (raw.get("env") or {}).items()},
        cpus=float(res["cpus"]) if "cpus" in res else None,
        memory_bytes=parse_size(res.get("memory")),
        disk_bytes=parse_size(res.get("disk")),
        image=image.strip() if image else None,
        build=build,
        llm=parse_llm_config(raw["llm"], str(folder / "agent.yaml")) if raw.get("llm") is not None else None,
    )
