"""The training stack's interpreter (TRL, datasets, verifiers), for the tests that hand podium's episodes to them.

scripts/train_env.sh builds it into a venv of its own, which PODIUM_TRAIN_VENV names; CI builds it in the
background and these tests, marked ``train``, run last and wait for its status line. Without it they are skipped,
and under PODIUM_REQUIRE_TRAIN=1 (CI) they fail instead.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from stacks import build_status, missing

VENV = os.environ.get("PODIUM_TRAIN_VENV")
REQUIRE = os.environ.get("PODIUM_REQUIRE_TRAIN") == "1"
WAIT_S = 1800
PROBE = "import trl.data_utils, datasets, verifiers.v1"


def _missing(reason: str) -> None:
    missing(reason, "PODIUM_REQUIRE_TRAIN" if REQUIRE else None)


def train_python() -> str:
    """The training stack's python, or a skip (a failure under PODIUM_REQUIRE_TRAIN=1)."""
    if not VENV:
        _missing("no training stack: run scripts/train_env.sh DIR and set PODIUM_TRAIN_VENV=DIR")
    venv = Path(str(VENV))
    state = build_status(venv, WAIT_S)
    if state != "ready":
        _missing(f"the training stack in {venv} is {state} (see scripts/train_env.sh and its log)")
    python = str(venv / "bin" / "python")
    probe = subprocess.run([python, "-c", PROBE], capture_output=True, text=True)
    if probe.returncode != 0:
        _missing(f"{python} cannot import the training stack: {probe.stderr.strip()[-300:]}")
    return python
