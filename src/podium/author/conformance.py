"""The conformance checks of one competition: what its generated fixture must do, as Gymnasium's check_env.

For a competition at one version, a tiny fixture in its real schema is generated from the declaration
(:func:`podium.fixtures.make_fixture`); the grader must give the answers the metric's best value (and gold where
there is a leaderboard), accept the sample submission, ignore row order, and reject each broken variant with a
clear message. ``tests/test_conformance.py`` runs every check here over every registered competition, and
``podium check`` over the one it checks: one definition for both.

Each check takes a :class:`Case` and returns its problems, one line each (empty: it passed), or raises
:class:`Skipped` where the version's published grading makes the check meaningless (a grader that pairs rows by
position cannot ignore row order).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from podium.competition import Competition
from podium.fixtures import Fixture, make_fixture, write_csv, write_prepared
from podium.grading import grade
from podium.grading.table import Frame
from podium.metrics import METRICS
from podium.records import GradeReport

__all__ = [
    "CHECKS",
    "Case",
    "Skipped",
    "best_score_problem",
    "gold_problem",
    "make_case",
    "run_conformance",
]


class Skipped(Exception):
    """The check does not apply to this version of the competition (the reason is the message)."""


@dataclass(frozen=True)
class Case:
    """A competition at one version with its generated fixture laid out as prepared data under ``data_dir``."""

    competition: Competition
    fixture: Fixture
    data_dir: Path


def make_case(competition: Competition, data_dir: Path) -> Case:
    """Generate ``competition``'s fixture and write it as prepared data under ``data_dir``."""
    fixture = make_fixture(competition)
    write_prepared(competition, fixture, data_dir)
    return Case(competition, fixture, data_dir)


def _grade(case: Case, frame: Frame, name: str) -> GradeReport:
    path = write_csv(frame, case.data_dir / "submissions" / f"{name}.csv")
    return grade(case.competition, path, case.data_dir)


def _with(frame: Frame, **columns: np.ndarray) -> Frame:
    return Frame({**frame.columns, **columns}, frame.n_rows)


def declaration_is_consistent(case: Case) -> list[str]:
    comp = case.competition
    problems = []
    if METRICS[comp.metric.name].higher_is_better != comp.higher_is_better:
        problems.append(f"higher_is_better is {comp.higher_is_better}, the metric table's {comp.metric.name} says not")
    if not set(comp.id_columns) <= set(comp.column_names):
        problems.append(f"id columns {sorted(set(comp.id_columns) - set(comp.column_names))} are not columns")
    if not comp.targets:
        problems.append("no target: a competition must score at least one column")
    # the published data has no leaderboard for ventilator-pressure-prediction (its medals cannot be placed)
    if comp.awards_medals and comp.leaderboard is None and comp.id != "ventilator-pressure-prediction":
        problems.append("awards medals but has no leaderboard.json")
    return problems


def best_score_problem(comp: Competition, score: float | None) -> str | None:
    """Why ``score`` of the answers themselves is wrong: it must be the metric's best value or, where the
    declaration says why (``fixture.perfect_below_best``), strictly less (a published grader that cannot give the
    answers the best score). None when it is right."""
    if score is None:
        return "the answers themselves got no score"
    best = METRICS[comp.metric.name].best
    if best is None:
        return None
    near = math.isclose(score, best, rel_tol=1e-6, abs_tol=1e-6)
    below = comp.fixture.get("perfect_below_best")
    if below:
        better = score > best if comp.higher_is_better else score < best
        return None if not better and not near else f"declared below best ({below}), got {score}"
    return None if near else f"the answers themselves score {score}, not the metric's best {best}"


def gold_problem(comp: Competition, report: GradeReport) -> str | None:
    """Why the answers' grade is not gold only (every competition with a leaderboard places medals, whether Kaggle
    awarded any or not). None when it is, or when there is no leaderboard."""
    if comp.leaderboard is None:
        return None
    medals = (report.gold_medal, report.silver_medal, report.bronze_medal, report.any_medal)
    if medals == (True, False, False, True):
        return None
    return f"the answers themselves are not gold only (score {report.score}, gold threshold {report.gold_threshold})"


def perfect_submission_reaches_best_and_gold(case: Case) -> list[str]:
    report = _grade(case, case.fixture.perfect, "perfect")
    if not report.valid_submission:
        return [f"the perfect submission is invalid: {report.error}"]
    return [
        p for p in (best_score_problem(case.competition, report.score), gold_problem(case.competition, report)) if p
    ]


def sample_submission_is_valid(case: Case) -> list[str]:
    comp = case.competition
    report = _grade(case, case.fixture.sample, "sample")
    if not report.valid_submission:
        return [f"the sample submission is invalid: {report.error}"]
    declared = comp.sample_submission_score
    scored = report.score is not None and declared is not None and math.isclose(report.score, declared, abs_tol=1e-4)
    if comp.fixture.get("sample_score") and declared is not None and not scored:
        return [f"the sample submission scores {report.score}, declared {declared}"]
    return []


def _same_score(a: float | None, b: float | None) -> bool:
    if a is None or b is None or math.isnan(a) or math.isnan(b):
        return (a is None or math.isnan(a)) and (b is None or math.isnan(b))
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-12)


def row_order_does_not_matter(case: Case) -> list[str]:
    """The perfect submission shuffled: rows differ, so a grader that paired them by position would lose the best
    score (the sample submission's rows are all alike and cannot show that). Where a key may repeat, rows sharing a
    key pair up in file order, so those keep their relative order."""
    comp, perfect = case.competition, case.fixture.perfect
    where = comp.metric.where or {}
    if (
        comp.matching.get("pairing") in ("position", "subset")
        or (comp.matching.get("pairing") in ("sorted", "sorted_index") and comp.matching.get("duplicate_ids"))
        or where.get("submission_rows") == "file_position"
    ):
        raise Skipped("this version pairs rows by position as the published grader does (test_published_pairing.py)")
    reference = _grade(case, perfect, "perfect_again")
    order = np.random.default_rng(1).permutation(perfect.n_rows)
    if perfect.n_rows > 1 and (order == np.arange(order.size)).all():
        order = np.roll(order, 1)
    if comp.matching.get("duplicate_ids"):
        keys = np.array(
            ["\x1f".join(map(str, row)) for row in zip(*(perfect[c] for c in comp.id_columns), strict=True)]
        )
        for key in np.unique(keys):
            at = np.flatnonzero(keys[order] == key)
            order[at] = np.sort(order[at])
    report = _grade(case, perfect.take(order), "shuffled")
    if not report.valid_submission:
        return [f"the shuffled perfect submission is invalid: {report.error}"]
    problems = [] if _same_score(report.score, reference.score) else [f"shuffled: {report.score} != {reference.score}"]
    best = best_score_problem(comp, report.score)
    return problems + ([f"shuffled: {best}"] if best else [])


def _invalid_problems(report: GradeReport, what: str, *words: str) -> list[str]:
    """Problems unless ``report`` says invalid, with no score, with a message holding each of ``words``."""
    if report.valid_submission or report.score is not None or not report.error:
        return [f"{what} is not refused (valid {report.valid_submission}, score {report.score})"]
    return [f"{what}: the message lacks {word!r}: {report.error}" for word in words if word not in report.error]


def _skip_subset(comp: Competition) -> None:
    if comp.matching.get("pairing") == "subset":
        raise Skipped("this version scores the rows the file holds, as published (test_published_pairing.py)")


def dropped_row_is_invalid(case: Case) -> list[str]:
    comp, sample = case.competition, case.fixture.sample
    _skip_subset(comp)
    report = _grade(case, sample.take(np.arange(1, sample.n_rows)), "dropped")
    if comp.matching.get("duplicate_ids") or comp.matching.get("pairing") in ("sorted", "sorted_index", "position"):
        return _invalid_problems(report, "a dropped row")
    return _invalid_problems(report, "a dropped row", "missing")


def duplicated_id_is_invalid(case: Case) -> list[str]:
    _skip_subset(case.competition)
    sample = case.fixture.sample
    order = np.concatenate([np.arange(sample.n_rows), [0]])
    return _invalid_problems(_grade(case, sample.take(order), "duplicated"), "a duplicated id")


def extra_id_is_invalid_or_ignored(case: Case) -> list[str]:
    comp, sample = case.competition, case.fixture.sample
    extra = sample.take(np.concatenate([np.arange(sample.n_rows), [0]]))
    first_id = comp.id_columns[0]
    ids = extra[first_id].copy()
    numeric = comp.column(first_id).kind == "int_id" or comp.column(first_id).options.get("numeric")
    ids[-1] = "999999999" if numeric else "no-such-id"
    report = _grade(case, _with(extra, **{first_id: ids}), "extra")
    if comp.matching.get("pairing") in ("sorted", "sorted_index", "position"):  # one row more than published pairs
        return _invalid_problems(report, "an extra id", "needs exactly")
    if comp.matching.get("extra_ids"):
        return [] if report.valid_submission else [f"an extra id is refused where it is ignored: {report.error}"]
    return _invalid_problems(report, "an extra id", "not in the test set")


def missing_column_is_invalid(case: Case) -> list[str]:
    comp, sample = case.competition, case.fixture.sample
    target = comp.targets[0][0]
    frame = Frame({k: v for k, v in sample.columns.items() if k != target}, sample.n_rows)
    return _invalid_problems(_grade(case, frame, "no_column"), f"a missing column {target!r}", "missing column", target)


def _numeric_target(comp: Competition) -> str | None:
    for sub, _ in comp.targets:
        if comp.column(sub).kind in ("float", "probability", "int"):
            return sub
    return None


def nan_and_text_in_numeric_column_are_invalid(case: Case) -> list[str]:
    comp, sample = case.competition, case.fixture.sample
    target = _numeric_target(comp)
    if target is None:
        raise Skipped("no numeric prediction column")
    cases = [("nan", "NaN"), ("not-a-number", "not numbers")]
    if comp.column(target).options.get("missing") in ("nan", "zero", "unscored"):
        cases = cases[1:]  # a missing cell is accepted, as the published grader accepts it
    problems = []
    for bad, word in cases:
        values = sample[target].copy()
        values[2] = bad
        report = _grade(case, _with(sample, **{target: values}), f"bad_{word}")
        problems += _invalid_problems(report, f"{bad!r} in {target!r}", target, word)
    return problems


#: Every conformance check by name, in the order they run.
CHECKS: dict[str, Callable[[Case], list[str]]] = {
    "declaration_is_consistent": declaration_is_consistent,
    "perfect_submission_reaches_best_and_gold": perfect_submission_reaches_best_and_gold,
    "sample_submission_is_valid": sample_submission_is_valid,
    "row_order_does_not_matter": row_order_does_not_matter,
    "dropped_row_is_invalid": dropped_row_is_invalid,
    "duplicated_id_is_invalid": duplicated_id_is_invalid,
    "extra_id_is_invalid_or_ignored": extra_id_is_invalid_or_ignored,
    "missing_column_is_invalid": missing_column_is_invalid,
    "nan_and_text_in_numeric_column_are_invalid": nan_and_text_in_numeric_column_are_invalid,
}


def run_conformance(competition: Competition, data_dir: Path) -> tuple[list[str], list[str]]:
    """Every check over ``competition``'s fixture written under ``data_dir``: the problems (``check: problem``) and
    the checks skipped (``check: why``)."""
    case = make_case(competition, data_dir)
    problems: list[str] = []
    skipped: list[str] = []
    for name, check in CHECKS.items():
        try:
            problems += [f"{name}: {problem}" for problem in check(case)]
        except Skipped as why:
            skipped.append(f"{name}: {why}")
    return problems, skipped
