"""Per-run resources name their owner (pid, start time, boot), so a later podium removes a killed one's leftovers at
once and never a live one's: temporary folders and cgroups."""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import pytest

from podium import owner
from podium.sandbox._cgroup import CGROUP_ROOT, remove_abandoned

DEAD = f"{os.getpid()}-1-{owner.boot_id()}"  # this pid answers, but it did not start at tick 1: a reused pid


def test_tokens_tell_a_reused_pid_a_zombie_and_an_earlier_boot_from_the_owner() -> None:
    assert owner.alive(owner.own_token()) and owner.token_in(f"podium-v-{owner.own_token()}-x1") == owner.own_token()
    assert not owner.alive(DEAD)
    pid, started, _ = owner.own_token().split("-")
    assert not owner.alive(f"{pid}-{started}-{'0' * 8 if owner.boot_id() != '0' * 8 else '1' * 8}")
    zombie = subprocess.Popen(["true"])
    token = owner.token_of(zombie.pid)
    while owner.start_time(zombie.pid) is not None:  # exited, not reaped: os.kill(pid, 0) still answers
        pass
    os.kill(zombie.pid, 0)
    assert token is None or not owner.alive(token)
    zombie.wait()
    assert owner.token_in("podium-v-1234-abcdef") is None  # a name from before owner tokens


def test_sweep_temp_removes_dead_owners_folders_only(tmp_path: Path) -> None:
    mine = owner.mkdtemp("v")
    try:
        dead = [tmp_path / f"podium-{kind}-{DEAD}-abc" for kind in ("etc", "v", "local")]
        for folder in dead:
            (folder / "inside").mkdir(parents=True)
        live = tmp_path / f"podium-v-{owner.own_token()}-abc"
        unmarked = tmp_path / "podium-v-abc123"  # an old podium's: no owner to ask, left alone
        target = tmp_path / "precious"
        for folder in (live, unmarked, target):
            folder.mkdir()
        (tmp_path / f"podium-v-{DEAD}-link").symlink_to(target)  # a link is never followed nor removed
        assert sorted(owner.sweep_temp(tmp_path)) == sorted(dead)
        assert live.is_dir() and unmarked.is_dir() and target.is_dir()
        assert mine.is_dir() and owner.sweep_temp(mine.parent).count(mine) == 0
    finally:
        mine.rmdir()


@pytest.mark.skipif(
    os.getuid() != 0 or not (CGROUP_ROOT / "memory" / "cgroup.procs").is_file(),
    reason="needs root and the cgroup v1 memory hierarchy",
)
def test_a_dead_owners_cgroups_go_at_once_with_what_is_left_in_them() -> None:
    """Before: empty groups of killed runs stayed until they were 10 minutes old."""
    parent = CGROUP_ROOT / "memory" / "podium"
    parent.mkdir(exist_ok=True)
    tag = uuid.uuid4().hex[:8]
    dead, live, legacy = parent / f"{DEAD}-{tag}", parent / f"{owner.own_token()}-{tag}", parent / f"old{tag}"
    for group in (dead, dead / "container", live, legacy):
        group.mkdir()
    straggler = subprocess.Popen(["sleep", "60"])
    try:
        (dead / "container" / "cgroup.procs").write_text(str(straggler.pid))
        remove_abandoned(parent)
        assert not dead.exists() and live.is_dir() and legacy.is_dir()
        assert straggler.wait(timeout=10) == -9
    finally:
        straggler.kill()
        straggler.wait()
        for group in (dead / "container", dead, live, legacy):
            if group.is_dir():
                group.rmdir()
