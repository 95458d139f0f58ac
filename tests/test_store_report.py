import json
from pathlib import Path

import pytest

from podium.report import aggregate, write_report
from podium.store import RunStore


def _record(seed: int, competition: str, *, valid: bool, gold: bool = False, above: bool = False) -> dict:
    return {
        "run_group": "g",
        "competition_id": competition,
        "competition_version": 1,
        "seed": seed,
        "agent": "a",
        "status": "finished",
        "finished_at": "2026-01-01T00:00:00+00:00",
        "grade": {
            "score": 0.5 if valid else None,
            "valid_submission": valid,
            "submission_exists": True,
            "above_median": above,
            "gold_medal": gold,
            "silver_medal": gold,
            "bronze_medal": gold,
            "any_medal": gold,
        },
    }


def test_store_add_is_idempotent_and_reconcile_indexes_orphans(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    record = _record(0, "c1", valid=True)
    store.run_dir("g", "c1", 0).mkdir(parents=True)
    (store.run_dir("g", "c1", 0) / "record.json").write_text(json.dumps(record))
    store.add(record, store.run_dir("g", "c1", 0) / "record.json")
    store.add(record, store.run_dir("g", "c1", 0) / "record.json")
    assert len(store.rows("g")) == 1 and store.is_done("g", "c1", 0, "a")
    orphan = store.run_dir("g", "c2", 0)
    orphan.mkdir(parents=True)
    (orphan / "record.json").write_text(json.dumps(_record(0, "c2", valid=False)))
    assert store.reconcile("g") == 1 and store.reconcile("g") == 0
    assert {r["competition_id"] for r in store.rows("g")} == {"c1", "c2"}


def test_aggregate_is_mean_and_sem_over_seeds(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    # seed 0: 2/2 valid, 1/2 gold; seed 1: 1/2 valid, 0/2 gold
    for rec in (
        _record(0, "c1", valid=True, gold=True, above=True),
        _record(0, "c2", valid=True),
        _record(1, "c1", valid=True, above=True),
        _record(1, "c2", valid=False),
    ):
        store.add(rec, tmp_path / f"{rec['seed']}{rec['competition_id']}")
    summary = aggregate(store.rows("g"))["a"]
    assert summary["seeds"] == 2 and summary["competitions"] == 2
    valid = summary["rates"]["valid"]
    assert valid["mean"] == pytest.approx(75.0) and valid["sem"] == pytest.approx(25.0)
    gold = summary["rates"]["gold"]
    assert gold["mean"] == pytest.approx(25.0) and gold["sem"] == pytest.approx(25.0)
    assert (
        summary["rates"]["above median"]["mean"] == pytest.approx(50.0)
        and summary["rates"]["above median"]["sem"] == 0.0
    )
    json_path, md_path = write_report(tmp_path / "g", "g", store.rows("g"), {"c1": "reference", "c2": "kaggle"})
    text = md_path.read_text()
    assert "75.0 ± 25.0" in text and "reference" in text
    assert json.loads(json_path.read_text())["agents"]["a"]["rates"]["valid"]["mean"] == 75.0


def test_single_seed_has_sem_zero_as_published_and_the_table_shows_the_mean(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    store.add(_record(0, "c1", valid=True), tmp_path / "r")
    rows = store.rows()
    assert aggregate(rows)["a"]["rates"]["valid"] == {"mean": 100.0, "sem": 0.0, "ci_lower": 100.0, "ci_upper": 100.0}
    _, md_path = write_report(tmp_path / "g", "g", rows, {"c1": "kaggle"})
    assert "| a | 1 | 1 | 100.0 |" in md_path.read_text()


def test_only_complete_seeds_count_as_in_the_published_aggregation(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    # c2's seed 1 is missing (say the harness crashed): seed i is each competition's i-th run, so
    # c2's seed 2 pairs with c1's seed 1, and c1's third run is left out
    for seed, competition, valid in (
        (0, "c1", True),
        (1, "c1", False),
        (2, "c1", True),
        (0, "c2", True),
        (2, "c2", True),
    ):
        store.add(_record(seed, competition, valid=valid), tmp_path / f"{seed}{competition}")
    summary = aggregate(store.rows("g"))["a"]
    assert summary["seeds"] == 2 and summary["runs"] == 5
    valid = summary["rates"]["valid"]
    assert valid["mean"] == 75.0 and valid["sem"] == 25.0 and valid["ci_lower"] == 75.0 - 49.0
