"""An agent's Docker image: named in its agent.yaml, or built from its folder on the local engine."""

from __future__ import annotations

import hashlib
import sys
from dataclasses import replace

from podium.errors import PodiumError
from podium.run.config import RunConfig

__all__ = ["resolve_image"]


def resolve_image(config: RunConfig) -> RunConfig:
    """The config with the agent's image settled: named in agent.yaml, or built locally from its folder."""
    agent = config.agent
    if not agent.needs_docker:
        return config
    if config.sandbox != "docker":
        raise PodiumError(
            f"agent {agent.name!r} runs in a Docker image ('image:'/'build:' in its agent.yaml), so it needs "
            f"--sandbox docker, not {config.sandbox!r}"
        )
    if agent.build is None:
        return replace(config, image=agent.image)
    from podium.sandbox import build_agent_image

    digest = hashlib.sha256(repr(sorted(agent.build_args.items())).encode())
    for path in sorted(p for p in agent.build.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(agent.build)).encode() + b"\0" + path.read_bytes())
    tag = agent.image or f"podium-agent-{agent.name.lower()}:{digest.hexdigest()[:12]}"
    print(f"building the agent image {tag} from {agent.build} (local engine, no pulls) ...", file=sys.stderr)
    build_agent_image(agent.build, tag, agent.build_args)
    return replace(config, image=tag)
