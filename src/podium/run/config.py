"""What one `podium run` command asks for: the agent, the competitions' seeds, the limits, the sandbox."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from podium.agents import AgentSpec
from podium.environments import Environment, Profile, load_profile
from podium.errors import PodiumError

__all__ = ["RunConfig", "environment_profile", "hardware"]


@dataclass(frozen=True)
class RunConfig:
    agent: AgentSpec
    seeds: int
    time_limit: float
    sandbox: str
    cpus: float | None
    memory_bytes: int | None
    gpus: int
    run_group: str
    data_dir: Path
    runs_dir: Path
    workers: int = 1
    disk_bytes: int | None = None  # what submission/, code/ and logs/ may hold together
    image: str | None = None  # the agent's docker image, once resolved (built) by run_batch
    agent_hash: str | None = None  # hash of the agent's folder (part of the group's identity), set by run_batch
    env_profile: str | None = None  # --env: a profile for the agent's code instead of its own ("host": podium's Python)
    env_digest: str | None = None  # the digest of that environment's profile (part of the group's identity)
    environment: Environment | None = None  # the built environment the agent's code runs with, set by run_batch
    #: ``--ended-after``'s selection as ``group.json`` keeps it (:meth:`podium.deadlines.Selection.record`), or None.
    ended_after: Mapping[str, Any] | None = None


def hardware(config: RunConfig, gpu_ids: tuple[int, ...] = ()) -> str:
    """What the run may use, in words (the agent's ``HARDWARE``): '2 CPU core(s), 16 GiB memory, no GPU'; a cap
    above what this machine has is said as what it has."""
    from podium.sandbox import host_cpus, host_memory_bytes, list_gpus

    cpus = min(config.cpus, host_cpus()) if config.cpus else host_cpus()
    here = host_memory_bytes()
    capped = min(config.memory_bytes, here) if config.memory_bytes and here else config.memory_bytes
    memory = f"{capped / 2**30:.0f} GiB memory" if capped else "memory not capped"
    gpus = "no GPU"
    if gpu_ids:
        names = [g.name for g in list_gpus() if g.index in gpu_ids]
        gpus = f"{len(gpu_ids)} GPU(s)" + (f" ({', '.join(names)})" if names else "")
    return f"{cpus:g} CPU core(s), {memory}, {gpus}"


def environment_profile(config: RunConfig) -> Profile | None:
    """The profile the agent's code runs with: ``--env``, else the agent's ``environment:``; None for
    podium's own interpreter (``--env host``, or an agent that names none, or one in its own image).
    Runs with GPUs take a profile's GPU variant where it has one."""
    name = config.env_profile or config.agent.environment
    if name is None or name == "host" or config.agent.needs_docker:
        return None
    extra = config.agent.environment_requirements if name == config.agent.environment else ()
    if config.gpus:
        try:
            return load_profile(name, gpu=True, extra=extra)
        except PodiumError:
            pass  # no GPU variant: the CPU one
    return load_profile(name, extra=extra)
