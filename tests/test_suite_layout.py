"""The suite's layout under pytest-xdist holds with the installed pytest (issue 41): a file's tests, in one
``xdist_group``, run in one worker; and where the groups come apart (as under pytest 9.2 with xdist 3.8), the guard
in tests/xdist_groups.py stops the run with one line instead of letting it run four times as long."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

TOY = """
import os, pytest

@pytest.mark.xdist_group("one")
@pytest.mark.parametrize("i", range(8))
def test_where(i):
    with open(os.path.join(os.environ["TOY_OUT"], f"ran-{i}"), "w") as out:
        out.write(os.environ["PYTEST_XDIST_WORKER"])
"""
#: What pytest 9.2 does to xdist 3.8's group names, done by hand on any pytest: the @group suffix dropped again.
LOST_GROUPS = """
import pytest

@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    for item in items:
        item._nodeid = item.nodeid.split("@")[0]
"""


def _toy(tmp_path: Path, conftest: str) -> subprocess.CompletedProcess[str]:
    shutil.copy(Path(__file__).with_name("xdist_groups.py"), tmp_path / "xdist_groups.py")
    (tmp_path / "conftest.py").write_text("from xdist_groups import pytest_xdist_node_collection_finished\n" + conftest)
    (tmp_path / "test_toy.py").write_text(TOY)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # its own rootdir: none of podium's addopts or conftest
    (tmp_path / "base").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update(TOY_OUT=str(tmp_path / "base"), PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")  # xdist alone: seconds, not 20
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "3", "--dist", "loadgroup",
         "-p", "xdist.plugin", "test_toy.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip


def test_a_group_runs_in_one_worker_with_the_installed_pytest(tmp_path: Path) -> None:
    result = _toy(tmp_path, "")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    workers = {path.read_text() for path in (tmp_path / "base").glob("ran-*")}
    assert len(list((tmp_path / "base").glob("ran-*"))) == 8
    assert len(workers) == 1, f"one group ran on workers {sorted(workers)}: pin pytest as pyproject.toml says"


def test_a_run_whose_groups_came_apart_stops_at_once_and_says_why(tmp_path: Path) -> None:
    result = _toy(tmp_path, LOST_GROUPS)
    assert result.returncode == 4, result.stdout[-2000:] + result.stderr[-2000:]
    assert "does not keep a test file in one worker" in result.stdout + result.stderr
    assert not list((tmp_path / "base").glob("ran-*"))  # no test ran
