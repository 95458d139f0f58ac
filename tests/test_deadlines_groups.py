"""``--ended-after`` on ``run`` and ``report`` (issue 42 §4): a run group records its selection in ``group.json``, a
rerun of the same command resumes it, another selection is refused, and every report of it names the cutoff; a
report given ``--ended-after`` keeps only the runs of the competitions that ended after it."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from podium import declarations, registry
from podium.cli import main
from podium.deadlines import check_group
from podium.errors import UsageError
from test_aggregate import fake_report, report_json, write_grading_report

ROOT = Path(__file__).resolve().parents[1]


def podium(*args: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != declarations.PATH_VARIABLE}
    return subprocess.run([sys.executable, "-m", "podium", *args], capture_output=True, text=True, timeout=300,
                          env={**environ, "OMP_NUM_THREADS": "1"})  # fmt: skip


def _declare(root: Path, new_id: str, deadline: str) -> None:
    """spaceship-titanic under another id, with Kaggle's deadline ``deadline`` (its checksums left behind)."""
    folder = shutil.copytree(
        registry.COMPETITIONS_DIR / "spaceship-titanic", root / new_id, ignore=shutil.ignore_patterns("checksums.json")
    )
    text = (folder / "competition.yaml").read_text().replace("id: spaceship-titanic\n", f"id: {new_id}\n", 1)
    text = text.replace(
        "deadline: null\ndeadline_source: declared\n", f"deadline: {deadline}\ndeadline_source: kaggle\n"
    )
    (folder / "competition.yaml").write_text(text)


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A folder of two declarations, one that ended after 2023-01-01 and one before, the fresh one prepared, and
    ``podium run --ended-after 2023-01-01`` over them with the dummy agent, in the group ``fresh``."""
    from podium.fixtures import make_raw

    root = tmp_path_factory.mktemp("fresh")
    mine = root / "mine"
    mine.mkdir()
    _declare(mine, "fresh-one", "2024-05-01")
    _declare(mine, "old-one", "2019-01-01")
    os.environ[declarations.PATH_VARIABLE] = str(mine)
    try:
        raw = make_raw(registry.get("fresh-one"), root / "raw")
    finally:
        del os.environ[declarations.PATH_VARIABLE]
    dirs = ["--competitions-dir", str(mine)]
    prepared = podium("prepare", "-c", "fresh-one", "--from", str(raw), "--data-dir", str(root / "data"), *dirs)
    assert prepared.returncode == 0, prepared.stderr
    command = ["run", "--agent", "dummy", "--split", "user", "--time-limit", "2m", "--data-dir", str(root / "data"),
               "--runs-dir", str(root / "runs"), "--run-group", "fresh", *dirs]  # fmt: skip
    ran = podium(*command, "--ended-after", "2023-01-01")
    assert ran.returncode == 0, ran.stderr[-3000:]
    return {"root": root, "mine": mine, "dirs": dirs, "command": command, "ran": ran, "group": root / "runs" / "fresh"}


def test_the_group_records_the_cutoff_and_what_it_selected(fresh: dict[str, Any]) -> None:
    said = fresh["ran"].stderr.splitlines()[0]
    assert said == (
        "podium: --ended-after 2023-01-01: 1 of the 2 competitions of split user ended after it (deadlines: 1 from "
        "Kaggle's metadata); left out: 1 that ended on or before it, 0 without a deadline"
    )
    document = json.loads((fresh["group"] / "group.json").read_text())
    record = document["ended_after"]
    assert {k: record[k] for k in ("cutoff", "from", "competitions", "ended_before", "without_deadline")} == {
        "cutoff": "2023-01-01",
        "from": "split user",
        "competitions": ["fresh-one"],
        "ended_before": 1,
        "without_deadline": [],
    }
    assert record["deadlines"] == {"fresh-one": {"deadline": "2024-05-01", "source": "kaggle"}}
    assert document["competitions"] == ["fresh-one"]
    assert sorted(p.name for p in fresh["group"].iterdir() if p.is_dir()) == ["fresh-one"]  # old-one never ran


def test_the_groups_own_report_names_the_cutoff_in_its_header(fresh: dict[str, Any]) -> None:
    markdown = (fresh["group"] / "report.md").read_text()
    header = markdown.split("## ")[0]
    assert "competition(s) of split user whose deadline is after 2023-01-01 (`--ended-after`" in header
    assert "deadlines: 1 from Kaggle's metadata. Left out: 1 that ended on or before it" in header
    assert json.loads((fresh["group"] / "report.json").read_text())["ended_after"]["cutoff"] == "2023-01-01"


@pytest.mark.parametrize("fmt", ["text", "md", "json", "html"])
def test_podium_report_names_the_groups_cutoff_in_every_format(fresh: dict[str, Any], fmt: str, tmp_path: Path) -> None:
    output = tmp_path / f"report.{fmt}"
    result = podium("report", str(fresh["group"]), "--format", fmt, "--output", str(output), *fresh["dirs"])
    assert result.returncode == 0, result.stderr
    text = output.read_text()
    if fmt == "json":
        section = json.loads(text)["ended_after"]
        assert section["cutoff"] is None and section["left_out"] is None  # no --ended-after of its own
        assert [(g["cutoff"], g["from"], g["competitions"]) for g in section["groups"]] == [
            ("2023-01-01", "split user", 1)
        ]
        assert section["competitions"] == [
            {"competition_id": "fresh-one", "deadline": "2024-05-01", "deadline_source": "kaggle"}
        ]
        return
    head = text.split("==")[0] if fmt == "text" else text.split("## ")[0] if fmt == "md" else text.split("<nav>")[0]
    assert "Run group dummy (fresh) was selected by --ended-after 2023-01-01 of split user" in " ".join(head.split())


def test_a_rerun_resumes_the_recorded_selection_whatever_was_declared_since(fresh: dict[str, Any]) -> None:
    _declare(fresh["mine"], "fresh-two", "2024-06-01")
    try:
        again = podium(*fresh["command"], "--ended-after", "2023-01-01")
    finally:
        shutil.rmtree(fresh["mine"] / "fresh-two")
    assert again.returncode == 0, again.stderr[-3000:]
    assert (
        "podium: run group 'fresh': resuming its selection of " in again.stderr
        and "the 1 competition(s) that ended after 2023-01-01; today the same cutoff would also select fresh-two, "
        "which the group keeps out"
        in again.stderr
    )
    assert "1 of 1 run(s) already finished; running 0" in again.stderr
    assert json.loads((fresh["group"] / "group.json").read_text())["ended_after"]["competitions"] == ["fresh-one"]


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--ended-after", "2022-01-01"], "was selected by --ended-after 2023-01-01 of split user; this command asks "
                                          "--ended-after 2022-01-01 of split user. Fix: pass --ended-after 2023-01-01"),
        ([], "this command names no cutoff, so it would add competitions the cutoff left out. Fix: pass --ended-after "
             "2023-01-01 to resume it, or --run-group NAME"),
    ],
)  # fmt: skip
def test_another_selection_in_the_group_is_refused_in_one_line(
    fresh: dict[str, Any], flags: list[str], says: str
) -> None:
    before = (fresh["group"] / "group.json").read_bytes()
    refused = podium(*fresh["command"], *flags)
    lines = [line for line in refused.stderr.splitlines() if not line.startswith("podium: --ended-after")]
    assert refused.returncode == 2 and len(lines) == 1 and says in lines[0], refused.stderr
    assert (fresh["group"] / "group.json").read_bytes() == before


def test_a_cutoff_on_a_group_made_without_one_is_refused() -> None:
    asked = {"cutoff": "2023-01-01", "from": "split all", "competitions": ["a"]}
    with pytest.raises(
        UsageError, match=r"made without --ended-after.*--run-group NAME to start a group for --ended-after 2023-01-01"
    ):
        check_group({"settings": {}}, asked, "run group 'g'", used=True)
    check_group(None, asked, "run group 'g'", used=False)  # a new group takes the selection
    check_group({"settings": {}}, None, "run group 'g'", used=True)  # and a group without one stays so


def _grading_report(path: Path, ids: list[str]) -> Path:
    """Two seeds of every competition of ``ids``, as MLE-bench's grading report holds them."""
    rng = random.Random(3)
    return write_grading_report(path, [fake_report(cid, rng) for cid in ids for _ in range(2)])


def test_report_ended_after_keeps_the_runs_of_the_fresh_competitions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    every = registry.split_ids("split75")
    path = _grading_report(tmp_path / "mlebench_grading_report.json", every)
    narrowed = report_json(capsys, str(path), "--split", "all", "--ended-after", "2022-01-01")
    fresh = [cid for cid in every if (registry.get(cid).deadline or date.min) > date(2022, 1, 1)]
    assert narrowed["splits"] == {"split75": {"title": "all (split75), ended after 2022-01-01", "competitions": 17}}
    assert len(fresh) == 17
    label = narrowed["labels"]["mlebench_grading_report"]
    assert label["runs"] == 34 and sorted({c["competition_id"] for c in label["competitions"]}) == fresh
    section = narrowed["ended_after"]
    assert section["cutoff"] == "2022-01-01" and section["groups"] == []
    assert sorted(section["left_out"]["ended_before"]) == sorted(set(every) - set(fresh))
    assert section["left_out"]["without_deadline"] == []
    # the same numbers as the report of those 17 competitions named as a split
    listed = tmp_path / "fresh.txt"
    listed.write_text("\n".join(fresh) + "\n")
    plain = report_json(capsys, str(path), "--split", str(listed))
    assert (
        plain["labels"]["mlebench_grading_report"]["splits"]["fresh"]["published"]
        == (label["splits"]["split75"]["published"])
    )
    assert main(["report", str(path), "--split", "all", "--ended-after", "2022-01-01"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "Fresh split: only the competitions whose deadline is after 2022-01-01 (--ended-after, a model's " in text
    assert "17 competition(s) of the runs kept; left out: 58 that ended on or before it" in text


def test_report_ended_after_that_leaves_no_run_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _grading_report(tmp_path / "old_grading_report.json", registry.split_ids("low"))
    assert main(["report", str(path), "--ended-after", "2023-01-01"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert "--ended-after 2023-01-01 leaves none of the runs: of their 22 competitions, 22 ended on or before it" in err
