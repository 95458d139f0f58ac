"""The stacks CI builds in the background (the local model, the training stack): their status line, waited for."""

from __future__ import annotations

import time
from pathlib import Path

import pytest


def missing(reason: str, require: str | None) -> None:
    """Skip for ``reason``, or fail when ``require`` (the PODIUM_REQUIRE_... variable that was set) makes it required."""
    if require:
        pytest.fail(f"{require}=1 but {reason}")
    pytest.skip(reason)


def build_status(venv: Path, wait_s: float) -> str:
    """The last line the stack's build script wrote in VENV/.podium-status, waiting while it says "building"."""
    status = venv / ".podium-status"
    deadline = time.monotonic() + wait_s
    while True:
        lines = status.read_text().split() if status.exists() else []
        last = lines[-1] if lines else "absent"
        if last != "building" or time.monotonic() > deadline:
            return last
        time.sleep(5)
