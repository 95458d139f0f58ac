"""`podium report` beyond the published table, from real runs: one `podium run` of two agents with three
seeds each on the practice suite, then pass@k, the paired comparison, each competition's runs, cost,
CSV and the HTML file, checked against the run records; labels by settings; time scaling from
snapshots graded against prepared answers; grading reports placed on the leaderboard."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from podium import registry
from podium.records import compute_profile
from podium.report import build_report, load_inputs
from podium.report.html import pointer
from podium.report.stats import pass_at_k

PRACTICE = registry.split_ids("practice")


def _podium(*args: str, env: dict[str, str] | None = None, timeout: int = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "podium", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "OMP_NUM_THREADS": "1", **(env or {})},
    )


@pytest.fixture(scope="module")
def two_agents(tmp_path_factory: pytest.TempPathFactory) -> Path:
    runs = tmp_path_factory.mktemp("runs")
    result = _podium(
        "run", "--agent", "dummy", "--agent", "baseline", "--seeds", "3", "--run-group", "exp",
        "--time-limit", "2m", "--workers", "2", "--runs-dir", str(runs), "--cpus", "1", "--memory", "2G",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert "== A = dummy (exp-dummy) against B = baseline (exp-baseline) ==" in result.stdout
    assert "pass@k" in result.stdout
    return runs


def _records(runs: Path, group: str) -> dict[tuple[str, int], dict[str, Any]]:
    out = {}
    for path in (runs / group).glob("*/*/record.json"):
        record = json.loads(path.read_text())
        out[(record["competition_id"], record["seed"])] = record
    return out


def _report(two_agents: Path, *more: str) -> dict[str, Any]:
    result = _podium(
        "report", str(two_agents / "exp-dummy"), str(two_agents / "exp-baseline"), "--format", "json", *more
    )
    assert result.returncode == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_two_agents_run_in_their_own_groups_and_the_report_compares_them(two_agents: Path) -> None:
    report = _report(two_agents)
    assert report["schema"] == "podium-report/3"
    assert list(report["labels"]) == ["dummy (exp-dummy)", "baseline (exp-baseline)"]
    for label, group in (("dummy (exp-dummy)", "exp-dummy"), ("baseline (exp-baseline)", "exp-baseline")):
        records = _records(two_agents, group)
        assert len(records) == 3 * len(PRACTICE)
        block = report["labels"][label]["splits"]["practice"]["pass_at_k"]
        assert block["k"] == [1, 2, 3] and block["competitions"] == len(PRACTICE)
        for k in (1, 2, 3):
            expected = 0.0
            for cid in PRACTICE:
                grades = [records[(cid, s)]["grade"] for s in range(3)]
                wins = sum(g["gold_medal"] or g["silver_medal"] or g["bronze_medal"] for g in grades)
                expected += pass_at_k(3, wins, k)
            assert block["curves"]["any_medal"][k - 1] == pytest.approx(expected / len(PRACTICE) * 100)
        for comp in report["labels"][label]["competitions"]:
            for run in comp["runs"]:
                record = records[(comp["competition_id"], run["seed"])]
                assert run["score"] == record["grade"]["score"] and run["percentile"] == record["grade"]["percentile"]
                assert run["rank"] == record["grade"]["rank"] and run["runtime_s"] == record["agent_result"]["seconds"]
                assert run["exit_code"] == record["agent_result"]["exit_code"] and run["status"] == "finished"
                assert Path(run["run_dir"]) == two_agents / group / comp["competition_id"] / str(run["seed"])
            assert comp["metric"] == registry.get(comp["competition_id"]).metric.name
        (profile,) = {compute_profile(r.get("compute")) for r in records.values()}
        assert profile is not None and profile.startswith("1 CPU, 2 GiB"), profile
        assert report["labels"][label]["compute"]["profile"] == report["compute"]["profiles"][label] == profile
        seconds = [r["compute"]["used"]["cpu_seconds"] for r in records.values()]
        assert report["labels"][label]["compute"]["used"]["cpu_hours"] == pytest.approx(
            sum(s for s in seconds if s is not None) / 3600
        )
        cost = report["labels"][label]["cost"]
        assert cost["runs"] == 3 * len(PRACTICE) and cost["cost_usd"] is None and cost["gpu_hours"] == 0
        assert cost["runtime_hours"] == pytest.approx(
            sum(r["agent_result"]["seconds"] for r in records.values()) / 3600
        )
    (comparison,) = report["comparisons"]
    assert (comparison["a"], comparison["b"]) == ("dummy (exp-dummy)", "baseline (exp-baseline)")
    medals = comparison["values"]["any_medal"]
    baseline = report["labels"]["baseline (exp-baseline)"]["splits"]["practice"]["published"]["metrics"]
    assert medals["competitions"] == len(PRACTICE)
    assert medals["mean_b"] == pytest.approx(baseline["any_medal_percentage"]["mean"])
    assert medals["mean_difference"] < 0 and medals["bootstrap"]["upper"] < 0, "the baseline wins medals, dummy none"
    assert medals["sign_test"]["wins"] == 0 and medals["permutation"]["method"] == "exact"


def test_the_text_report_fits_100_columns_and_has_every_section(two_agents: Path) -> None:
    result = _podium("report", str(two_agents / "exp-dummy"), str(two_agents / "exp-baseline"))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 100, max(lines, key=len)
    assert any(line.startswith("Compute: 1 CPU, 2 GiB") and line.endswith("(every label)") for line in lines)
    for heading in (
        "== practice: 7 competitions ==",
        "== pass@k: any medal",
        "== A = dummy (exp-dummy) against B = baseline (exp-baseline) ==",
        "== Cost ==",
        "-- baseline (exp-baseline)",
    ):
        assert any(line.startswith(heading) for line in lines), heading


def test_the_csv_has_one_row_per_run_with_the_json_values(two_agents: Path) -> None:
    report = _report(two_agents)
    result = _podium("report", str(two_agents / "exp-dummy"), str(two_agents / "exp-baseline"), "--format", "csv")
    assert result.returncode == 0, result.stderr
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert len(rows) == 2 * 3 * len(PRACTICE)
    by_key = {(r["label"], r["competition_id"], int(r["seed"])): r for r in rows}
    for label, data in report["labels"].items():
        for comp in data["competitions"]:
            for run in comp["runs"]:
                row = by_key[(label, comp["competition_id"], run["seed"])]
                assert float(row["score"]) == run["score"] and row["metric"] == comp["metric"]
                assert row["valid_submission"] == ("true" if run["valid_submission"] else "false")


def _resolve(document: Any, path: str) -> Any:
    for part in path.split("/")[1:]:
        key = part.replace("~1", "/").replace("~0", "~")
        document = document[int(key)] if isinstance(document, list) else document[key]
    return document


def test_the_html_file_is_self_contained_and_its_numbers_are_the_json(two_agents: Path, tmp_path: Path) -> None:
    from html.parser import HTMLParser

    out = tmp_path / "site" / "report.html"
    result = _podium("report", str(two_agents / "exp-dummy"), str(two_agents / "exp-baseline"), "--output", str(out))
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    fetched = re.findall(
        r"""(?:src|href)\s*=\s*["']?(?:https?:)?//|url\(\s*["']?(?:https?:)?//|<link\b|@import""", text
    )
    assert not fetched, f"the file fetches {fetched}"
    assert text.count("<svg") >= 2  # pass@k and the heatmap (no cost figure without costs or GPUs)

    class Cells(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.cells: list[dict[str, str | None]] = []
            self.links: list[str] = []
            self.embedded = ""
            self._in_script = False

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            found = dict(attrs)
            if "data-json-path" in found:
                self.cells.append(found)
            if tag == "a" and found.get("href", "").endswith("/"):
                self.links.append(str(found["href"]))
            self._in_script = tag == "script" and found.get("id") == "podium-report"

        def handle_data(self, data: str) -> None:
            if self._in_script:
                self.embedded += data

        def handle_endtag(self, tag: str) -> None:
            self._in_script = False

    parser = Cells()
    parser.feed(text)
    embedded = json.loads(parser.embedded)
    report = _report(two_agents)
    assert embedded["labels"].keys() == report["labels"].keys()
    assert len(parser.cells) > 200
    for cell in parser.cells:
        value = _resolve(report, str(cell["data-json-path"]))
        assert json.loads(str(cell["data-value"])) == value, cell
    assert len(parser.links) == 2 * 3 * len(PRACTICE)
    for link in parser.links:  # relative to the HTML file's folder, and each leads to a run folder
        assert not link.startswith("/") and (out.parent / link / "record.json").is_file(), link


def test_runs_of_several_groups_are_pooled_by_their_settings(two_agents: Path, tmp_path: Path) -> None:
    copy = tmp_path / "runs"
    shutil.copytree(two_agents / "exp-dummy", copy / "again-dummy")
    shutil.copytree(two_agents / "exp-dummy", copy / "exp-dummy")
    inputs = load_inputs([str(copy / "again-dummy"), str(copy / "exp-dummy")], by=["agent", "time_limit"])
    (only,) = inputs
    assert only.label == "dummy / 2m" and len(only.runs) == 2 * 3 * len(PRACTICE)
    report = build_report(inputs, split="practice")
    assert report["labels"]["dummy / 2m"]["splits"]["practice"]["published"]["num_seeds_averaged"] == 6
    inputs = load_inputs([str(two_agents)], by=["agent", "hardware", "description"])
    assert sorted(i.label for i in inputs) == ["baseline / 1 CPU / original", "dummy / 1 CPU / original"]
    for args, message in (
        (["--by", "agent,colour"], "unknown field(s) ['colour']"),
        (["--by", "agent", "--label", "x"], "--label and --by both name the labels"),
        (["--format", "html"], "--format html writes one file"),
        (["--hours", "1,2"], "--hours sets the time points of --time-scaling"),
        (["--compare", "a,b"], "give two different labels as A,B"),
    ):
        result = _podium("report", str(two_agents), *args)
        assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr, result.stderr


def _snapshot(run: Path, seconds: float, name: str, frame_text: str) -> None:
    folder = run / "logs" / "snapshots"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(frame_text)
    with open(folder / "snapshots.jsonl", "a") as index:
        index.write(json.dumps({"elapsed_s": seconds, "file": name, "source": name, "metric": None}) + "\n")


def test_time_scaling_grades_the_best_so_far_snapshot_at_each_point(tmp_path: Path, spaceship_data_dir: Path) -> None:
    runs = tmp_path / "runs"
    result = _podium(
        "run", "--agent", "dummy", "--competitions", "spaceship-titanic", "--seeds", "2", "--time-limit", "200s",
        "--data-dir", str(spaceship_data_dir), "--runs-dir", str(runs),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    public, private = (
        spaceship_data_dir / "spaceship-titanic" / "prepared" / "public",
        spaceship_data_dir / "spaceship-titanic" / "prepared" / "private",
    )
    sample = (public / "sample_submission.csv").read_text()
    perfect = (private / "test.csv").read_text()
    first = runs / "default" / "spaceship-titanic" / "0"
    _snapshot(first, 10, "0000010s-sample.csv", sample)
    _snapshot(first, 100, "0000100s-node0001.csv", perfect)
    _snapshot(first, 150, "../escape.csv", perfect)  # a name that leaves the folder is no snapshot
    (first / "logs" / "snapshots" / "snapshots.jsonl").open("a").write("{torn\n")
    split = tmp_path / "one.txt"
    split.write_text("spaceship-titanic\n")
    result = _podium(
        "report", str(runs / "default"), "--time-scaling", "--hours", f"{5 / 3600},{50 / 3600},{120 / 3600}",
        "--data-dir", str(spaceship_data_dir), "--format", "json", "--split", str(split),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    scaling = json.loads(result.stdout)["time_scaling"]
    (label,) = scaling["labels"]
    data = scaling["labels"][label]
    assert data["runs"] == 2 and data["runs_with_snapshots"] == 1
    medals = [p["any_medal_percentage"] for p in data["points"]]
    valid = [p["valid_submissions_percentage"] for p in data["points"]]
    # seed 0: nothing at 5 s, the sample at 50 s, the perfect file at 120 s; seed 1 (no snapshots):
    # its final (sample-like) submission from its end, a fraction of a second in
    assert medals == [0.0, 0.0, 50.0] and valid == [50.0, 100.0, 100.0]
    perfect_percentile = data["points"][2]["mean_percentile"]
    assert perfect_percentile > data["points"][1]["mean_percentile"]
    missing = _podium(
        "report",
        str(runs / "default"),
        "--time-scaling",
        "--data-dir",
        str(tmp_path / "nothing"),
        "--split",
        str(split),
    )
    assert missing.returncode == 2 and "prepare the competition" in missing.stderr, missing.stderr


def test_a_grading_report_is_placed_on_the_leaderboard(tmp_path: Path) -> None:
    comp = registry.get("spooky-author-identification")
    board = comp.leaderboard
    assert board is not None
    score = board.bronze + (board.median - board.bronze) / 2
    report = {
        "competition_reports": [
            {"competition_id": comp.id, "score": score, "submission_exists": True, "valid_submission": True,
             "above_median": True, "gold_medal": False, "silver_medal": False, "bronze_medal": False,
             "is_lower_better": True}
        ]
    }  # fmt: skip
    path = tmp_path / "grading_report.json"
    path.write_text(json.dumps(report))
    (label,) = load_inputs([str(path)])
    (run,) = label.runs
    placement = board.place(score)
    assert run["percentile"] == placement.percentile and run["rank"] == placement.rank
    assert run["metric"] == comp.metric.name and run["higher_is_better"] is False
    assert pointer("labels", "a/b~c", 0) == "/labels/a~1b~0c/0"


NUMBER = re.compile(r"-?\d+(?:\.(\d+))?")


@pytest.mark.docs_screenshot("report.png")
def test_the_html_file_renders_offline_in_chromium_with_the_json_numbers(
    two_agents: Path, tmp_path: Path, page: Any
) -> None:
    """Opened from disk in headless chromium: it asks for nothing but itself, its figures have a size, and
    every number cell shows (rounded) the value at its JSON pointer in the embedded report."""
    out = tmp_path / "report.html"
    result = _podium("report", str(two_agents / "exp-dummy"), str(two_agents / "exp-baseline"), "--output", str(out))
    assert result.returncode == 0, result.stderr
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.goto(out.as_uri())
    assert requested == [out.as_uri()], requested
    assert page.title()
    sizes = page.eval_on_selector_all(
        ".figure svg", "nodes => nodes.map(n => [n.getBoundingClientRect().width, n.getBoundingClientRect().height])"
    )
    assert len(sizes) >= 2 and all(w > 100 and h > 100 for w, h in sizes), sizes
    embedded = json.loads(page.eval_on_selector("#podium-report", "n => n.textContent"))
    assert embedded == _report(two_agents)
    cells = page.eval_on_selector_all(
        "[data-json-path]",
        "nodes => nodes.map(n => [n.dataset.jsonPath, n.dataset.value, n.innerText, n.dataset.scale || '1'])",
    )
    assert len(cells) > 200
    for path, value, shown, scale in cells:
        expected = _resolve(embedded, path)
        assert json.loads(value) == expected, (path, value)
        if isinstance(expected, (int, float)) and not isinstance(expected, bool):
            first = NUMBER.search(shown)
            assert first is not None, (path, shown)
            decimals = len(first.group(1) or "")
            shown_value = float(first.group(0)) / float(scale)  # a percentile is shown in %, held as a fraction
            assert abs(shown_value - expected) <= (0.5 * 10**-decimals + 1e-9) / float(scale), (path, shown, expected)
    runs = page.eval_on_selector_all("table.runs a[href$='/']", "links => links.map(a => a.href)")
    assert len(runs) == 2 * 3 * len(PRACTICE)
    assert all(Path(link.removeprefix("file://")).joinpath("record.json").is_file() for link in runs), runs[:3]


def test_several_agents_on_named_competitions_are_compared_on_those(tmp_path: Path) -> None:
    """`podium run --agent A --agent B --competitions X` (the seed's table for a few competitions): the
    report across the agents covers the competitions named, not a whole split they did not run. The two agents
    declare different resources (dummy 1 CPU and 1 GiB, baseline 2 CPUs and 4 GiB): every run gets the largest, so
    the comparison is between runs of one compute profile and is not refused."""
    result = _podium(
        "run", "--agent", "dummy", "--agent", "baseline", "--competitions", "practice-wine", "--run-group", "few",
        "--time-limit", "2m", "--runs-dir", str(tmp_path / "runs"),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert "no report across the agents" not in result.stderr
    assert "every run gets the same for a fair comparison: 2 CPUs, 4G, no GPU" in result.stderr
    records = [json.loads(p.read_text()) for p in (tmp_path / "runs").glob("few-*/*/*/record.json")]
    assert len(records) == 2 and {r["limits"]["memory_bytes"] for r in records} == {4 << 30}
    assert "== A = dummy (few-dummy) against B = baseline (few-baseline) ==" in result.stdout
    assert "On the 1 competitions both ran" in result.stdout
