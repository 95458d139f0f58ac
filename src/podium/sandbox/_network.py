"""The network a run's agent has, observed as the run starts, inside its own network namespace.

The record says what the sandbox *meant* to give (``isolation.network``); this says what the agent *had*:
``isolation.network_observed`` = ``{"interfaces": [{"name", "up", "loopback", "addresses"}], "routes": [...],
"observed_by": "sandbox", "at": "start"}``, or ``{"error": ...}`` when it could not be taken. bwrap holds the
agent's command until it is taken (``--info-fd`` names the sandbox's pid 1, ``--block-fd`` releases it); docker
holds it on the run's FIFO; ``local`` observes the harness's own namespace, which is the host's. The observation is
podium's own probe (:mod:`podium.sandbox_files.network_probe`) run with podium's interpreter in that namespace,
before the agent runs a single instruction, so nothing of the agent's decides what it says.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import resources
from typing import Any

__all__ = ["observe_network"]

_TIMEOUT_SECONDS = 30
_MAX_OUTPUT = 1 << 20


def observe_network(pid: int | None = None) -> dict[str, Any]:
    """The interfaces and routes of the network namespace of process ``pid`` (None: this process's), as the record
    keeps them; ``{"error": ...}`` when the probe fails."""
    probe = str(resources.files("podium") / "sandbox_files" / "network_probe.py")
    argv = [sys.executable, "-I", "-S", probe, *([str(pid)] if pid is not None else [])]
    try:
        done = subprocess.run(
            argv, capture_output=True, timeout=_TIMEOUT_SECONDS, cwd="/", env={"PATH": os.defpath}, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return {"error": f"the network probe did not run: {error}"}
    try:
        seen = json.loads(done.stdout[:_MAX_OUTPUT])
    except ValueError:
        detail = done.stderr[-500:].decode("utf-8", "replace").strip()
        return {"error": f"the network probe said nothing readable (exit code {done.returncode}): {detail}"}
    if not isinstance(seen, dict) or "error" in seen:
        return {"error": str(seen.get("error") if isinstance(seen, dict) else seen)[:500]}
    return {**seen, "observed_by": "sandbox", "at": "start"}
