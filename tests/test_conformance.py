"""Conformance over the whole registry, as Gymnasium's check_env runs over every env.

For each competition a tiny fixture in its real schema is generated from the declaration; the
grader must give the answers the metric's best value (and gold where medals exist), accept the
sample submission, ignore row order, and reject each broken variant with a clear message.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from podium import registry
from podium.competition import Competition
from podium.fixtures import Fixture, make_fixture, write_csv, write_prepared
from podium.grading import grade
from podium.grading.table import Frame
from podium.metrics import METRICS
from podium.records import GradeReport

COMPETITIONS = registry.ids()
REFS = [f"{cid}@{v}" for cid in COMPETITIONS for v in registry.get(cid).versions]


@pytest.fixture(scope="module", params=REFS)
def case(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Competition, Fixture, Path]:
    comp = registry.get(request.param)
    fixture = make_fixture(comp)
    data_dir = tmp_path_factory.mktemp(comp.id.replace("-", "_")[:40])
    write_prepared(comp, fixture, data_dir)
    return comp, fixture, data_dir


def _grade(comp: Competition, frame: Frame, data_dir: Path, name: str) -> GradeReport:
    path = write_csv(frame, data_dir / "submissions" / f"{name}.csv")
    return grade(comp, path, data_dir)


def _with(frame: Frame, **columns: np.ndarray) -> Frame:
    return Frame({**frame.columns, **columns}, frame.n_rows)


def test_declaration_is_consistent(case: tuple[Competition, Fixture, Path]) -> None:
    comp, _, _ = case
    metric = METRICS[comp.metric.name]
    assert metric.higher_is_better == comp.higher_is_better
    assert set(comp.id_columns) <= set(comp.column_names)
    assert comp.targets, "a competition must score at least one column"
    if comp.awards_medals:
        assert comp.leaderboard is not None or comp.id == "ventilator-pressure-prediction"


def _assert_best(comp: Competition, score: float | None) -> None:
    """The metric's best value, or, where the declaration says why (``fixture.perfect_below_best``),
    strictly less: a published grader that cannot give the answers themselves the best score."""
    assert score is not None
    best = METRICS[comp.metric.name].best
    if best is None:
        return
    below = comp.fixture.get("perfect_below_best")
    if below:
        better = score > best if comp.higher_is_better else score < best
        assert not better and score != pytest.approx(best, abs=1e-6), f"declared below best ({below}), got {score}"
    else:
        assert score == pytest.approx(best, abs=1e-6)


def test_perfect_submission_reaches_best_and_gold(case: tuple[Competition, Fixture, Path]) -> None:
    comp, fixture, data_dir = case
    report = _grade(comp, fixture.perfect, data_dir, "perfect")
    assert report.valid_submission, report.error
    _assert_best(comp, report.score)
    if comp.leaderboard is not None:  # every competition places medals, whether Kaggle awarded any or not
        medals = (report.gold_medal, report.silver_medal, report.bronze_medal, report.any_medal)
        assert medals == (True, False, False, True), ("gold only", report.score, report.gold_threshold)


def test_sample_submission_is_valid(case: tuple[Competition, Fixture, Path]) -> None:
    comp, fixture, data_dir = case
    report = _grade(comp, fixture.sample, data_dir, "sample")
    assert report.valid_submission, report.error
    if comp.fixture.get("sample_score") and comp.sample_submission_score is not None:
        assert report.score is not None and math.isclose(report.score, comp.sample_submission_score, abs_tol=1e-4)


def test_row_order_does_not_matter(case: tuple[Competition, Fixture, Path]) -> None:
    """The perfect submission shuffled: rows differ, so a grader that paired them by position would
    lose the best score (the sample submission's rows are all alike and cannot show that). Where a
    key may repeat, rows sharing a key pair up in file order, so those keep their relative order."""
    comp, fixture, data_dir = case
    where = comp.metric.where or {}
    if (
        comp.matching.get("pairing") in ("position", "subset")
        or (comp.matching.get("pairing") in ("sorted", "sorted_index") and comp.matching.get("duplicate_ids"))
        or where.get("submission_rows") == "file_position"
    ):
        pytest.skip("this version pairs rows by position as the published grader does (test_published_pairing.py)")
    reference = _grade(comp, fixture.perfect, data_dir, "perfect_again")
    order = np.random.default_rng(1).permutation(fixture.perfect.n_rows)
    if fixture.perfect.n_rows > 1 and (order == np.arange(order.size)).all():
        order = np.roll(order, 1)
    if comp.matching.get("duplicate_ids"):
        keys = np.array(
            ["\x1f".join(map(str, row)) for row in zip(*(fixture.perfect[c] for c in comp.id_columns), strict=True)]
        )
        for key in np.unique(keys):
            at = np.flatnonzero(keys[order] == key)
            order[at] = np.sort(order[at])
    report = _grade(comp, fixture.perfect.take(order), data_dir, "shuffled")
    assert report.valid_submission, report.error
    assert report.score == pytest.approx(reference.score, nan_ok=True)
    _assert_best(comp, report.score)


def _assert_invalid(report: GradeReport, *words: str) -> None:
    assert not report.valid_submission
    assert report.score is None and report.error
    for word in words:
        assert word in report.error, report.error


def _skip_subset(comp: Competition) -> None:
    if comp.matching.get("pairing") == "subset":
        pytest.skip("this version scores the rows the file holds, as published (test_published_pairing.py)")


def test_dropped_row_is_invalid(case: tuple[Competition, Fixture, Path]) -> None:
    comp, fixture, data_dir = case
    _skip_subset(comp)
    report = _grade(comp, fixture.sample.take(np.arange(1, fixture.sample.n_rows)), data_dir, "dropped")
    if comp.matching.get("duplicate_ids") or comp.matching.get("pairing") in ("sorted", "sorted_index", "position"):
        _assert_invalid(report)
    else:
        _assert_invalid(report, "missing")


def test_duplicated_id_is_invalid(case: tuple[Competition, Fixture, Path]) -> None:
    comp, fixture, data_dir = case
    _skip_subset(comp)
    order = np.concatenate([np.arange(fixture.sample.n_rows), [0]])
    _assert_invalid(_grade(comp, fixture.sample.take(order), data_dir, "duplicated"))


def test_extra_id_is_invalid_or_ignored(case: tuple[Competition, Fixture, Path]) -> None:
    comp, fixture, data_dir = case
    order = np.concatenate([np.arange(fixture.sample.n_rows), [0]])
    extra = fixture.sample.take(order)
    first_id = comp.id_columns[0]
    ids = extra[first_id].copy()
    ids[-1] = (
        "999999999"
        if comp.column(first_id).kind == "int_id" or comp.column(first_id).options.get("numeric")
        else "no-such-id"
    )
    report = _grade(comp, _with(extra, **{first_id: ids}), data_dir, "extra")
    if comp.matching.get("pairing") in (
        "sorted",
        "sorted_index",
        "position",
    ):  # one row more than the published grader pairs
        _assert_invalid(report, "needs exactly")
    elif comp.matching.get("extra_ids"):
        assert report.valid_submission, report.error
    else:
        _assert_invalid(report, "not in the test set")


def test_missing_column_is_invalid(case: tuple[Competition, Fixture, Path]) -> None:
    comp, fixture, data_dir = case
    target = comp.targets[0][0]
    frame = Frame({k: v for k, v in fixture.sample.columns.items() if k != target}, fixture.sample.n_rows)
    _assert_invalid(_grade(comp, frame, data_dir, "no_column"), "missing column", target)


def _numeric_target(comp: Competition) -> str | None:
    for sub, _ in comp.targets:
        if comp.column(sub).kind in ("float", "probability", "int"):
            return sub
    return None


def test_nan_and_text_in_numeric_column_are_invalid(case: tuple[Competition, Fixture, Path]) -> None:
    comp, fixture, data_dir = case
    target = _numeric_target(comp)
    if target is None:
        pytest.skip("no numeric prediction column")
    cases = [("nan", "NaN"), ("not-a-number", "not numbers")]
    if comp.column(target).options.get("missing") in ("nan", "zero", "unscored"):
        cases = cases[1:]  # a missing cell is accepted, as the published grader accepts it
    for bad, word in cases:
        values = fixture.sample[target].copy()
        values[2] = bad
        _assert_invalid(_grade(comp, _with(fixture.sample, **{target: values}), data_dir, f"bad_{word}"), target, word)
