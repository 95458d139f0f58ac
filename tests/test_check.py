"""``podium check ID`` end to end: a clean competition passes with exit 0 (its baseline run placed on the
leaderboard), one that leaks its target is refused with the finding's line, each other check finds what it must
(an unstable prepare, a wrong sample score), raw data with links is refused before anything reads it, the user's
prepared data is never touched, and an interrupted check leaves nothing behind."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest

from podium import owner, registry
from podium.author import check_competition
from podium.declarations import PATH_VARIABLE
from podium.fixtures import make_raw
from test_leakscan import declare_copy
from test_run import podium

UNSTABLE_PREPARE = """
import csv, random


def prepare(raw, public, private, *, version):
    rows = list(csv.DictReader((raw / "train.csv").open()))
    random.shuffle(rows)  # no seed: each prepare draws another test set
    test, train = rows[: len(rows) // 10], rows[len(rows) // 10 :]
    for path, table, columns in (
        (public / "train.csv", train, list(rows[0])),
        (public / "test.csv", test, [c for c in rows[0] if c != "Transported"]),
        (private / "test.csv", test, ["PassengerId", "Transported"]),
    ):
        with path.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=columns, extrasaction="ignore")
            writer.writeheader()
            writer.writerows(table)
    with (public / "sample_submission.csv").open("w", newline="") as handle:
        handle.write("PassengerId,Transported\\n" + "".join(f"{r['PassengerId']},False\\n" for r in test))
"""


@pytest.fixture(scope="module")
def declarations(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("declarations")

    def no_published_sample_score(data: dict) -> None:  # the kept raw files below are generated, not Kaggle's
        del data["sample_submission_score"]

    declare_copy("spaceship-titanic", folder, "check-clean", no_published_sample_score)

    def keep_the_answers(data: dict) -> None:
        data["prepare"]["split"]["drop_from_test"] = []

    declare_copy("spaceship-titanic", folder, "check-leaky", keep_the_answers)

    def wrong_sample_score(data: dict) -> None:
        data["fixture"] = {"sample_score": True}
        data["sample_submission_score"] = 0.123

    unstable = declare_copy("spaceship-titanic", folder, "check-unstable", wrong_sample_score)
    (unstable / "prepare.py").write_text(UNSTABLE_PREPARE)
    return folder


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed (apt-get install bubblewrap)")
def test_a_clean_competition_passes_and_its_baseline_is_placed(declarations: Path) -> None:
    result = podium("check", "check-clean", "--competitions-dir", str(declarations))
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert lines[-1] == "podium check check-clean@1: passed, nothing found by 6 checks"
    assert not [line for line in lines if line.startswith(("finding", "not run"))]
    assert "[1/6] raw: passed: no raw data given" in result.stderr and "the generated fixture" in result.stderr
    assert "[2/6] prepare: passed: prepared twice, 5 checksums agree" in result.stderr
    placed = [line for line in lines if line.startswith("note [baseline] the baseline lands at score ")]
    assert placed and " of 2288 teams (beats " in placed[0], lines


def test_a_competition_that_leaks_its_target_is_refused(declarations: Path) -> None:
    result = podium("check", "check-leaky", "--competitions-dir", str(declarations), "--skip-run")
    assert result.returncode == 1, result.stdout + result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert lines[-1] == "podium check check-leaky@1: refused: 2 finding(s) (skipped: baseline)"
    assert any(
        line.startswith("finding [leaks] test.csv holds 20 test id(s) (e.g. [")
        and line.endswith("together with answer column(s) ['Transported']")
        for line in lines
    ), lines
    assert "finding [leaks] test.csv is a copy of the private file test.csv" in lines


def test_an_unstable_prepare_and_a_wrong_sample_score_are_found_in_json(declarations: Path) -> None:
    result = podium("check", "check-unstable", "--competitions-dir", str(declarations), "--skip-run", "--json")
    assert result.returncode == 1, result.stderr[-3000:]
    report = json.loads(result.stdout)
    assert report["verdict"] == "refused" and report["exit_status"] == 1
    found = {(f["check"], f["text"].split(":")[0]) for f in report["findings"]}
    assert ("prepare", "the second prepare differs from the first") in found, report["findings"]
    assert any(c == "grading" and t.startswith("the sample submission scores") for c, t in found), found
    conformance = [f["text"] for f in report["findings"] if f["check"] == "conformance"]
    assert conformance and conformance[0].startswith("check-unstable@1: sample_submission_is_valid: the sample"), (
        conformance
    )
    assert [c["status"] for c in report["checks"]] == ["passed", "found", "found", "found", "passed", "skipped"]


def test_raw_data_with_a_link_is_refused_before_any_prepare(declarations: Path, tmp_path: Path) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(PATH_VARIABLE, str(declarations))
        raw = make_raw(registry.get("check-clean"), tmp_path / "raw")
    (raw / "\x1b[2Jsecret.csv").symlink_to("/etc/passwd")
    result = podium("check", "check-clean", "--competitions-dir", str(declarations), "--from", str(raw), "--skip-run")
    assert result.returncode == 1
    assert "finding [raw] raw/\\e[2Jsecret.csv is a symbolic link; prepare follows no links" in result.stdout
    assert "\x1b" not in result.stdout + result.stderr
    assert "not run [prepare] no raw data prepare may read" in result.stdout


def test_kept_raw_files_are_checked_and_the_prepared_data_is_left_alone(declarations: Path, tmp_path: Path) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(PATH_VARIABLE, str(declarations))
        make_raw(registry.get("check-clean"), tmp_path / "data" / "check-clean" / "raw")
    mine = tmp_path / "data" / "check-clean" / "prepared" / "mine.txt"
    mine.parent.mkdir(parents=True)
    mine.write_text("the user's own")
    args = ("check", "check-clean", "--competitions-dir", str(declarations), "--data-dir", str(tmp_path / "data"))
    result = podium(*args, "--skip-run")
    assert result.returncode == 0, result.stdout + result.stderr[-2000:]
    assert f"[1/6] raw: passed: the raw files kept in {tmp_path / 'data' / 'check-clean' / 'raw'}" in result.stderr
    assert [p.name for p in mine.parent.iterdir()] == ["mine.txt"] and mine.read_text() == "the user's own"


def _mine() -> list[str]:
    return [p.name for p in Path(tempfile.gettempdir()).glob(f"podium-check-{owner.own_token()}-*")]


def test_an_interrupted_check_leaves_nothing_behind(declarations: Path) -> None:
    def interrupt(line: str) -> None:
        if line.startswith("[3/6] grading ..."):
            assert _mine(), "the check works in a folder of its own"
            raise KeyboardInterrupt

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(PATH_VARIABLE, str(declarations))
        with pytest.raises(KeyboardInterrupt):
            check_competition(registry.get("check-clean"), skip_run=True, progress=interrupt)
    assert _mine() == []
