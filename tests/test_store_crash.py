"""The results store under kill -9: only renamed folders are runs, the index lists exactly them, and a run killed
at any rename or fsync of its finishing sequence is either landed whole or redone, never lost or counted twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from podium import owner
from podium.store import RunStore
from test_store_report import _record as report_record

SRC = str(Path(__file__).resolve().parents[1] / "src")


def _record(competition: str, seed: int = 0, *, started: str = "first") -> dict:
    return {**report_record(seed, competition, valid=True), "started_at": started}


def _index(store: RunStore) -> set[tuple[str, int]]:
    keys = [(r["competition_id"], r["seed"]) for r in store.rows("g")]
    assert len(keys) == len(set(keys)), "a run counted twice"
    return set(keys)


def _finished_folders(root: Path) -> set[tuple[str, int]]:
    """Final run folders whose record reads whole."""
    found = set()
    for path in root.glob("g/*/*/record.json"):
        if path.parent.name.isdigit():
            json.loads(path.read_text())
            found.add((path.parent.parent.name, int(path.parent.name)))
    return found


def test_staging_folders_are_never_runs_and_a_torn_record_is_no_crash(tmp_path: Path) -> None:
    """Before: reconcile indexed a staging folder whose (reused) pid answered, and a half-written record.json made
    every rerun crash with JSONDecodeError."""
    store = RunStore(tmp_path)
    live_pid = os.getpid()  # answers os.kill(pid, 0), as a reused or unreaped pid does
    for name, text in (
        (f".0.tmp-{live_pid}-123", json.dumps(_record("c1"))),  # an old podium's name: a whole record
        (f".0.tmp-{live_pid}-456", '{"run_group": "g", "compet'),  # torn
    ):
        folder = tmp_path / "g" / "c1" / name
        folder.mkdir(parents=True)
        (folder / "record.json").write_text(text)
    torn_final = store.run_dir("g", "c2", 0)
    torn_final.mkdir(parents=True)
    (torn_final / "record.json").write_text('{"run_group": "g", "compet')  # power loss on an old podium
    stray = store.run_dir("g", "c3", 0)
    stray.mkdir(parents=True)
    (stray / "record.json").write_text(json.dumps(_record("c4")))  # another run's record: not this folder's run
    assert store.reconcile("g") == 0 and _index(store) == set()
    assert not store.is_done("g", "c1", 0, "a") and not store.is_done("g", "c2", 0, "a")
    # the torn final folder is redone: landing over it replaces it
    staging = store.stage("g", "c2", 0)
    store.land(staging, _record("c2"))
    assert store.reconcile("g") == 0 and _index(store) == {("c2", 0)}
    assert json.loads((torn_final / "record.json").read_text())["competition_id"] == "c2"


def test_reconcile_drops_rows_whose_run_folder_is_gone(tmp_path: Path) -> None:
    """The index never lists a run whose folder is gone (before: a rerun deleted an indexed staging folder and the
    index kept its row, so the run counted as done with nothing behind it)."""
    store = RunStore(tmp_path)
    for competition in ("c1", "c2"):
        store.land(store.stage("g", competition, 0), _record(competition))
    stale = tmp_path / "g" / "c3" / f".0.tmp-{os.getpid()}-1"  # what an old podium indexed
    stale.mkdir(parents=True)
    (stale / "record.json").write_text(json.dumps(_record("c3")))
    store.add(_record("c3"), stale / "record.json")
    store.run_dir("g", "c2", 0).joinpath("record.json").unlink()
    assert store.reconcile("g") == 0
    assert _index(store) == {("c1", 0)}
    assert store.reconcile() == 0 and _index(store) == {("c1", 0)}  # every group: the same


def test_sweep_tells_dead_owners_from_live_ones_without_a_pid_or_an_age(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    mine = store.stage("g", "c1", 0)
    # a dead podium: killed (its lock is free), its pid now answers (here: this very process), so pid + start
    # time and the lock both say dead
    dead_token = f"{os.getpid()}-1-{owner.boot_id()}"
    dead = tmp_path / "g" / "c1" / f".1.tmp-{dead_token}-0"
    dead.mkdir()
    (tmp_path / ".owners" / f"{dead_token}.lock").touch()
    # a live podium in another process: it holds its lock
    child = subprocess.Popen(
        [sys.executable, "-c", f"from pathlib import Path; from podium.store import RunStore; "
         f"s = RunStore(Path({str(tmp_path)!r})); print(s.stage('g', 'c2', 0), flush=True); input()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": SRC},
    )  # fmt: skip
    try:
        assert child.stdout is not None
        live = Path(child.stdout.readline().strip())
        removed = store.sweep()
        assert removed == [dead] and mine.is_dir() and live.is_dir()
        assert not (tmp_path / ".owners" / f"{dead_token}.lock").exists()
    finally:
        child.kill()
        child.wait()
    assert store.sweep() == [live] and mine.is_dir()  # killed: its lock went with it, at once


CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    import podium.store
    from podium.store import RunStore

    root, kill_at, replace = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "replace"

    def record(competition):
        return {"run_group": "g", "competition_id": competition, "competition_version": 1, "seed": 0, "agent": "a",
                "status": "finished", "started_at": "first", "finished_at": "2026-01-01T00:00:00+00:00",
                "grade": {"score": 0.5, "valid_submission": True, "submission_exists": True}}

    store = RunStore(root)
    store.land(store.stage("g", "c1", 0), record("c1"))  # finished before the kill
    store.stage("g", "c3", 0)  # in progress at the kill
    if replace:  # a folder a crash left at c2's final name, without a record
        store.run_dir("g", "c2", 0).mkdir(parents=True)
    staging = store.stage("g", "c2", 0)
    (staging / "submission").mkdir()
    (staging / "submission" / "submission.csv").write_text("id,y\\n1,0\\n")
    steps = []

    def step(name):
        if len(steps) == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        steps.append(name)
        print(name, flush=True)

    def wrap(name, real):
        def wrapped(*args, **kwargs):
            step(name + (" " + os.path.basename(str(args[1])) if len(args) > 1 else ""))
            return real(*args, **kwargs)
        return wrapped

    os.fsync, os.replace, os.rename = wrap("fsync", os.fsync), wrap("replace", os.replace), wrap("rename", os.rename)
    podium.store.exchange_folders = wrap("exchange", podium.store.exchange_folders)  # the one-step swap of a replaced folder
    index = RunStore._index

    def indexed(self, *args):
        step("index")
        index(self, *args)

    RunStore._index = indexed
    store.land(staging, record("c2"))
    step("done")
    """
)


@pytest.mark.parametrize("variant", ["fresh", "replace"])
def test_kill_9_at_each_rename_and_fsync_of_a_finishing_run(tmp_path: Path, variant: str) -> None:
    """A child process finishes a run (record to a temporary file, fsync, rename; fsync the staging folder; rename it
    to its final name; fsync the parent; index) and SIGKILLs itself before step k, for every k. Then a rerun (sweep,
    reconcile, redo what is not indexed) must index exactly the finished runs, never crash, never count twice."""
    landed_from = None
    steps: list[str] = []
    for kill_at in range(64):
        root = tmp_path / str(kill_at)
        child = subprocess.run(
            [sys.executable, "-c", CHILD, str(root), str(kill_at), variant],
            capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": SRC},
        )  # fmt: skip
        done = child.returncode == 0
        assert done or child.returncode == -signal.SIGKILL, child.stderr
        passed = child.stdout.split("\n")[:-1]
        if done:
            steps = passed
        store = RunStore(root)
        store.sweep()
        store.reconcile("g")
        index = _index(store)
        assert index == _finished_folders(root), (kill_at, passed)
        assert ("c1", 0) in index and ("c3", 0) not in index
        assert not list(root.glob("g/*/.*.tmp-*")), "the dead podium's staging folders are swept"
        if ("c2", 0) in index and landed_from is None:
            landed_from = kill_at
        assert (("c2", 0) in index) == (landed_from is not None), "landed at k, so landed at every later k"
        for competition in sorted({"c1", "c2", "c3"} - {c for c, _ in index}):  # the rerun redoes the rest
            store.land(store.stage("g", competition, 0), {**_record(competition), "started_at": "rerun"})
        assert _index(store) == {("c1", 0), ("c2", 0), ("c3", 0)} == _finished_folders(root)
        assert store.reconcile("g") == 0 and not list(root.glob("g/*/.*.tmp-*"))
        first = json.loads((root / "g" / "c1" / "0" / "record.json").read_text())
        assert first["started_at"] == "first", "a finished run is never run again"
        if done:
            break
    assert steps[-1] == "done" and kill_at == len(steps)  # killed before each step, then not at all
    # every rename and fsync was a kill point, and the run counts as finished exactly from its final rename on
    renames = [s for s in steps if s.startswith(("replace", "rename", "exchange"))]
    swapped = "exchange 0" in steps and "replace 0" not in steps  # renameat2 swapped the folders in one step
    expected = 2 if variant == "fresh" else 2 if swapped else 3
    assert steps.count("fsync") >= 3 and len(renames) == expected, steps
    assert steps[landed_from - 1] in ("replace 0", "exchange 0"), (steps, landed_from)


def test_sweep_keeps_another_hosts_runs_where_the_filesystem_has_no_locks(tmp_path: Path, monkeypatch) -> None:
    """On a shared runs folder without working locks, a staging folder whose owner lock names another host
    stays (its pid means nothing here); one that names this host goes when its owner is gone."""
    import errno
    import socket

    from podium.store import RunStore

    store = RunStore(tmp_path)
    token = "4242-123-0badbeef"  # not this boot's id: no process of this host
    staging = tmp_path / "group" / "comp" / f".0.tmp-{token}-0"
    staging.mkdir(parents=True)
    lock = tmp_path / ".owners" / f"{token}.lock"
    lock.parent.mkdir(exist_ok=True)
    lock.write_text("host=a-node-elsewhere\n")

    def no_locks(fd: int, operation: int) -> None:
        raise OSError(errno.ENOLCK, "no locks on this filesystem")

    monkeypatch.setattr("podium.store.fcntl.flock", no_locks)
    assert store.sweep() == [] and staging.is_dir() and lock.is_file()
    lock.write_text(f"host={socket.gethostname()}\n")
    assert store.sweep() == [staging] and not staging.exists()
