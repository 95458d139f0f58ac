"""The environments' ids: ``podium/<competition-id>-v<version>`` for every competition and version in the
registry, registered with Gymnasium when :mod:`podium.gym` is imported."""

from __future__ import annotations

from pathlib import Path

import gymnasium

from podium import registry
from podium.competition import Competition

__all__ = ["AGENT_FOLDER", "NAMESPACE", "env_id", "register_all"]

NAMESPACE = "podium"
#: The agent folder every episode's record names: its command is the shell server the policy drives.
AGENT_FOLDER = Path(__file__).parent / "agent"


def env_id(competition: Competition) -> str:
    """The Gymnasium id of ``competition`` at its version."""
    return f"{NAMESPACE}/{competition.id}-v{competition.version}"


def register_all() -> list[str]:
    """Register every competition's versions (each ``make`` checks its keyword arguments); the ids registered."""
    registered = []
    for competition in registry.load_all():
        for version in competition.versions:
            name = f"{NAMESPACE}/{competition.id}-v{version}"
            if name not in gymnasium.registry:
                gymnasium.register(
                    id=name,
                    entry_point="podium.gym.env:PodiumEnv",
                    kwargs={"competition": f"{competition.id}@{version}"},
                    nondeterministic=True,  # a command's output and time are the machine's, not the seed's
                    order_enforce=True,
                )
            registered.append(name)
    return registered
