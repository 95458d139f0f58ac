"""``podium new`` re-declares competitions of the benchmark from their raw-file layout (the generated raw folders
of the test fixtures, ``podium.fixtures.make_raw``) and their Kaggle leaderboard, and the result is compared
with the hand-written declaration: metric, direction, thresholds, team count, columns and split size.

Every difference is written down in ``DIFFERENCES`` (and explained in docs/declaring.md's table): a new
difference fails the test, and so does one that went away without the table being updated. Where
``../shared/competitions/leaderboards/`` is absent, each board is a stand-in generated from the committed
``leaderboard.json`` (its quantiles, with the medal and median positions set to the recorded thresholds).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

import author_fixtures
from author_fixtures import board_csv
from podium import declarations, registry
from podium.author import NewRequest, new_competition
from podium.data.leaderboard_csv import read_leaderboard_csv
from podium.data.prepare import prepare_competition
from podium.fixtures import make_fixture, make_raw, write_csv, write_prepared
from podium.grading import grade
from podium.leaderboard import Leaderboard
from podium.metrics import METRICS

AUC = "Area Under Receiver Operating Characteristic Curve"

#: Each competition's flags: what a user would pass where the generated raw folder has no sample submission.
CASES: dict[str, dict[str, Any]] = {
    "aerial-cactus-identification": {"metric": AUC},
    "dog-breed-identification": {"targets": ("breed",), "metric": "Multi Class Log Loss"},
    "spooky-author-identification": {"targets": ("author",), "metric": "Multi Class Log Loss"},
    "champs-scalar-coupling": {
        "targets": ("scalar_coupling_constant",),
        "metric": "mean_log_mae_by_group",
        "metric_inputs": {"groups": "type"},
    },
    "nomad2018-predict-transparent-conductors": {
        "targets": ("formation_energy_ev_natom", "bandgap_energy_ev"),
        "metric": "Mean Columnwise Root Mean Squared Logarithmic Error",
    },
    "tabular-playground-series-dec-2021": {"targets": ("Cover_Type",), "metric": "Categorization Accuracy"},
    "tabular-playground-series-may-2022": {"targets": ("target",), "metric": AUC},
    "us-patent-phrase-to-phrase-matching": {"targets": ("score",), "metric": "Pearson Correlation Coefficient"},
    "new-york-city-taxi-fare-prediction": {"targets": ("fare_amount",), "metric": "Root Mean Squared Error"},
    "learning-agency-lab-automated-essay-scoring-2": {"targets": ("score",), "metric": "Quadratic Weighted Kappa"},
    "aptos2019-blindness-detection": {"targets": ("diagnosis",), "metric": "Quadratic Weighted Kappa"},
    "petfinder-pawpularity-score": {"targets": ("Pawpularity",), "metric": "Root Mean Squared Error"},
    "plant-pathology-2020-fgvc7": {
        "targets": ("healthy", "multiple_diseases", "rust", "scab"),
        "metric": "Mean Columnwise Area Under Receiver Operating Characteristic Curve",
    },
}

_NO_TEST_SET = "the generated raw folder holds no Kaggle test set to measure, so 0.1"
#: (competition, what) -> why they differ: the differences the table in docs/declaring.md explains.
DIFFERENCES: dict[tuple[str, str], str] = {
    ("aerial-cactus-identification", "test_size"): _NO_TEST_SET,
    ("tabular-playground-series-may-2022", "test_size"): _NO_TEST_SET,
    ("new-york-city-taxi-fare-prediction", "test_size"): _NO_TEST_SET,
    ("dog-breed-identification", "columns"): "the generated labels hold 34 of the 120 breeds: a column for each",
    ("plant-pathology-2020-fgvc7", "columns"): "AUC's predictions as probabilities; the published grader took floats",
}


def _kinds(columns: dict[str, Any], class_columns: dict[str, Any] | None) -> dict[str, str]:
    kinds = {name: spec if isinstance(spec, str) else spec["kind"] for name, spec in columns.items()}
    if class_columns:
        kinds |= dict.fromkeys(class_columns["names"], class_columns["kind"])
    return kinds


def redeclare(competition_id: str, tmp: Path) -> dict[str, tuple[Any, Any]]:
    """(podium new's, the hand-written) of each compared figure."""
    builtin = registry.get(competition_id)
    raw = make_raw(builtin, tmp / "raw" / competition_id)
    case = CASES[competition_id]
    request = NewRequest(
        f"re-{competition_id}", tmp / "out", source=raw, leaderboard=board_csv(competition_id, tmp),
        targets=case.get("targets", ()), metric=case["metric"], metric_inputs=case.get("metric_inputs", {}),
    )  # fmt: skip
    written = new_competition(request)
    assert not written.todos
    mine = yaml.safe_load((written.folder / "competition.yaml").read_text(encoding="utf-8"))
    theirs = registry._read_declaration(competition_id)
    board = Leaderboard.from_dict(json.loads((written.folder / "leaderboard.json").read_text()))
    assert builtin.leaderboard is not None
    split, their_split = mine["prepare"]["split"], theirs["prepare"]["split"]
    return {
        "metric": (mine["metric"]["name"], theirs["metric"]["name"]),
        "direction": (mine["metric"]["higher_is_better"], theirs["metric"]["higher_is_better"]),
        "teams": (board.n_teams, builtin.leaderboard.n_teams),
        "thresholds": (
            [round(board.gold, 9), round(board.silver, 9), round(board.bronze, 9), round(board.median, 9)],
            [
                round(x, 9)
                for x in (
                    builtin.leaderboard.gold,
                    builtin.leaderboard.silver,
                    builtin.leaderboard.bronze,
                    builtin.leaderboard.median,
                )
            ],
        ),
        "ids": (mine["id_columns"], theirs["id_columns"]),
        "columns": (_kinds(mine["columns"], None), _kinds(theirs["columns"], theirs.get("class_columns"))),
        "test_size": (split["test_size"], their_split.get("test_size")),
        "group": (split.get("group"), their_split.get("group")),
    }


@pytest.fixture(scope="module")
def redeclared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict[str, tuple[Any, Any]]]]:
    tmp = tmp_path_factory.mktemp("redeclare")
    return tmp / "out", {cid: redeclare(cid, tmp) for cid in CASES}


@pytest.fixture(scope="module")
def compared(
    redeclared: tuple[Path, dict[str, dict[str, tuple[Any, Any]]]],
) -> dict[str, dict[str, tuple[Any, Any]]]:
    return redeclared[1]


def test_at_least_five_of_the_75_are_redeclared(compared: dict[str, dict[str, tuple[Any, Any]]]) -> None:
    split75 = set(registry.split_ids("split75"))
    assert len(set(compared) & split75) >= 5


@pytest.mark.parametrize("competition_id", sorted(CASES))
def test_the_redeclaration_agrees_or_the_difference_is_written_down(
    competition_id: str, compared: dict[str, dict[str, tuple[Any, Any]]]
) -> None:
    for what, (mine, theirs) in compared[competition_id].items():
        if (competition_id, what) in DIFFERENCES:
            assert mine != theirs, (competition_id, what, "agrees now: take it out of DIFFERENCES and the table")
        else:
            assert mine == theirs, (competition_id, what, mine, theirs)


def test_each_written_down_difference_is_the_one_explained(compared: dict[str, dict[str, tuple[Any, Any]]]) -> None:
    for competition_id, what in DIFFERENCES:
        mine, theirs = compared[competition_id][what]
        if what == "test_size":
            assert mine == 0.1 and theirs != 0.1
    mine, theirs = compared["dog-breed-identification"]["columns"]
    assert len(mine) == 35 and len(theirs) == 121 and mine.items() <= theirs.items()
    mine, theirs = compared["plant-pathology-2020-fgvc7"]["columns"]
    assert mine.keys() == theirs.keys() and {mine[c] for c in CASES["plant-pathology-2020-fgvc7"]["targets"]} == {
        "probability"
    }


@pytest.mark.parametrize("competition_id", ["dog-breed-identification", "us-patent-phrase-to-phrase-matching"])
def test_the_stand_in_board_gives_the_recorded_figures(
    competition_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where ../shared is absent the comparison runs on a stand-in; it must give the committed figures."""
    monkeypatch.setattr(author_fixtures, "SHARED", tmp_path / "absent")
    builtin = registry.get(competition_id).leaderboard
    assert builtin is not None
    scores = read_leaderboard_csv(board_csv(competition_id, tmp_path)).scores
    board = Leaderboard.from_scores(scores, higher_is_better=builtin.higher_is_better)
    assert board.n_teams == builtin.n_teams
    for mine, theirs in zip((board.gold, board.silver, board.bronze, board.median),
                            (builtin.gold, builtin.silver, builtin.bronze, builtin.median), strict=True):  # fmt: skip
        assert mine == pytest.approx(theirs, rel=1e-12, abs=1e-12)


def test_each_redeclaration_passes_the_conformance_fixture_and_prepares_its_generated_raw_folder(
    redeclared: tuple[Path, dict[str, dict[str, tuple[Any, Any]]]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The written declaration is complete for every stage: the generated fixture grades (the answers best and
    gold, the sample valid), and ``make_raw`` builds a raw folder from its ``prepare: raw:`` that prepares."""
    monkeypatch.setenv(declarations.PATH_VARIABLE, str(redeclared[0]))
    for competition_id in CASES:
        competition = registry.get(f"re-{competition_id}")
        fixture = make_fixture(competition)
        data = tmp_path / competition.id
        write_prepared(competition, fixture, data)
        perfect = grade(competition, write_csv(fixture.perfect, data / "perfect.csv"), data)
        sample = grade(competition, write_csv(fixture.sample, data / "sample.csv"), data)
        assert perfect.valid_submission and sample.valid_submission, (competition.id, perfect.error, sample.error)
        best = METRICS[competition.metric.name].best
        assert best is None or perfect.score == pytest.approx(best, abs=1e-6), (competition.id, perfect.score)
        assert perfect.gold_medal, competition.id
        raw = make_raw(competition, tmp_path / "raw" / competition.id)
        outcome = prepare_competition(competition, tmp_path / "prepared", source=raw)
        assert outcome.status == "prepared", (competition.id, outcome.detail)
