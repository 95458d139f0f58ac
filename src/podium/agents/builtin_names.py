"""Where the built-in agents are and what they are called: what the command line's help names, without loading the
agents' own code (:mod:`podium.agents.spec` reads their ``agent.yaml``)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["BUILTIN", "builtin_names"]

#: The built-in agents' folders (podium is a folder on disk, never a zip).
BUILTIN = Path(__file__).resolve().parent / "builtin"


def builtin_names() -> list[str]:
    """The built-in agents' names as `--agent` takes them (a folder's Python name with ``-``), sorted."""
    return sorted(p.name.replace("_", "-") for p in BUILTIN.iterdir() if (p / "agent.yaml").is_file())
