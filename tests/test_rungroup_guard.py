"""One batch per run group, names that stay one folder, and a refused command that changes nothing (issue 35 §4, §5)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from podium.errors import UsageError
from podium.run import group as rungroup


def _podium(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "podium", *args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=300)  # fmt: skip


def test_a_second_batch_on_a_held_group_is_refused_at_once_with_the_holders_pid(tmp_path):
    runs = tmp_path / "runs"
    with rungroup.batch_lock(runs / "g"):  # this process holds the group, as a running `podium run` would
        refused = _podium("run", "--agent", "dummy", "--competitions", "practice-titanic", "--run-group", "g",
                          "--runs-dir", str(runs), "--time-limit", "1m", cwd=tmp_path)  # fmt: skip
        assert refused.returncode == 2, refused.stderr
        line = refused.stderr.strip().splitlines()[-1]
        assert f"run group 'g' is being run by another podium (pid {os.getpid()})" in line and "--run-group" in line
        assert "running" not in refused.stderr  # refused before the plan is told
        assert not (runs / "g" / "group.json").exists()
    with rungroup.batch_lock(runs / "g"):  # released with its holder: the next batch takes it
        pass


def test_the_lock_goes_with_a_killed_holder(tmp_path):
    group = tmp_path / "runs" / "g"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; from podium.run.group import batch_lock\n"
         f"with batch_lock(Path({str(group)!r})):\n    print('held', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(UsageError, match=f"pid {holder.pid}"), rungroup.batch_lock(group):
            pass
    finally:
        holder.kill()
        holder.wait()
    with rungroup.batch_lock(group):
        pass


@pytest.mark.parametrize(
    "name", ["../escape", "a/b", ".", "..", "", ".hidden", "-x", "x" * 101, "bad\x1b[2Jname", "sp ace"]
)
def test_run_group_names_that_are_not_one_safe_folder_are_refused(tmp_path, name):
    with pytest.raises(UsageError, match="cannot name a run group") as error:
        rungroup.check_name(name)
    assert "\x1b" not in str(error.value) and "\n" not in str(error.value)


def test_podium_run_refuses_a_bad_group_before_writing_anything(tmp_path):
    runs = tmp_path / "runs"
    for name in ("../escape", "a/b"):
        done = _podium("run", "--agent", "dummy", "--competitions", "practice-titanic", "--run-group", name,
                       "--runs-dir", str(runs), cwd=tmp_path)  # fmt: skip
        assert done.returncode == 2 and "cannot name a run group" in done.stderr, done.stderr
    assert not runs.exists() and not (tmp_path / "escape").exists()
    for good in ("exp-1", "gym-20261205", "A_b.c"):
        assert rungroup.check_name(good) == good


def test_a_command_refused_for_its_gpus_writes_no_group(tmp_path):
    runs = tmp_path / "runs"
    done = _podium("run", "--agent", "dummy", "--gpus", "1", "--run-group", "g1", "--runs-dir", str(runs), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "GPUs were asked for" in done.stderr and "running" not in done.stderr
    assert not (runs / "g1" / "group.json").exists()


def test_empty_competitions_is_refused_not_the_whole_split(tmp_path):
    for value in ("", " , "):
        done = _podium(
            "run", "--agent", "dummy", "--competitions", value, "--runs-dir", str(tmp_path / "r"), cwd=tmp_path
        )
        assert done.returncode == 2 and "names no competition" in done.stderr, done.stderr
        assert not (tmp_path / "r").exists()
