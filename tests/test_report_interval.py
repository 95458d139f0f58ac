"""podium's t interval stays inside what a rate can be: 0 to 100 percent (issue 35 §5.10)."""

from __future__ import annotations

from typing import Any

from podium.report.aggregate import podium_view


def _run(medal: bool) -> dict[str, Any]:
    flags = {"submission_exists": True, "valid_submission": True, "above_median": medal}
    return {**flags, "gold_medal": medal, "silver_medal": False, "bronze_medal": False}


def test_the_t_interval_is_clipped_to_0_and_100_percent() -> None:
    # three seeds of two competitions: any medal 100%, 50%, 100% -> mean 83.3, t interval [11.6, 155.1] unclipped
    seeds = [[_run(True), _run(True)], [_run(True), _run(False)], [_run(True), _run(True)]]
    view = podium_view(seeds)
    assert view is not None
    for key, metric in view["metrics"].items():
        assert 0.0 <= metric["t_lower"] <= metric["mean"] <= metric["t_upper"] <= 100.0, (key, metric)
    assert view["metrics"]["any_medal_percentage"]["t_upper"] == 100.0
    none = podium_view([[_run(False), _run(False)], [_run(True), _run(False)], [_run(False), _run(False)]])
    assert none is not None and none["metrics"]["any_medal_percentage"]["t_lower"] == 0.0
