"""Fresh splits against contamination (issue 42 §4): each competition's deadline and where it comes from, and
``--ended-after DATE`` selecting by it on ``list`` and ``prepare`` (``run`` and ``report``: test_deadlines_groups.py).

The expected deadlines are read here from Kaggle's private-leaderboard CSVs (``../shared/competitions/leaderboards``,
or ``PODIUM_LEADERBOARDS``), independently of ``scripts/derive_leaderboards.py`` and the registry."""

from __future__ import annotations

import csv
import json
import os
import shutil
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from podium import declarations, registry
from podium.cli import main
from podium.competition import DEADLINE_SOURCES
from podium.deadlines import select
from podium.errors import RegistryError, UsageError
from podium.leaderboard import Leaderboard

ROOT = Path(__file__).resolve().parents[1]
LEADERBOARDS = Path(os.environ.get("PODIUM_LEADERBOARDS") or ROOT.parent / "shared" / "competitions" / "leaderboards")
EIGHTY_TWO = registry.split_ids("split75") + registry.split_ids("dev")
LAST_SUBMISSION = "last submission on the private leaderboard"
needs_csvs = pytest.mark.skipif(not LEADERBOARDS.is_dir(), reason=f"no leaderboard CSVs in {LEADERBOARDS}")


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


def podium(capsys: pytest.CaptureFixture[str], *args: str) -> Result:
    """``podium ARGS`` in this process, as a user's shell would see it."""
    code = main(list(args))
    out, err = capsys.readouterr()
    return Result(code, out, err)


def csv_deadline(competition_id: str) -> date | None:
    """The day of the latest submission on the competition's private-leaderboard CSV (None: no CSV)."""
    path = LEADERBOARDS / f"{competition_id}.csv"
    if not path.is_file():
        return None
    with path.open(encoding="utf-8", newline="") as handle:
        days = [datetime.strptime(row["submissionDate"], "%Y-%m-%d %H:%M:%S") for row in csv.DictReader(handle)]
    return max(days).date()


def declared(competition_id: str) -> dict[str, object]:
    text = (registry.get(competition_id).folder / "competition.yaml").read_text(encoding="utf-8")
    return dict(yaml.safe_load(text))


def expected_after(cutoff: date, ids: list[str]) -> list[str]:
    """The ids whose deadline, by the rule written out (the declaration's, else the CSV's last day), is after it."""
    out = []
    for cid in ids:
        stated = declared(cid)
        deadline = stated["deadline"] if "deadline" in stated else csv_deadline(cid)
        if isinstance(deadline, date) and deadline > cutoff:
            out.append(cid)
    return out


@needs_csvs
def test_each_of_the_82_takes_its_deadline_from_its_leaderboard_unless_its_declaration_states_one() -> None:
    stating = []
    for cid in EIGHTY_TWO:
        competition, stated = registry.get(cid), declared(cid)
        if "deadline" in stated:
            stating.append(cid)
            assert competition.deadline == stated["deadline"]
            assert competition.deadline_source == stated.get("deadline_source", "declared")
        else:
            assert competition.deadline == csv_deadline(cid) is not None, cid
            assert competition.deadline_source == LAST_SUBMISSION
    # no CSV: its deadline from public write-ups; a leaderboard that never closes: none
    assert stating == ["ventilator-pressure-prediction", "spaceship-titanic"]
    assert registry.get("ventilator-pressure-prediction").deadline == date(2021, 11, 3)
    assert registry.get("spaceship-titanic").deadline is None
    assert all(registry.get(cid).deadline is None for cid in registry.split_ids("practice"))


@needs_csvs
@pytest.mark.parametrize(("cutoff", "split", "count"), [("2019-01-01", "split75", 53), ("2022-01-01", "split75", 17),
                                                        ("2023-01-01", "split75", 8), ("2021-01-01", "dev", 3)])  # fmt: skip
def test_list_ended_after_selects_the_competitions_whose_deadline_is_after_it(
    cutoff: str, split: str, count: int, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = registry.split_ids(split)
    expected = expected_after(date.fromisoformat(cutoff), ids)
    listed = podium(capsys, "list", "--split", split, "--ended-after", cutoff, "--json")
    assert listed.returncode == 0, listed.stderr
    assert [c["id"] for c in json.loads(listed.stdout)] == sorted(expected)
    assert len(expected) == count  # the figures docs/contamination.md gives
    line = listed.stderr.strip()
    assert "\n" not in line and f"{count} of the {len(ids)} competitions of split {split} ended after it" in line
    absent = [cid for cid in ids if registry.get(cid).deadline is None]
    assert f"{len(ids) - count - len(absent)} that ended on or before it, {len(absent)} without a deadline" in line


def test_a_competition_that_ended_on_the_cutoff_day_is_not_after_it() -> None:
    competition = registry.get("tabular-playground-series-may-2022")
    assert competition.deadline == date(2022, 5, 31)
    assert select([competition], date(2022, 5, 30), "-c").ids == [competition.id]
    with pytest.raises(UsageError, match=r"leaves no competition of -c: none of its 1 ended after it .*2022-05-31"):
        select([competition], date(2022, 5, 31), "-c")


def test_list_and_show_name_each_deadline_and_its_source(capsys: pytest.CaptureFixture[str]) -> None:
    table = podium(capsys, "list")
    assert table.returncode == 0, table.stderr
    rows = {line.split()[0]: line.split() for line in table.stdout.splitlines()[2:] if line.strip()}
    assert rows["spaceship-titanic"][-3:] == ["-", "declared", "built-in"]
    assert rows["AI4Code"][-4:] == ["2022-11-10", "last", "sub.", "built-in"]
    assert "last sub. = the last submission on the private leaderboard" in table.stdout
    listed = {c["id"]: c for c in json.loads(podium(capsys, "list", "--json").stdout)}
    assert (listed["AI4Code"]["deadline"], listed["AI4Code"]["deadline_source"]) == ("2022-11-10", LAST_SUBMISSION)
    assert (listed["practice-wine"]["deadline"], listed["practice-wine"]["deadline_source"]) == (None, None)
    shown = podium(capsys, "show", "ventilator-pressure-prediction").stdout
    assert "deadline                 2021-11-03" in shown and "deadline_source          declared" in shown
    assert "Its deadline, 2021-11-03, is declared" in shown  # and why, in its note


def test_list_intersects_the_cutoff_with_the_split_and_says_so_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    listed = podium(capsys, "list", "--split", "low", "--ended-after", "2022-01-01")
    assert listed.returncode == 0, listed.stderr
    table = listed.stdout.split("\n\n")[0].splitlines()[2:]
    assert [line.split()[0] for line in table] == ["tabular-playground-series-may-2022"]
    said = [line for line in listed.stdout.splitlines() if line.startswith("--ended-after")]
    assert said == [
        "--ended-after 2022-01-01: 1 of the 22 competitions of split low ended after it (deadlines: 1 from the last "
        "submission on the private leaderboard); left out: 21 that ended on or before it, 0 without a deadline"
    ]


FUTURE = (datetime.now(UTC).date() + timedelta(days=2)).isoformat()


@pytest.mark.parametrize("command", ["list", "run", "prepare", "report"])
@pytest.mark.parametrize(("value", "says"), [("2023-13-45", "'2023-13-45' is not a date. Fix: write"),
                                             ("tomorrow", "'tomorrow' is not a date. Fix: write"),
                                             ("2023-1-5", "'2023-1-5' is not a date"),
                                             (FUTURE, f"{FUTURE} is in the future")])  # fmt: skip
def test_a_bad_cutoff_is_one_line_naming_it_and_the_fix(
    command: str, value: str, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = ["--data-dir", str(tmp_path / "data")]
    given = {"list": [], "run": ["--runs-dir", str(tmp_path / "runs"), *data], "prepare": ["--all", *data],
             "report": [str(tmp_path), *data]}  # fmt: skip
    result = podium(capsys, command, *given[command], "--ended-after", value)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and says in result.stderr and "Fix:" in result.stderr
    assert not (tmp_path / "runs").exists() and not (tmp_path / "data").exists()


def test_a_cutoff_that_leaves_no_competition_prepares_and_runs_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    latest = max(c.deadline for c in map(registry.get, registry.ids()) if c.deadline is not None)
    ran = podium(capsys, "run", "--ended-after", latest.isoformat(), "--runs-dir", str(tmp_path / "runs"),
                 "--data-dir", str(tmp_path / "data"))  # fmt: skip
    assert ran.returncode == 2 and ran.stderr.count("\n") == 1, ran.stderr
    assert f"--ended-after {latest} leaves no competition of split all" in ran.stderr
    prepared = podium(
        capsys, "prepare", "--split", "low", "--ended-after", "2023-01-01", "--data-dir", str(tmp_path / "data")
    )
    assert prepared.returncode == 2 and prepared.stderr.count("\n") == 1
    assert "leaves no competition of split low: none of its 22 ended after it" in prepared.stderr
    assert not (tmp_path / "runs").exists() and not (tmp_path / "data").exists()


def _declare(root: Path, new_id: str, lines: str) -> Path:
    """spaceship-titanic under another id, its deadline lines replaced by ``lines``."""
    folder = shutil.copytree(registry.COMPETITIONS_DIR / "spaceship-titanic", root / new_id)
    text = (folder / "competition.yaml").read_text().replace("id: spaceship-titanic\n", f"id: {new_id}\n", 1)
    (folder / "competition.yaml").write_text(text.replace("deadline: null\ndeadline_source: declared\n", lines, 1))
    return folder


def test_a_declared_deadline_wins_over_the_leaderboards_and_says_whose_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _declare(tmp_path, "by-board", "")
    _declare(tmp_path, "by-kaggle", "deadline: 2023-03-01\ndeadline_source: kaggle\n")
    _declare(tmp_path, "by-author", "deadline: '2023-04-02'\n")
    monkeypatch.setenv(declarations.PATH_VARIABLE, str(tmp_path))
    board = registry.get("by-board")
    assert board.leaderboard is not None and board.leaderboard.last_submission == "2024-06-14 13:45:52"
    assert (board.deadline, board.deadline_source) == (date(2024, 6, 14), DEADLINE_SOURCES[2])
    assert (registry.get("by-kaggle").deadline, registry.get("by-kaggle").deadline_source) == (
        date(2023, 3, 1),
        "kaggle",
    )
    assert (registry.get("by-author").deadline, registry.get("by-author").deadline_source) == (
        date(2023, 4, 2),
        "declared",
    )
    chosen = select([registry.get(c) for c in ("by-board", "by-kaggle", "by-author")], date(2023, 3, 15), "mine")
    assert chosen.ids == ["by-board", "by-author"] and [c.id for c in chosen.ended_before] == ["by-kaggle"]
    assert "deadlines: 1 declared, 1 from the last submission on the private leaderboard" in chosen.sentence()


@pytest.mark.parametrize(("lines", "says"), [("deadline: 2021-02-30\n", "a date in it is not a day of the calendar (day is out of range"),
                                             ("deadline: 2021-11-03 12:00:00\n", "is not a day. Fix: write it as YYYY-MM-DD"),
                                             ("deadline: soon\n", "deadline 'soon' is not a day"),
                                             ("deadline: '2021-02-30'\n", "deadline '2021-02-30' is not a day"),
                                             ("deadline: 2021-11-03\ndeadline_source: a friend\n",
                                              "deadline_source must be kaggle (Kaggle's metadata) or declared"),
                                             ("deadline_source: kaggle\n", "names the source of no deadline")])  # fmt: skip
def test_a_deadline_that_cannot_be_read_is_refused_in_one_line(
    lines: str, says: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _declare(tmp_path, "odd-deadline", lines)
    monkeypatch.setenv(declarations.PATH_VARIABLE, str(tmp_path))
    with pytest.raises(RegistryError) as refused:
        registry.get("odd-deadline")
    assert says in str(refused.value) and "\n" not in str(refused.value)


def test_a_leaderboard_file_from_before_the_dates_reads_and_has_no_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _declare(tmp_path, "old-board", "")
    figures = json.loads((folder / "leaderboard.json").read_text())
    del figures["last_submission"]
    (folder / "leaderboard.json").write_text(json.dumps(figures))
    assert Leaderboard.from_dict(figures).last_submission is None
    assert "last_submission" not in Leaderboard.from_dict(figures).to_dict()  # written as it always was
    dated = {**figures, "last_submission": "2022-01-02 03:04:05"}
    assert Leaderboard.from_dict(dated).to_dict() == dated
    monkeypatch.setenv(declarations.PATH_VARIABLE, str(tmp_path))
    assert (registry.get("old-board").deadline, registry.get("old-board").deadline_source) == (None, None)
    listed = podium(capsys, "list", "--split", "user", "--ended-after", "2020-01-01")
    assert listed.returncode == 2 and "0 ended on or before it, 1 without a deadline" in listed.stderr
