"""``python -m podium.testing.scripted_llm`` starts without a warning: the package no longer imports the module
before runpy runs it as ``__main__`` (issue 41 §4.10: a RuntimeWarning on every start)."""

from __future__ import annotations

import subprocess
import sys

import podium.testing


def test_the_scripted_server_command_starts_without_a_runtime_warning() -> None:
    done = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-m", "podium.testing.scripted_llm",
                           "--help"], capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0 and "--script" in done.stdout, done.stderr
    assert "RuntimeWarning" not in done.stderr, done.stderr


def test_the_package_still_offers_its_names() -> None:
    from podium.testing import ScriptedLLM, scripted_llm

    assert ScriptedLLM is scripted_llm.ScriptedLLM
    assert all(getattr(podium.testing, name) is getattr(scripted_llm, name) for name in podium.testing.__all__)
