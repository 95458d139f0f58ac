"""Conformance over the whole registry, as Gymnasium's check_env runs over every env.

For each competition a tiny fixture in its real schema is generated from the declaration; the
grader must give the answers the metric's best value (and gold where medals exist), accept the
sample submission, ignore row order, and reject each broken variant with a clear message. The checks
themselves are :mod:`podium.author.conformance`, which ``podium check`` runs over one competition.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from podium import registry
from podium.author import conformance
from podium.author.conformance import Case

COMPETITIONS = registry.ids()
REFS = [f"{cid}@{v}" for cid in COMPETITIONS for v in registry.get(cid).versions]


@pytest.fixture(scope="module", params=REFS)
def case(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Case:
    comp = registry.get(request.param)
    return conformance.make_case(comp, tmp_path_factory.mktemp(comp.id.replace("-", "_")[:40]))


def _passes(check: Callable[[Case], list[str]], case: Case) -> None:
    try:
        problems = check(case)
    except conformance.Skipped as why:
        pytest.skip(str(why))
    assert not problems, problems


def test_declaration_is_consistent(case: Case) -> None:
    _passes(conformance.declaration_is_consistent, case)


def test_perfect_submission_reaches_best_and_gold(case: Case) -> None:
    _passes(conformance.perfect_submission_reaches_best_and_gold, case)


def test_sample_submission_is_valid(case: Case) -> None:
    _passes(conformance.sample_submission_is_valid, case)


def test_row_order_does_not_matter(case: Case) -> None:
    _passes(conformance.row_order_does_not_matter, case)


def test_dropped_row_is_invalid(case: Case) -> None:
    _passes(conformance.dropped_row_is_invalid, case)


def test_duplicated_id_is_invalid(case: Case) -> None:
    _passes(conformance.duplicated_id_is_invalid, case)


def test_extra_id_is_invalid_or_ignored(case: Case) -> None:
    _passes(conformance.extra_id_is_invalid_or_ignored, case)


def test_missing_column_is_invalid(case: Case) -> None:
    _passes(conformance.missing_column_is_invalid, case)


def test_nan_and_text_in_numeric_column_are_invalid(case: Case) -> None:
    _passes(conformance.nan_and_text_in_numeric_column_are_invalid, case)


def test_every_library_check_has_its_test() -> None:
    mine = {name.removeprefix("test_") for name in globals() if name.startswith("test_")}
    assert set(conformance.CHECKS) <= mine, sorted(set(conformance.CHECKS) - mine)
