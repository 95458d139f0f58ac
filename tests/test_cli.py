"""The command line, end to end, as a user runs it (fresh processes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from podium import competition as registry
from podium.fixtures import make_fixture, write_csv, write_prepared
from podium.table import Frame

COMP = "spaceship-titanic"


def podium(*args: str, data_dir: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    if data_dir is not None:
        env["PODIUM_DATA_DIR"] = str(data_dir)
    return subprocess.run([sys.executable, "-m", "podium", *args], capture_output=True, text=True, env=env, timeout=120)


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("cli")
    comp = registry.get(COMP)
    fixture = make_fixture(comp)
    write_prepared(comp, fixture, root / "data")
    good = write_csv(fixture.perfect, root / "perfect.csv")
    bad = write_csv(
        Frame({k: v[1:] for k, v in fixture.sample.columns.items()}, fixture.sample.n_rows - 1), root / "short.csv"
    )
    return root / "data", good, bad


def test_list_and_show_json() -> None:
    listed = podium("list", "--json")
    assert listed.returncode == 0, listed.stderr
    ids = [c["id"] for c in json.loads(listed.stdout)]
    assert COMP in ids and ids == sorted(ids)
    shown = json.loads(podium("show", COMP, "--json").stdout)
    for key in (
        "metric",
        "higher_is_better",
        "n_teams",
        "gold_threshold",
        "silver_threshold",
        "bronze_threshold",
        "median_threshold",
    ):
        assert key in shown


def test_unknown_id_is_a_clear_error() -> None:
    result = podium("show", "spaceship-titanc")
    assert result.returncode == 2
    assert "Did you mean: spaceship-titanic" in result.stderr


def test_grade_sample_prints_report(prepared: tuple[Path, Path, Path]) -> None:
    data_dir, good, bad = prepared
    report = json.loads(podium("grade-sample", str(good), COMP, "--data-dir", str(data_dir)).stdout)
    assert report["valid_submission"] and report["score"] == 1.0
    assert report["competition_id"] == COMP and report["is_lower_better"] is False
    invalid = json.loads(podium("grade-sample", str(bad), COMP, data_dir=data_dir).stdout)
    assert not invalid["valid_submission"] and "missing PassengerId" in invalid["error"]


def test_missing_answers_name_the_fix(tmp_path: Path, prepared: tuple[Path, Path, Path]) -> None:
    _, good, _ = prepared
    result = podium("grade-sample", str(good), COMP, "--data-dir", str(tmp_path))
    assert result.returncode == 2 and "podium prepare" in result.stderr


def test_validate_uses_sample_submission(prepared: tuple[Path, Path, Path]) -> None:
    data_dir, good, bad = prepared
    ok = podium("validate", str(good), COMP, "--data-dir", str(data_dir))
    assert ok.returncode == 0 and json.loads(ok.stdout)["valid"] is True
    not_ok = podium("validate", str(bad), COMP, "--data-dir", str(data_dir))
    assert not_ok.returncode == 1 and "missing" in json.loads(not_ok.stdout)["error"]
    assert "score" not in not_ok.stdout


def test_grade_jsonl_writes_one_report(tmp_path: Path, prepared: tuple[Path, Path, Path]) -> None:
    data_dir, good, bad = prepared
    runs = tmp_path / "runs.jsonl"
    lines = [{"competition_id": COMP, "submission_path": str(p)} for p in (good, bad, tmp_path / "absent.csv")]
    runs.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    result = podium(
        "grade", "--submission", str(runs), "--output-dir", str(tmp_path / "out"), "--data-dir", str(data_dir)
    )
    assert result.returncode == 0, result.stderr
    (report_path,) = (tmp_path / "out").glob("*_grading_report.json")
    report = json.loads(report_path.read_text())
    assert (
        report["total_runs"] == 3
        and report["total_runs_with_submissions"] == 2
        and report["total_valid_submissions"] == 1
    )
    exists = [r["submission_exists"] for r in report["competition_reports"]]
    assert exists == [True, True, False]


def test_grade_jsonl_rejects_bad_line(tmp_path: Path) -> None:
    runs = tmp_path / "runs.jsonl"
    runs.write_text('{"competition_id": "spaceship-titanic"}\n')
    result = podium("grade", "--submission", str(runs), "--output-dir", str(tmp_path))
    assert result.returncode == 2 and "runs.jsonl:1" in result.stderr and "submission_path" in result.stderr


def test_example_grades_generated_submissions(tmp_path: Path) -> None:
    result = podium("example", "--split", "dev", "--output-dir", str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 failure(s)" in result.stdout and COMP in result.stdout
    assert np.all([line.split()[3] != "invalid" for line in result.stdout.splitlines()[1:-2] if line.strip()])


def test_grade_jsonl_checks_every_answers_file_first(tmp_path: Path, prepared: tuple[Path, Path, Path]) -> None:
    data_dir, good, _ = prepared
    runs = tmp_path / "runs.jsonl"
    lines = [
        {"competition_id": COMP, "submission_path": str(good)},
        {"competition_id": "aerial-cactus-identification", "submission_path": str(good)},
    ]
    runs.write_text("\n".join(json.dumps(x) for x in lines))
    result = podium(
        "grade", "--submission", str(runs), "--output-dir", str(tmp_path / "out"), "--data-dir", str(data_dir)
    )
    assert (
        result.returncode == 2 and "aerial-cactus-identification" in result.stderr and "podium prepare" in result.stderr
    )
    assert not (tmp_path / "out").exists()
