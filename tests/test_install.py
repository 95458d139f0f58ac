"""podium as a new user installs it: a fresh venv under a home directory, `pip install -e`, then `podium run` on
one practice competition with the built-in baseline agent, in the default (bwrap) sandbox."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from venvs import make_venv

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def home() -> Iterator[Path]:
    """A home directory of a user: a fresh folder under /home, as ~ is on most machines."""
    if not os.access("/home", os.W_OK):
        pytest.skip("needs a writable /home (CI runs as root)")
    folder = Path(tempfile.mkdtemp(prefix="podium-ci-", dir="/home"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _venv(home: Path) -> Path:
    """A venv under ``home`` that sees this Python's packages (no download of podium's dependencies), with podium
    installed editable from this checkout."""
    venv = make_venv(home / "venvs" / "podium")
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-deps", "-e", str(REPO)]
    # offline first, with the build backend this Python has; else pip's own isolated build (its configured index)
    done = subprocess.run([*pip, "--no-build-isolation"], capture_output=True, text=True)
    if done.returncode != 0:
        done = subprocess.run(pip, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return venv


def test_podium_run_from_a_fresh_venv_under_a_home_directory(home: Path) -> None:
    """Before the fix: the sandbox bound the venv (under /home) and then laid a fresh /home over it, so the baseline
    agent died at `import numpy`, the run had no submission and the command still exited 0 (issue 8, section 4)."""
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    pytest.importorskip("sklearn", reason="the practice extra ships the practice data")
    venv = _venv(home)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PODIUM_DATA_DIR")}
    env |= {"HOME": str(home), "OMP_NUM_THREADS": "1"}
    runs = home / "runs"
    which = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import podium; print(podium.__file__)"], capture_output=True, text=True
    )
    assert which.stdout.strip() == str(REPO / "src" / "podium" / "__init__.py"), which
    result = subprocess.run(
        [str(venv / "bin" / "podium"), "run", "--competitions", "practice-wine", "--time-limit", "10m",
         "--data-dir", str(home / "data"), "--runs-dir", str(runs)],
        capture_output=True, text=True, timeout=900, env=env, cwd=home,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    run_dir = runs / "default" / "practice-wine" / "0"
    record = json.loads((run_dir / "record.json").read_text())
    assert record["agent_result"]["exit_code"] == 0, (run_dir / "logs" / "agent.stderr.log").read_text()[-3000:]
    assert record["grade"]["submission_exists"] and record["grade"]["valid_submission"], record["grade"]
    report = json.loads((runs / "default" / "report.json").read_text())
    assert report["agents"]["baseline"]["rates"]["valid"]["mean"] == 100.0
    assert "| baseline | 1 | 1 | 100.0 | 100.0 |" in result.stdout
