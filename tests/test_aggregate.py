"""`podium report` held to the published MLE-bench aggregation.

``reference`` below is an independent, deliberately plain implementation of the published rules
(written from their description, not from podium's code): files in sorted path order, reports in
competition-id order within a file, seed i = a competition's i-th report, complete seeds unless
padded, percentages per seed, mean / SEM (scipy) / mean +- 1.96 SEM. Every comparison is exact (==).
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from podium import registry
from podium.cli import main
from podium.report import t_quantile

stats = pytest.importorskip("scipy.stats")

SPLITS = {"low": registry.split_ids("low"), "medium": registry.split_ids("medium"), "high": registry.split_ids("high")}
SPLITS["split75"] = registry.split_ids("split75")
KEYS = {
    "total_competitions": None,
    "submission_exists_percentage": ("submission_exists",),
    "valid_submissions_percentage": ("valid_submission",),
    "above_median_percentage": ("above_median",),
    "gold_medal_percentage": ("gold_medal",),
    "silver_medal_percentage": ("silver_medal",),
    "bronze_medal_percentage": ("bronze_medal",),
    "any_medal_percentage": ("gold_medal", "silver_medal", "bronze_medal"),
}


class Refused(Exception):
    """Where the published script raises."""


def reference(files: Sequence[Path], split: Sequence[str], *, num_seeds: int = -1, pad: bool = False) -> dict[str, Any]:
    ordered: list[dict[str, Any]] = []
    for name in sorted(str(f) for f in files):
        reports = json.loads(Path(name).read_text())["competition_reports"]
        ordered.extend(sorted(reports, key=lambda r: str(r["competition_id"])))
    columns = {cid: [r for r in ordered if r["competition_id"] == cid] for cid in split}
    lengths = [len(v) for v in columns.values()]
    if not pad and min(lengths) == 0:
        raise Refused("missing competitions")
    n = max(lengths) if pad else min(lengths)
    if n == 0:
        raise Refused("no reports")
    if num_seeds != -1:
        if num_seeds <= 0 or num_seeds > n:
            raise Refused("seeds")
        n = num_seeds
    table = []
    for i in range(n):
        seed = [columns[cid][i] if i < len(columns[cid]) else None for cid in split]
        row = {}
        for key, flags in KEYS.items():
            if flags is None:
                row[key] = float(len(seed))
            else:
                hits = sum(1 for r in seed if r is not None and any(r[f] for f in flags))
                row[key] = hits / len(seed) * 100
        table.append(row)
    metrics = {}
    for key in KEYS:
        values = [row[key] for row in table]
        mean = float(np.mean(values))
        sem = float(stats.sem(values, ddof=1)) if len(values) > 1 else 0.0
        metrics[key] = {
            "mean": mean,
            "ci_lower": mean - 1.96 * sem,
            "ci_upper": mean + 1.96 * sem,
            "standard_error": sem,
        }
    return {"num_seeds_averaged": n, "num_competitions_per_seed": len(split), "metrics": metrics}


def fake_report(cid: str, rng: random.Random) -> dict[str, Any]:
    exists = rng.random() < 0.9
    valid = exists and rng.random() < 0.85
    medal = rng.choice(["gold", "silver", "bronze", None, None, None]) if valid else None
    return {
        "competition_id": cid,
        "score": rng.random() if valid else None,
        "submission_exists": exists,
        "valid_submission": valid,
        "above_median": valid and (medal is not None or rng.random() < 0.3),
        "gold_medal": medal == "gold",
        "silver_medal": medal == "silver",
        "bronze_medal": medal == "bronze",
        "any_medal": medal is not None,
    }


def write_grading_report(path: Path, reports: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"total_runs": len(reports), "competition_reports": reports}))
    return path


def report_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    code = main(["report", *args, "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def report_error(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    code = main(["report", *args])
    out, err = capsys.readouterr()
    assert code == 2 and not out
    assert len(err.strip().splitlines()) == 1, err
    return err


@pytest.fixture
def seeds_files(tmp_path: Path) -> list[Path]:
    """Three files as MLE-bench run groups write them: a 2-seed file and two 1-seed files, shuffled, with extras."""
    rng = random.Random(7)
    every = SPLITS["split75"]
    two = [fake_report(c, rng) for c in every for _ in range(2)]
    rng.shuffle(two)
    one = [fake_report(c, rng) for c in every]
    rng.shuffle(one)
    other = [fake_report(c, rng) for c in every if rng.random() < 0.7]  # incomplete: some competitions only
    other.append(fake_report("not-a-benchmark-competition", rng))
    return [
        write_grading_report(tmp_path / "run-b" / "b_grading_report.json", two),
        write_grading_report(tmp_path / "run-a" / "a_grading_report.json", one),
        write_grading_report(tmp_path / "run-c" / "c_grading_report.json", other),
    ]


def test_several_seeds_every_split_matches_the_published_rules(
    capsys: pytest.CaptureFixture[str], seeds_files: list[Path]
) -> None:
    # passed out of path order, pooled under one label as the published script's --grading-reports
    args = [str(p) for p in reversed(seeds_files)]
    data = report_json(capsys, *args, "--label", "agent")
    cells = data["labels"]["agent"]["splits"]
    assert list(cells) == ["low", "medium", "high", "split75"]
    for split, ids in SPLITS.items():
        assert cells[split]["published"] == reference(seeds_files, ids), split
        assert cells[split]["published"]["num_seeds_averaged"] == 3  # the third file is incomplete
    assert report_json(capsys, *sorted(args), "--label", "agent") == data  # argument order does not matter


def test_file_order_decides_which_report_is_which_seed(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    split = tmp_path / "two.txt"
    split.write_text("x\ny\n")

    def rep(cid: str, gold: bool) -> dict[str, Any]:
        return {**fake_report(cid, random.Random(0)), "gold_medal": gold, "silver_medal": False, "bronze_medal": False}

    # by sorted path, x's reports are (gold, -, gold) and y's (-, gold): seeds {x gold, y -}, {x -, y gold}
    files = [
        write_grading_report(tmp_path / "3.json", [rep("x", True)]),
        write_grading_report(tmp_path / "1.json", [rep("y", False), rep("x", True)]),
        write_grading_report(tmp_path / "2.json", [rep("x", False), rep("y", True)]),
    ]
    data = report_json(capsys, *map(str, files), "--label", "L", "--split", str(split))
    published = data["labels"]["L"]["splits"]["two"]["published"]
    assert published == reference(files, ["x", "y"])
    gold = published["metrics"]["gold_medal_percentage"]
    assert published["num_seeds_averaged"] == 2
    assert gold == {"mean": 50.0, "ci_lower": 50.0, "ci_upper": 50.0, "standard_error": 0.0}  # hand-computed
    both = published["metrics"]["total_competitions"]
    assert both["mean"] == 2.0 and both["standard_error"] == 0.0


def test_hand_computed_numbers(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    split = tmp_path / "pair.txt"
    split.write_text("p\nq\n")
    no = dict.fromkeys(
        ["submission_exists", "valid_submission", "above_median", "gold_medal", "silver_medal", "bronze_medal"], False
    )
    valid = {**no, "submission_exists": True, "valid_submission": True}
    files = [  # seed 1: p gold, q valid -> any medal 50 %; seed 2: p silver, q silver -> 100 %
        write_grading_report(tmp_path / "s1.json", [{"competition_id": "p", **valid, "gold_medal": True},
                                                     {"competition_id": "q", **valid}]),
        write_grading_report(tmp_path / "s2.json", [{"competition_id": "q", **valid, "silver_medal": True},
                                                     {"competition_id": "p", **valid, "silver_medal": True}]),
    ]  # fmt: skip
    data = report_json(capsys, *map(str, files), "--label", "L", "--split", str(split))
    metrics = data["labels"]["L"]["splits"]["pair"]["published"]["metrics"]
    any_medal = metrics["any_medal_percentage"]
    assert any_medal["mean"] == 75.0 and any_medal["standard_error"] == 25.0  # sd 35.355 / sqrt 2
    assert any_medal["ci_lower"] == 75.0 - 49.0 and any_medal["ci_upper"] == 75.0 + 49.0
    assert metrics["silver_medal_percentage"]["mean"] == 50.0 and metrics["gold_medal_percentage"]["mean"] == 25.0
    assert metrics["valid_submissions_percentage"] == {
        "mean": 100.0,
        "ci_lower": 100.0,
        "ci_upper": 100.0,
        "standard_error": 0.0,
    }


def test_missing_competitions_with_and_without_pad_missing(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rng = random.Random(3)
    low = SPLITS["low"]
    gone = low[4:7]
    reports = [fake_report(c, rng) for c in low if c not in gone for _ in range(2)]
    reports += [fake_report(low[0], rng)]  # one competition with a third report
    path = write_grading_report(tmp_path / "partial.json", reports)
    err = report_error(capsys, str(path), "--split", "lite")
    assert all(cid in err for cid in gone) and "--pad-missing" in err and "partial" in err
    data = report_json(capsys, str(path), "--split", "low", "--pad-missing")
    published = data["labels"]["partial"]["splits"]["low"]["published"]
    assert published == reference([path], low, pad=True)
    assert published["num_seeds_averaged"] == 3  # the largest count, missing runs padded as failures
    view = data["labels"]["partial"]["splits"]["low"]["podium"]
    assert view["padded"] == 3 * 22 - len(reports) and view["harness_failures"] == 0
    # without --split, nothing can be aggregated: the error is the one of the split the runs cover best
    err = report_error(capsys, str(path))
    assert "split low (lite)" in err and all(cid in err for cid in gone) and "--pad-missing" in err
    # a split that cannot be aggregated says why in its cell, and the others are still given
    medium = write_grading_report(tmp_path / "medium.json", [fake_report(c, rng) for c in SPLITS["medium"]])
    data = report_json(capsys, str(path), str(medium), "--label", "L")
    assert "--pad-missing" in data["labels"]["L"]["splits"]["low"]["published"]["error"]
    assert data["labels"]["L"]["splits"]["medium"]["published"] == reference([medium, path], SPLITS["medium"])
    with pytest.raises(Refused):
        reference([path], low)


def test_seeds_limit(capsys: pytest.CaptureFixture[str], seeds_files: list[Path]) -> None:
    args = [*map(str, seeds_files), "--label", "agent", "--split", "all"]
    data = report_json(capsys, *args, "--seeds", "2")
    assert data["labels"]["agent"]["splits"]["split75"]["published"] == reference(
        seeds_files, SPLITS["split75"], num_seeds=2
    )
    padded = report_json(capsys, *args, "--seeds", "4", "--pad-missing")
    assert padded["labels"]["agent"]["splits"]["split75"]["published"] == reference(
        seeds_files, SPLITS["split75"], num_seeds=4, pad=True
    )
    err = report_error(capsys, *args, "--seeds", "4")  # more than the 3 complete seeds: the published script refuses
    assert "--seeds 4" in err and "--seeds 3" in err
    with pytest.raises(Refused):
        reference(seeds_files, SPLITS["split75"], num_seeds=4)
    assert "--seeds 0" in report_error(capsys, *args, "--seeds", "0")


def test_reports_outside_the_split_are_ignored(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rng = random.Random(11)
    reports = [fake_report(c, rng) for c in SPLITS["low"] for _ in range(2)]
    reports += [fake_report(c, rng) for c in SPLITS["medium"][:10]]
    reports += [fake_report("no-such-competition", rng) for _ in range(5)]
    path = write_grading_report(tmp_path / "mixed.json", reports)
    data = report_json(capsys, str(path), "--split", "low")
    assert data["labels"]["mixed"]["splits"]["low"]["published"] == reference([path], SPLITS["low"])
    assert data["labels"]["mixed"]["splits"]["low"]["published"]["num_seeds_averaged"] == 2


def test_one_seed_has_sem_zero(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rng = random.Random(5)
    path = write_grading_report(tmp_path / "once.json", [fake_report(c, rng) for c in SPLITS["high"]])
    data = report_json(capsys, str(path), "--split", "high")
    cell = data["labels"]["once"]["splits"]["high"]
    assert cell["published"] == reference([path], SPLITS["high"])
    for metric in cell["published"]["metrics"].values():
        assert metric["standard_error"] == 0.0 and metric["ci_lower"] == metric["mean"] == metric["ci_upper"]
    assert cell["podium"]["num_seeds"] == 1 and cell["podium"]["metrics"]["any_medal_percentage"]["t_lower"] is None


# --------------------------------------------------------------------------------------------------
# podium run groups


def write_group(
    root: Path, group: str, agent: str, runs: dict[tuple[str, int], dict[str, Any]], *, status: dict | None = None
) -> Path:
    """A run group folder of fake records; ``runs`` maps (competition, seed) to a grade."""
    for (cid, seed), grade in runs.items():
        folder = root / group / cid / str(seed)
        folder.mkdir(parents=True)
        record = {
            "run_group": group,
            "competition_id": cid,
            "competition_version": grade.get("competition_version", 1),
            "seed": seed,
            "agent": agent,
            "status": (status or {}).get((cid, seed), "finished"),
            "finished_at": "2026-01-01T00:00:00+00:00",
            "agent_result": {"exit_code": 0, "timed_out": False, "killed_for": None},
            "grade": grade,
        }
        (folder / "record.json").write_text(json.dumps(record))
    (root / group / "report.md").write_text("an earlier report, not an input\n")
    return root / group


def as_grading_report(path: Path, runs: dict[tuple[str, int], dict[str, Any]]) -> Path:
    """The same runs as one grading report in seed order: what the published script would read."""
    ordered = [{"competition_id": cid, **grade} for (cid, _), grade in sorted(runs.items(), key=lambda kv: kv[0][1])]
    return write_grading_report(path, ordered)


@pytest.fixture
def group_runs() -> dict[tuple[str, int], dict[str, Any]]:
    rng = random.Random(21)
    low = SPLITS["low"]
    runs = {(c, s): fake_report(c, rng) for c in low for s in range(3)}
    del runs[(low[2], 1)]  # a gap: seeds 0 and 2 only
    for grade in runs.values():
        grade.pop("competition_id")
    return runs


def test_podium_run_group_matches_the_published_rules(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, group_runs: dict
) -> None:
    failed = (SPLITS["low"][5], 0)
    group = write_group(tmp_path / "runs", "g1", "baseline", group_runs, status={failed: "harness_error"})
    equivalent = as_grading_report(tmp_path / "equivalent.json", group_runs)
    data = report_json(capsys, str(group))
    label = data["labels"]["baseline (g1)"]
    assert label["kind"] == "podium run group" and label["runs"] == len(group_runs)
    cell = label["splits"]["low"]
    # the gap closes up: 2 complete seeds, the gap's seed 2 aligned with the others' seed 1
    assert cell["published"] == reference([equivalent], SPLITS["low"])
    assert cell["published"]["num_seeds_averaged"] == 2
    assert any(f"{SPLITS['low'][2]} (seeds 0, 2)" in note for note in label["notes"])
    # podium's view: the harness's failure leaves seed 1's denominator
    view = cell["podium"]
    assert view["harness_failures"] == 1 and view["num_seeds"] == 2 and view["unused_runs"] == 21
    seed_runs = [[group_runs.get((c, s)) or group_runs[(c, 2)] for c in SPLITS["low"]] for s in (0, 1)]
    first = [g for c, g in zip(SPLITS["low"], seed_runs[0], strict=True) if c != failed[0]]
    rates = [sum(g["any_medal"] for g in first) / 21 * 100, sum(g["any_medal"] for g in seed_runs[1]) / 22 * 100]
    expected = view["metrics"]["any_medal_percentage"]
    sem = float(stats.sem(rates))
    assert expected["mean"] == pytest.approx(np.mean(rates)) and expected["standard_error"] == pytest.approx(sem)
    assert expected["t_upper"] == pytest.approx(np.mean(rates) + stats.t.ppf(0.975, 1) * sem)
    assert view["agent_failures"] == sum(1 for s in seed_runs for g in s if not g["valid_submission"]) - (
        not group_runs[failed]["valid_submission"]
    )
    # the runs folder itself: every group in it
    runs_root = report_json(capsys, str(tmp_path / "runs"))
    assert runs_root["labels"]["baseline (g1)"]["splits"]["low"]["published"] == cell["published"]


def test_mixed_table_and_corrected_block(capsys: pytest.CaptureFixture[str], tmp_path: Path, group_runs: dict) -> None:
    cid = SPLITS["low"][0]
    for seed in range(3):
        grade = group_runs[(cid, seed)]
        grade["other_versions"] = [
            {"competition_version": 2, "score": 1.0, "valid_submission": True, "error": None, "any_medal": True,
             "gold_medal": True, "silver_medal": False, "bronze_medal": False, "above_median": True,
             "percentile": 1.0, "rank": 1}
        ]  # fmt: skip
    group = write_group(tmp_path / "runs", "g2", "aide", group_runs)
    rng = random.Random(2)
    published_file = write_grading_report(
        tmp_path / "mlebench" / "2024-10-01_grading_report.json",
        [fake_report(c, rng) for c in SPLITS["split75"] for _ in range(2)],
    )
    data = report_json(capsys, str(tmp_path / "mlebench"), str(group), "--split", "low")
    assert list(data["labels"]) == ["mlebench", "aide (g2)"]
    assert data["labels"]["mlebench"]["splits"]["low"]["published"] == reference([published_file], SPLITS["low"])
    mine = data["labels"]["aide (g2)"]["splits"]["low"]
    assert mine["published"] == reference([as_grading_report(tmp_path / "eq.json", group_runs)], SPLITS["low"])
    assert mine["definitions"].startswith("published definitions (version 1")
    corrected = {k: ({**g, **g["other_versions"][0]} if k[0] == cid else g) for k, g in group_runs.items()}
    expected = reference([as_grading_report(tmp_path / "corrected.json", corrected)], SPLITS["low"])
    assert mine["corrected"] == {
        "definitions": f"published definitions except {cid}@2",
        "changed": [f"{cid}@2"],
        **expected,
    }
    assert data["labels"]["mlebench"]["splits"]["low"]["corrected"] is None
    for fmt in ("text", "md"):
        assert main(["report", str(tmp_path / "mlebench"), str(group), "--format", fmt]) == 0
        out = capsys.readouterr().out
        assert "published definitions (version 1" in out and f"{cid}@2" in out
        assert "mlebench" in out and "aide (g2)" in out
        if fmt == "text":
            assert max(len(line) for line in out.splitlines()) <= 100
    output = tmp_path / "out" / "report.md"
    assert main(["report", str(group), "--format", "md", "--output", str(output)]) == 0
    assert output.read_text().startswith("# podium report")


def test_harness_failures_count_in_the_published_numbers_only(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    split = tmp_path / "three.txt"
    split.write_text("a\nb\nc\n")
    medal = {**dict.fromkeys(("submission_exists", "valid_submission", "gold_medal"), True), "above_median": True}
    nothing = dict.fromkeys(("submission_exists", "valid_submission", "gold_medal", "above_median"), False)
    runs = {("a", 0): medal, ("b", 0): medal, ("c", 0): nothing}
    group = write_group(tmp_path, "g", "x", runs, status={("c", 0): "harness_error"})
    cell = report_json(capsys, str(group), "--split", str(split))["labels"]["x (g)"]["splits"]["three"]
    assert cell["published"]["metrics"]["gold_medal_percentage"]["mean"] == 2 / 3 * 100
    assert cell["podium"]["metrics"]["gold_medal_percentage"]["mean"] == 100.0
    assert (cell["podium"]["harness_failures"], cell["podium"]["agent_failures"]) == (1, 0)


def test_a_group_whose_every_run_was_the_harness_failure_keeps_its_counts(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """An unreachable model on each run: podium's view had nothing to rate and showed '-' for the counts too."""
    split = tmp_path / "one.txt"
    split.write_text("a\n")
    nothing = dict.fromkeys(("submission_exists", "valid_submission", "gold_medal", "above_median"), False)
    group = write_group(tmp_path, "g", "x", {("a", 0): nothing}, status={("a", 0): "harness_error"})
    cell = report_json(capsys, str(group), "--split", str(split))["labels"]["x (g)"]["splits"]["one"]
    own = cell["podium"]
    assert (own["runs"], own["harness_failures"], own["agent_failures"], own["num_seeds"]) == (1, 1, 0, 0)
    assert own["metrics"] is None
    assert main(["report", str(group), "--split", str(split)]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("x (g)") and "[" in line)
    assert row.split()[-6:] == ["1", "1", "0", "0", "-", "-"], row
    assert main(["report", str(group), "--split", str(split), "--format", "md"]) == 0
    assert "| x (g) | 0 | 1 | 1 | 0 | 0 | - |" in capsys.readouterr().out
    page = tmp_path / "report.html"
    assert main(["report", str(group), "--split", str(split), "--format", "html", "--output", str(page)]) == 0
    assert "1 harness failure(s)" in page.read_text()


# --------------------------------------------------------------------------------------------------
# Errors and statistics


def test_errors_name_the_value_and_the_fix(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert "no such file or folder" in report_error(capsys, str(tmp_path / "absent"))
    not_a_report = tmp_path / "other.json"
    not_a_report.write_text('{"total_runs": 3}')
    assert "no competition_reports" in report_error(capsys, str(not_a_report))
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "holds no run records" in report_error(capsys, str(empty))
    good = write_grading_report(tmp_path / "g.json", [fake_report(c, random.Random(1)) for c in SPLITS["low"]])
    assert "once per PATH" in report_error(capsys, str(good), str(good), "--label", "a", "--label", "b", "--label", "c")
    assert "Unknown split" in report_error(capsys, str(good), "--split", "lowest")


def test_t_quantile_matches_scipy() -> None:
    for df in [*range(1, 41), 75, 200]:
        assert t_quantile(0.975, df) == pytest.approx(stats.t.ppf(0.975, df), rel=1e-12, abs=0)
    assert t_quantile(0.9, 3) == pytest.approx(stats.t.ppf(0.9, 3), rel=1e-12)
