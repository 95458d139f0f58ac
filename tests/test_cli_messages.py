"""Ordinary mistakes get a message naming the real problem and its fix (issue 35 §5.7)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _podium(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "podium", *args], capture_output=True, text=True, env=env, timeout=300)


def _refused(result: subprocess.CompletedProcess[str], *words: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    for word in words:
        assert word in result.stderr, result.stderr


def test_bundle_verify_on_a_folder_says_it_is_a_folder(tmp_path: Path) -> None:
    _refused(_podium("bundle", "verify", str(tmp_path)), "is a folder", ".tar.gz")


def test_grade_with_a_folder_as_the_submission_list_says_it_is_a_folder(tmp_path: Path) -> None:
    _refused(_podium("grade", "--submission", str(tmp_path), "--output-dir", str(tmp_path / "out")), "is a folder")
    assert not (tmp_path / "out").exists()


def test_prepare_from_a_missing_path_names_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "nonexistent"
    result = _podium("prepare", "-c", "spaceship-titanic", "--from", str(missing), "--data-dir", str(tmp_path / "d"))
    _refused(result, f"--from {missing}: no such file or folder")
    assert "pass --from" not in result.stderr + result.stdout and not (tmp_path / "d").exists()


def test_validate_without_prepared_data_says_how_to_prepare(tmp_path: Path) -> None:
    submission = tmp_path / "s.csv"
    submission.write_text("id,progression\n5,1.0\n")
    result = _podium("validate", str(submission), "practice-diabetes", "--data-dir", str(tmp_path / "none"))
    _refused(result, "not prepared", "podium prepare -c practice-diabetes", "--data-dir")


def test_a_group_without_a_finished_run_is_named_as_such(tmp_path: Path) -> None:
    group = tmp_path / "runs" / "g1"
    group.mkdir(parents=True)
    (group / "group.json").write_text('{"settings": {}}')
    for args in (
        ["report", str(group)],
        ["export", "mlebench", "g1", "--runs-dir", str(group.parent), "--out", str(tmp_path / "export")],
        ["bundle", "create", "g1", "--runs-dir", str(group.parent), "-o", str(tmp_path / "b.tar.gz")],
    ):
        result = _podium(*args)
        _refused(result, "run group g1 has no finished run yet")
        assert "MLE-bench grading report" not in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs"]


def test_a_number_that_is_not_finite_is_refused_wherever_a_flag_takes_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`rollout --temperature abc` sent NaN to the model server and exited 0 (issue 41 §4.7)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key-000000")  # not what is refused here
    rollout = ["rollout", "--model", "m", "--base-url", "http://127.0.0.1:9", "--competitions", "practice-titanic",
               "--runs-dir", str(tmp_path / "runs")]  # fmt: skip
    for value in ("abc", "nan", "inf", "-inf", "1" + "0" * 400):
        _refused(_podium(*rollout, f"--temperature={value}"), "argument --temperature", repr(value)[:40])
    huge = "1" + "0" * 400
    for flag, value in (("--time-limit", "1e308d"), ("--max-cost", huge), ("--cpus", huge), ("--time-limit", huge)):
        _refused(_podium(*rollout, flag, value), f"argument {flag}")
    cluster = [*rollout, "--cluster", "ray:127.0.0.1:1"]
    _refused(_podium(*cluster, "--ray-resource", f"h100={huge}"), "--ray-resource")
    run = ["run", "--agent", "dummy", "--competitions", "nope", "--runs-dir", str(tmp_path / "runs")]
    _refused(_podium(*run, "--time-limit", "1e308d"), "argument --time-limit")
    _refused(_podium("report", str(tmp_path), "--hours", "1,inf"), "argument --hours")
    assert not (tmp_path / "runs").exists()


def test_a_cluster_rollout_of_a_holdout_task_is_refused_before_a_cluster_is_asked_for(tmp_path: Path) -> None:
    """Nothing listens at the address: the holdout refusal must come first, not the missing cluster (§4.9)."""
    result = _podium("rollout", "--model", "m", "--base-url", "http://127.0.0.1:9", "--competitions",
                     "practice-titanic", "--task", "holdout", "--cluster", "ray:127.0.0.1:1", "--runs-dir",
                     str(tmp_path / "runs"))  # fmt: skip
    _refused(result, "--cluster plays sealed episodes for now", "--task sealed")
    assert "127.0.0.1:1" not in result.stderr
