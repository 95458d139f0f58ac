"""Where a command writes is checked before it starts: a folder for a file, a file for a folder and a folder
podium cannot write in are one-line refusals (exit 2), with nothing written (issue 35 §5.4)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PODIUM = [sys.executable, "-m", "podium"]


def _run(args: list[str], read_only: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    command = [*PODIUM, *args]
    if read_only is not None:  # root writes through a chmod: a read-only bind mount holds for everyone
        command = ["bwrap", "--dev-bind", "/", "/", "--ro-bind", str(read_only), str(read_only), *command]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)


def _refused(result: subprocess.CompletedProcess[str], words: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert words in result.stderr, result.stderr


def _files(root: Path) -> list[Path]:
    return sorted(root.rglob("*"))


def test_a_folder_named_as_the_output_file_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    _refused(_run(["report", str(tmp_path / "nothing"), "--output", str(folder)]), "is a folder")
    _refused(_run(["audit", str(tmp_path / "nothing"), "--output", str(folder)]), "is a folder")
    _refused(_run(["bundle", "create", "g", "-o", str(folder), "--runs-dir", str(tmp_path)]), "is a folder")
    assert _files(folder) == []


ROLLOUT = ["rollout", "--model", "m", "--base-url", "http://127.0.0.1:9", "--competitions", "practice-titanic"]


def _episode(runs: Path) -> Path:
    """A landed gym episode as `trajectories export` finds it (its record's gym section)."""
    run = runs / "g" / "practice-titanic" / "0"
    run.mkdir(parents=True)
    record = '{"run_group": "g", "competition_id": "practice-titanic", "seed": 0, "status": "finished", "gym": {}}'
    (run / "record.json").write_text(record)
    return runs


def test_a_file_named_as_the_runs_folder_is_refused(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.write_text("not a folder")
    args = ["run", "--agent", "dummy", "--competitions", "practice-diabetes", "--run-group", "g"]
    _refused(_run([*args, "--runs-dir", str(runs)]), "is a file, not a folder")
    _refused(_run([*ROLLOUT, "--runs-dir", str(runs)]), "--runs-dir")  # FileExistsError, exit 70, before
    assert runs.read_text() == "not a folder" and _files(tmp_path) == [runs]


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap for a read-only mount")
def test_a_read_only_output_folder_is_refused_before_any_work(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    commands = [
        [
            "run",
            "--agent",
            "dummy",
            "--competitions",
            "practice-diabetes",
            "--run-group",
            "g",
            "--runs-dir",
            str(locked),
        ],
        ["report", str(tmp_path / "nothing"), "--output", str(locked / "r.txt")],
        ["export", "mlebench", "g", "--out", str(locked / "export"), "--runs-dir", str(tmp_path)],
        ["example", "--output-dir", str(locked / "example")],
        ["bundle", "create", "g", "-o", str(locked / "b.tar.gz"), "--runs-dir", str(tmp_path)],
        [*ROLLOUT, "--runs-dir", str(locked)],  # sqlite's "unable to open database file", exit 70, before
        [*ROLLOUT, "--runs-dir", str(locked / "below")],  # OSError: Read-only file system
        ["trajectories", "export", str(_episode(tmp_path / "runs")), "--out", str(locked / "t.jsonl")],
    ]
    for args in commands:
        _refused(_run(args, read_only=locked), "cannot write in")
    assert _files(locked) == []


def test_bundle_verify_work_dir_a_file_is_refused_and_a_missing_one_is_made(tmp_path: Path) -> None:
    """`bundle verify --work-dir` named a folder that did not exist: an internal error (exit 70) before."""
    blocker = tmp_path / "file"
    blocker.write_text("x")
    bundle = tmp_path / "b.tar.gz"
    bundle.write_bytes(b"not a bundle")
    _refused(_run(["bundle", "verify", "--work-dir", str(blocker), str(bundle)]), "--work-dir")
    made = _run(["bundle", "verify", "--work-dir", str(tmp_path / "new" / "w"), str(bundle)])
    assert made.returncode == 1 and "not verified" in made.stderr and "Traceback" not in made.stderr, made.stderr
    assert (tmp_path / "new" / "w").is_dir()
