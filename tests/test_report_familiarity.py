"""`podium report --familiarity`: familiarity against performance per competition, with Pearson's r and a
bootstrap interval, checked against hand-written references (scipy's pearsonr, a loop-written bootstrap)
on grading reports of the practice suite."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats as scipy_stats

from podium import registry
from podium.cli import main
from podium.report import build_report, load_inputs
from podium.report.contamination import position
from podium.report.stats import pearson

PRACTICE = registry.split_ids("practice")


def test_position_reads_the_same_for_either_direction() -> None:
    assert position(0.7, 0.5, 0.9) == pytest.approx(0.5)  # higher is better
    assert position(0.6, 1.0, 0.2) == pytest.approx(0.5)  # lower is better
    assert position(1.4, 1.0, 0.2) == pytest.approx(-0.5)  # worse than the sample submission, unclipped
    assert position(None, 1.0, 0.2) == 0.0
    assert position(0.3, 0.5, 0.5) is None and position(0.3, None, 0.9) is None


def test_pearson_and_its_bootstrap_match_references() -> None:
    x = [0.1, 0.4, 0.35, 0.8, 0.55, 0.2, 0.9]
    y = [0.0, 0.3, 0.5, 0.6, 0.2, 0.1, 1.0]
    got = pearson(x, y, resamples=500, seed=3)
    assert got["r"] == pytest.approx(scipy_stats.pearsonr(x, y).statistic)
    rng = np.random.default_rng(3)
    picks = rng.integers(0, len(x), size=(500, len(x)))
    replicates = []
    for row in picks:
        xs, ys = np.asarray(x)[row], np.asarray(y)[row]
        if np.std(xs) > 0 and np.std(ys) > 0:
            replicates.append(np.corrcoef(xs, ys)[0, 1])
    low, high = np.percentile(replicates, [2.5, 97.5])
    assert got["bootstrap"]["lower"] == pytest.approx(low) and got["bootstrap"]["upper"] == pytest.approx(high)
    assert got["bootstrap"]["degenerate"] == 500 - len(replicates)
    assert pearson(x[:2], y[:2])["r"] is None and pearson([1, 1, 1], [1, 2, 3])["r"] is None


def _anchors(cid: str) -> tuple[float, float]:
    comp = registry.get(cid)
    assert comp.sample_submission_score is not None and comp.leaderboard is not None
    return comp.sample_submission_score, comp.leaderboard.gold


@pytest.fixture
def inputs(tmp_path: Path) -> tuple[Path, Path, dict[str, float]]:
    """A grading report of the practice suite (one competition without a valid submission) and a
    familiarity file covering all but one of its competitions."""
    reports, expected = [], {}
    for i, cid in enumerate(PRACTICE):
        sample, gold = _anchors(cid)
        share = [0.25, 0.5, 1.5, -0.5, 0.75, 0.0, 0.4][i]  # 1.5 and -0.5 are clipped to 1 and 0
        valid = i != 5
        reports.append(
            {"competition_id": cid, "score": sample + share * (gold - sample) if valid else None,
             "submission_exists": valid, "valid_submission": valid, "gold_medal": False, "silver_medal": False,
             "bronze_medal": False, "any_medal": False, "above_median": False}
        )  # fmt: skip
        expected[cid] = min(1.0, max(0.0, share)) if valid else 0.0
    grading = tmp_path / "agent.json"
    grading.write_text(json.dumps({"competition_reports": reports}))
    familiar = {cid: 0.1 + 0.05 * i for i, cid in enumerate(PRACTICE[:-1])}
    data = {
        "schema": "podium-familiarity/2", "model": {"kind": "fake", "file": "m.gguf"}, "samples": 1000, "seed": 0,
        "definition": "mean next-token probability",
        "competitions": [{"competition_id": cid, "familiarity": f} for cid, f in familiar.items()],
    }  # fmt: skip
    path = tmp_path / "familiarity.json"
    path.write_text(json.dumps(data))
    return grading, path, {cid: expected[cid] for cid in familiar}


def test_the_report_sets_familiarity_against_performance(inputs: tuple[Path, Path, dict[str, float]]) -> None:
    grading, familiarity, expected = inputs
    report = build_report(load_inputs([str(grading)], (), []), split="practice", familiarity=familiarity)
    section = report["familiarity"]
    block = section["labels"]["agent"]
    got = {c["competition_id"]: c["performance"] for c in block["competitions"]}
    assert got == pytest.approx(expected)
    assert section["without_familiarity"] == [PRACTICE[-1]]
    xs = [c["familiarity"] for c in block["competitions"]]
    assert block["pearson"]["r"] == pytest.approx(scipy_stats.pearsonr(xs, list(got.values())).statistic)
    assert block["pearson"]["bootstrap"]["lower"] <= block["pearson"]["r"] <= block["pearson"]["bootstrap"]["upper"]
    unclipped = {c["competition_id"]: c["performance_unclipped"] for c in block["competitions"]}
    assert unclipped[PRACTICE[2]] == pytest.approx(1.5) and unclipped[PRACTICE[3]] == pytest.approx(-0.5)


def test_a_compared_pair_sets_its_difference_against_familiarity(
    inputs: tuple[Path, Path, dict[str, float]], tmp_path: Path
) -> None:
    grading, familiarity, expected = inputs
    data = json.loads(grading.read_text())
    for report in data["competition_reports"]:  # the second label: every run at the sample submission's score
        report["score"] = _anchors(report["competition_id"])[0]
        report["valid_submission"] = report["submission_exists"] = True
    other = tmp_path / "hidden.json"
    other.write_text(json.dumps(data))
    report = build_report(load_inputs([str(grading), str(other)], (), []), split="practice", familiarity=familiarity)
    (diff,) = report["familiarity"]["differences"]
    assert (diff["a"], diff["b"]) == ("agent", "hidden")
    got = {r["competition_id"]: r["difference"] for r in diff["competitions"]}
    assert got == pytest.approx(expected), "B sits at 0 everywhere, so A - B is A's performance"
    xs = [r["familiarity"] for r in diff["competitions"]]
    assert diff["pearson"]["r"] == pytest.approx(scipy_stats.pearsonr(xs, list(got.values())).statistic)


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = main(["report", *argv])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured.out


def test_text_markdown_and_html_show_it(
    inputs: tuple[Path, Path, dict[str, float]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    grading, familiarity, _ = inputs
    text = _cli(capsys, str(grading), "--split", "practice", "--familiarity", str(familiarity))
    assert "== Familiarity against performance ==" in text and "Pearson r = " in text
    markdown = _cli(capsys, str(grading), "--split", "practice", "--familiarity", str(familiarity), "--format", "md")
    assert "## Familiarity against performance" in markdown and "| competition | familiarity |" in markdown
    page = tmp_path / "report.html"
    _cli(capsys, str(grading), "--split", "practice", "--familiarity", str(familiarity), "--output", str(page))
    html = page.read_text()
    assert 'id="familiarity"' in html and html.count("<svg") >= 2
    assert "familiarity (mean next-token probability)" in html
    script = html.split('<script type="application/json" id="podium-report">')[1].split("</script>")[0]
    data: dict[str, Any] = json.loads(script)
    r = data["familiarity"]["labels"]["agent"]["pearson"]["r"]
    assert f'data-json-path="/familiarity/labels/agent/pearson/r" data-value="{json.dumps(r)}"' in html


def test_a_file_that_is_not_familiarity_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"schema": "something else"}))
    grading = tmp_path / "agent.json"
    grading.write_text(json.dumps({"competition_reports": []}))
    assert main(["report", str(grading), "--familiarity", str(other)]) == 2
    assert "not a podium-familiarity/2 file" in capsys.readouterr().err
    # a file of the first schema pooled podium's own descriptions (the floor) into the familiarity: refused
    other.write_text(json.dumps({"schema": "podium-familiarity/1", "competitions": []}))
    assert main(["report", str(grading), "--familiarity", str(other)]) == 2
    assert "run `podium familiarity` again" in capsys.readouterr().err
