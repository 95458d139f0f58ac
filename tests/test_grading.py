"""Grading behaviour that the conformance suite does not cover: harness errors, reports, imports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from podium import registry
from podium.errors import BrokenAnswersError
from podium.fixtures import make_fixture, write_prepared
from podium.grading import grade
from podium.grading.table import write_csv


def _prepared(cid: str, root: Path):  # type: ignore[no-untyped-def]
    comp = registry.get(cid)
    fixture = make_fixture(comp)
    write_prepared(comp, fixture, root)
    return comp, fixture


def test_broken_answers_are_a_harness_error_not_an_invalid_submission(tmp_path: Path) -> None:
    comp, fixture = _prepared("aerial-cactus-identification", tmp_path)
    answers = tmp_path / comp.id / "prepared" / "private" / comp.answers
    answers.write_text("id,has_cactus\nimg_0000,yes\n")
    with pytest.raises(BrokenAnswersError, match="answers"):
        grade(comp, write_csv(fixture.perfect, tmp_path / "s.csv"), tmp_path)


def test_a_bug_in_a_metric_propagates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    comp, fixture = _prepared("spaceship-titanic", tmp_path)

    def broken(*args: object, **kwargs: object) -> float:
        raise ZeroDivisionError("bug")

    monkeypatch.setattr("podium.metrics.classification.accuracy", broken)
    with pytest.raises(ZeroDivisionError):
        grade(comp, write_csv(fixture.perfect, tmp_path / "s.csv"), tmp_path)


def test_missing_and_non_csv_submissions(tmp_path: Path) -> None:
    comp, fixture = _prepared("spaceship-titanic", tmp_path)
    absent = grade(comp, tmp_path / "nothing.csv", tmp_path)
    assert not absent.submission_exists and not absent.valid_submission and "no submission" in (absent.error or "")
    other = write_csv(fixture.perfect, tmp_path / "s.txt")
    report = grade(comp, other, tmp_path)
    assert report.submission_exists and not report.valid_submission and ".csv" in (report.error or "")


def test_competition_without_leaderboard_says_medals_are_unavailable(tmp_path: Path) -> None:
    comp, fixture = _prepared("ventilator-pressure-prediction", tmp_path)
    report = grade(comp, write_csv(fixture.perfect, tmp_path / "s.csv"), tmp_path)
    assert report.valid_submission and report.score == 0.0
    assert report.gold_threshold is None and not report.any_medal and report.percentile is None
    assert any("medals and percentile are unavailable" in w for w in report.warnings)


def test_report_places_score_on_leaderboard(tmp_path: Path) -> None:
    comp, fixture = _prepared("lmsys-chatbot-arena", tmp_path)
    report = grade(comp, write_csv(fixture.sample, tmp_path / "s.csv"), tmp_path)
    assert report.score == round(np.log(3), 5)  # rounded to 5 decimals, as the published grader does
    board = comp.leaderboard
    assert board is not None
    assert report.n_teams == board.n_teams and report.is_lower_better
    assert report.above_median == (report.score < board.median)
    assert report.rank is not None and 1 <= report.rank <= board.n_teams + 1
    json.dumps(report.to_dict())


def test_extra_columns_are_ignored_with_a_warning(tmp_path: Path) -> None:
    comp, fixture = _prepared("spaceship-titanic", tmp_path)
    frame = fixture.perfect
    frame.columns["Unnamed: 0"] = np.arange(frame.n_rows).astype(str).astype(object)
    report = grade(comp, write_csv(frame, tmp_path / "s.csv"), tmp_path)
    assert report.valid_submission and report.score == 1.0
    assert any("Unnamed: 0" in w for w in report.warnings)


def test_grading_a_simple_competition_imports_only_what_it_needs(tmp_path: Path) -> None:
    _, fixture = _prepared("spaceship-titanic", tmp_path)
    submission = write_csv(fixture.perfect, tmp_path / "s.csv")
    code = (
        "import sys; from podium.cli import main; main(['grade-sample', sys.argv[1], 'spaceship-titanic', '--data-dir', sys.argv[2]]);"
        "heavy = [m for m in ('pandas', 'sklearn', 'scipy', 'pycocotools', 'shapely') if m in sys.modules];"
        "print('HEAVY', heavy)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(submission), str(tmp_path)], capture_output=True, text=True, check=True
    ).stdout
    assert "HEAVY []" in out, out


def test_damaged_answers_are_blamed_not_the_submission(tmp_path: Path) -> None:
    """Issue 35 §5.10: `grade-sample` against answers cut short said the submission had ids not in the test set; now
    the answers that fail their own sample submission are named, with the fix."""
    import shutil

    from podium.data.prepare import prepare_competition
    from podium.grading.grader import answers_path

    comp = registry.get("practice-titanic")
    prepare_competition(comp, tmp_path / "data")
    answers = answers_path(comp, tmp_path / "data")
    lines = answers.read_text().splitlines(keepends=True)
    answers.write_text("".join(lines[: len(lines) // 2]))  # damaged: half of its rows gone
    sample = tmp_path / "sample.csv"
    shutil.copy(tmp_path / "data" / comp.id / "prepared" / comp.sample_submission, sample)
    done = subprocess.run([sys.executable, "-m", "podium", "grade-sample", str(sample), comp.id, "--data-dir",
                           str(tmp_path / "data")], capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    assert "prepared answers of practice-titanic@1 do not accept its own sample submission" in done.stderr
    assert "podium prepare -c practice-titanic --force" in done.stderr
