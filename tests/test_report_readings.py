"""`podium report`'s three headline readings side by side: the published one (version 1), podium's
corrected one (the newest version of every competition) and the published one without the competitions
whose data has a known leak; held to a plain restatement of the published rules, in every format, and
in the HTML file opened in chromium (each competition linked to its versions' changes)."""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

from podium import registry
from podium.cli import main
from podium.report import build_report, load_inputs
from podium.report.readings import leaky_competitions

LOW = registry.split_ids("low")
SAME_DATA = "jigsaw-toxic-comment-classification-challenge"  # version 2 grades version 1's data
RUN_AT_TWO = "plant-pathology-2020-fgvc7"  # run at version 2, which grades version 1's data
OTHER_DATA = "random-acts-of-pizza"  # leaky; version 2 changes the data
LEAKY_IN_LOW = {"random-acts-of-pizza", "siim-isic-melanoma-classification"}


def _grade(medal: bool, version: int = 1, *, other: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "competition_version": version, "score": 0.5, "submission_exists": True, "valid_submission": True,
        "above_median": medal, "gold_medal": medal, "silver_medal": False, "bronze_medal": False,
        "any_medal": medal, "is_lower_better": False, "other_versions": other or [],
    }  # fmt: skip


def _summary(version: int, medal: bool) -> dict[str, Any]:
    return {"competition_version": version, "score": 1.0 if medal else 0.1, "valid_submission": True,
            "error": None, "any_medal": medal, "gold_medal": medal, "silver_medal": False, "bronze_medal": False,
            "above_median": medal, "percentile": 0.5, "rank": 3}  # fmt: skip


def _group(root: Path, name: str, agent: str, seeds: int = 3) -> dict[tuple[str, int], dict[str, Any]]:
    """A run group over the low split: every third run a medal; jigsaw medals only at version 2; the pizza
    always a medal; plant-pathology run at version 2 (a medal) whose version-1 grade is none."""
    grades = {}
    for index, cid in enumerate(LOW):
        for seed in range(seeds):
            medal = (index + seed) % 3 == 0
            if cid == SAME_DATA:
                grade = _grade(False, other=[_summary(2, True)])
            elif cid == RUN_AT_TWO:
                grade = _grade(True, 2, other=[_summary(1, False)])
            elif cid == OTHER_DATA:
                grade = _grade(True)
            else:
                grade = _grade(medal)
            grades[(cid, seed)] = grade
            folder = root / name / cid / str(seed)
            folder.mkdir(parents=True)
            record = {"run_group": name, "competition_id": cid, "competition_version": grade["competition_version"],
                      "seed": seed, "agent": agent, "status": "finished",
                      "agent_result": {"exit_code": 0, "seconds": 60.0}, "grade": grade}  # fmt: skip
            (folder / "record.json").write_text(json.dumps(record))
    return grades


def _any_medal(grades: Mapping[tuple[str, int], Mapping[str, Any]], ids: Iterable[str], version: str) -> dict:
    """The published script's any-medal mean, SEM and 1.96 SEM interval, restated plainly, with each run read at
    ``version`` ("first": its version-1 grade; "newest": its newest version's grade)."""

    def medal(grade: Mapping[str, Any]) -> bool:
        versions = {
            grade["competition_version"]: grade,
            **{o["competition_version"]: o for o in grade["other_versions"]},
        }
        chosen = versions.get(1, grade) if version == "first" else versions[max(versions)]
        return bool(chosen["gold_medal"] or chosen["silver_medal"] or chosen["bronze_medal"])

    ids = list(ids)
    seeds = sorted({seed for _, seed in grades})
    rates = [sum(medal(grades[(cid, seed)]) for cid in ids) / len(ids) * 100 for seed in seeds]
    sem = statistics.stdev(rates) / math.sqrt(len(rates))
    return {"mean": statistics.fmean(rates), "standard_error": sem}


@pytest.fixture
def groups(tmp_path: Path) -> tuple[Path, dict[str, dict[tuple[str, int], dict[str, Any]]]]:
    runs = tmp_path / "runs"
    return runs, {"a (ga)": _group(runs, "ga", "a"), "b (gb)": _group(runs, "gb", "b", seeds=2)}


def test_the_three_readings_are_the_published_rules_on_version_1_the_newest_versions_and_no_leaks(
    groups: tuple[Path, dict], capsys: pytest.CaptureFixture[str]
) -> None:
    runs, grades = groups
    assert main(["report", str(runs / "ga"), str(runs / "gb"), "--split", "low", "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["schema"] == "podium-report/3"
    kept = [cid for cid in LOW if cid not in LEAKY_IN_LOW]
    for label, mine in grades.items():
        readings = report["labels"][label]["splits"]["low"]["readings"]
        expected = {
            "published": _any_medal(mine, LOW, "first"),
            "corrected": _any_medal(mine, LOW, "newest"),
            "without_leaks": _any_medal(mine, kept, "first"),
        }
        for key, numbers in expected.items():
            metric = readings[key]["metrics"]["any_medal_percentage"]
            assert metric["mean"] == pytest.approx(numbers["mean"], abs=1e-12), key
            assert metric["standard_error"] == pytest.approx(numbers["standard_error"], abs=1e-12), key
            assert metric["ci_upper"] == pytest.approx(metric["mean"] + 1.96 * metric["standard_error"], abs=1e-12)
        assert readings["published"]["num_competitions_per_seed"] == 22
        assert readings["without_leaks"]["num_competitions_per_seed"] == readings["without_leaks"]["competitions"] == 20
        excluded = {e["competition_id"]: e["reason"] for e in readings["without_leaks"]["excluded"]}
        assert excluded.keys() == LEAKY_IN_LOW
        assert "giver_username_if_known" in excluded[OTHER_DATA] and "leak" in excluded[OTHER_DATA]
        corrected = readings["corrected"]
        assert corrected["changed"] == [f"{SAME_DATA}@2", f"{RUN_AT_TWO}@2"]
        assert corrected["definitions"] == f"published definitions except {SAME_DATA}@2, {RUN_AT_TWO}@2"
        assert readings["published"]["definitions"].startswith("published definitions (version 1")
        kept_old = {m["competition_id"]: m for m in corrected["not_newest"]}
        assert "changes the data" in kept_old[OTHER_DATA]["reason"]
        assert "same data" in kept_old["nomad2018-predict-transparent-conductors"]["reason"]
        assert SAME_DATA not in kept_old and RUN_AT_TWO not in kept_old
    # the published block of old is unchanged: plant-pathology as graded (version 2), so it differs from v1
    cell = report["labels"]["a (ga)"]["splits"]["low"]
    assert cell["published"]["metrics"] != cell["readings"]["published"]["metrics"]
    versions = report["versions"]
    assert versions.keys() >= LEAKY_IN_LOW and set(LOW) <= versions.keys()
    assert [v["version"] for v in versions[OTHER_DATA]["versions"]] == [1, 2]
    assert versions[OTHER_DATA]["versions"][1]["data_version"] == 2 and versions[OTHER_DATA]["known_leakage"]


def test_text_and_markdown_show_the_readings_and_name_each_left_out_competition_with_its_reason(
    groups: tuple[Path, dict], capsys: pytest.CaptureFixture[str]
) -> None:
    runs, _ = groups
    report = build_report(load_inputs([str(runs / "ga"), str(runs / "gb")]), split="low")
    mean = report["labels"]["b (gb)"]["splits"]["low"]["readings"]["without_leaks"]["metrics"]
    for fmt in ("text", "md"):
        assert main(["report", str(runs / "ga"), str(runs / "gb"), "--split", "low", "--format", fmt]) == 0
        out = capsys.readouterr().out
        for words in ("published (v1)", "corrected (newest)", "without known leaks (20 of 22)"):
            assert words in out, (fmt, words)
        assert f"{mean['any_medal_percentage']['mean']:.1f}" in out
        assert f"Left out for a known leak: {OTHER_DATA}: The test-time field giver_username_if_known" in " ".join(
            out.split()
        )
        assert "siim-isic-melanoma-classification: The public test TFRecord shards leak" in " ".join(out.split())
        assert f"the corrected reading grades {SAME_DATA}@2, {RUN_AT_TWO}@2" in " ".join(out.split())
        if fmt == "text":
            assert max(len(line) for line in out.splitlines()) <= 100


def test_a_split_without_leaky_competitions_leaves_nothing_out(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    split = tmp_path / "two.txt"
    split.write_text("spaceship-titanic\nspooky-author-identification\n")
    report = tmp_path / "grading_report.json"
    rows = [{"competition_id": cid, **_grade(cid == "spaceship-titanic")} for cid in split.read_text().split()]
    report.write_text(json.dumps({"competition_reports": rows}))
    assert main(["report", str(report), "--split", str(split), "--format", "json"]) == 0
    readings = json.loads(capsys.readouterr().out)["labels"]["grading_report"]["splits"]["two"]["readings"]
    assert readings["without_leaks"]["excluded"] == [] and readings["without_leaks"]["competitions"] == 2
    assert readings["without_leaks"]["metrics"] == readings["published"]["metrics"]
    assert readings["published"]["metrics"]["any_medal_percentage"]["mean"] == 50.0


def test_every_competition_declares_its_leaks_in_words_the_report_can_read() -> None:
    """Every note is text (a YAML note with ': ' inside, unquoted, was read as a mapping and broke the
    leak lookup), and the competitions whose version 1 hands the agent the answers are the ones found."""
    for cid in registry.ids():
        for version in registry.get(cid).versions:
            notes = registry.get(cid, version).notes
            assert all(isinstance(note, str) for note in notes), (cid, version, notes)
    found = leaky_competitions(registry.ids(), {})
    assert {
        "cassava-leaf-disease-classification", "hubmap-kidney-segmentation", "multi-modal-gesture-recognition",
        "random-acts-of-pizza", "siim-isic-melanoma-classification", "smartphone-decimeter-2022",
    } <= found.keys()  # fmt: skip
    assert not any(cid.startswith("practice-") for cid in found)


def _resolve(document: Any, path: str) -> Any:
    for part in path.split("/")[1:]:
        key = part.replace("~1", "/").replace("~0", "~")
        document = document[int(key)] if isinstance(document, list) else document[key]
    return document


def test_the_html_readings_are_the_json_and_each_competition_links_to_its_versions(
    groups: tuple[Path, dict], tmp_path: Path, page: Any
) -> None:
    runs, _ = groups
    out = tmp_path / "report.html"
    assert main(["report", str(runs / "ga"), str(runs / "gb"), "--split", "low", "--output", str(out)]) == 0
    page.goto(out.as_uri())
    embedded = json.loads(page.eval_on_selector("#podium-report", "n => n.textContent"))
    cells = page.eval_on_selector_all(
        "table.readings [data-json-path]", "nodes => nodes.map(n => [n.dataset.jsonPath, n.dataset.value, n.innerText])"
    )
    assert len(cells) == 2 * 3  # two labels, three readings
    assert {path.split("/")[6] for path, _, _ in cells} == {"published", "corrected", "without_leaks"}
    for path, value, shown in cells:
        expected = _resolve(embedded, path)
        assert json.loads(value) == expected
        assert abs(float(shown.split("±")[0]) - expected) <= 0.05 + 1e-9, (path, shown)
    excluded = page.eval_on_selector_all("a.excluded", "links => links.map(a => [a.innerText, a.hash])")
    assert sorted(name for name, _ in excluded) == sorted(LEAKY_IN_LOW)
    for name, anchor in excluded:
        target = page.eval_on_selector(anchor, "n => n.innerText + '\\n' + n.nextElementSibling.innerText")
        assert target.startswith(name) and "version 2" in target
    changes = " ".join(registry.get(OTHER_DATA, 2).changes.split())
    assert changes in page.inner_text(f"#versions-{OTHER_DATA} + ul")
    linked = page.eval_on_selector_all("table.runs td a[href^='#versions-']", "links => links.map(a => a.hash)")
    assert len(linked) == 3 * 22 + 2 * 22  # every run's competition
    assert all(page.query_selector(anchor) is not None for anchor in set(linked))
