"""Preparation over every competition that declares a prepare step, from generated raw data."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from podium import registry
from podium.competition import Competition
from podium.data.prepare import PrepareError, prepare_competition
from podium.fixtures import make_raw
from podium.grading import grade, load_answers
from podium.grading.table import Frame, write_csv
from podium.metrics import METRICS
from podium.paths import CompetitionPaths


def _has_prepare(comp: Competition) -> bool:
    return comp.has_prepare_step


PREPARED = [cid for cid in registry.ids() if _has_prepare(registry.get(cid))]
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module", params=PREPARED)
def prepared(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Competition, Path, Path]:
    comp = registry.get(request.param)
    root = tmp_path_factory.mktemp(comp.id.replace("-", "_")[:40])
    raw = make_raw(comp, root / "raw-source")
    outcome = prepare_competition(comp, root / "data", source=raw)
    assert outcome.status == "prepared", outcome
    return comp, raw, root / "data"


def test_prepared_layout_and_record(prepared: tuple[Competition, Path, Path]) -> None:
    comp, _, data_dir = prepared
    paths = CompetitionPaths(data_dir, comp.id)
    record = paths.record()
    assert record is not None and record["version"] == comp.version
    assert (paths.private / comp.answers).is_file()
    assert (paths.prepared / comp.sample_submission).is_file()
    assert not list(paths.root.glob(".prepared.tmp-*"))
    if (comp.folder / "description.md").is_file():
        assert (paths.public / "description.md").read_text() == (comp.folder / "description.md").read_text()


def test_answers_win_gold_and_sample_is_valid(prepared: tuple[Competition, Path, Path], tmp_path: Path) -> None:
    comp, _, data_dir = prepared
    answers = load_answers(comp, data_dir)
    perfect_submission = comp.hook("perfect_submission")
    perfect = perfect_submission(comp, answers) if perfect_submission is not None else answers
    if comp.matching.get("extra_columns") is False:  # the answers' extra columns would be rejected
        perfect = Frame({c: perfect[c] for c in comp.column_names}, perfect.n_rows)
    report = grade(comp, write_csv(perfect, tmp_path / "perfect.csv"), data_dir)
    assert report.valid_submission, report.error
    best = METRICS[comp.metric.name].best
    if best is not None and not comp.fixture.get("perfect_below_best"):
        assert report.score == pytest.approx(best, abs=1e-6)
    if comp.awards_medals and comp.leaderboard is not None:
        assert report.gold_medal
    sample = grade(comp, CompetitionPaths(data_dir, comp.id).prepared / comp.sample_submission, data_dir)
    assert sample.valid_submission, sample.error


def test_rerun_skips_and_force_reproduces_checksums(prepared: tuple[Competition, Path, Path]) -> None:
    comp, raw, data_dir = prepared
    paths = CompetitionPaths(data_dir, comp.id)
    before = paths.record()
    assert prepare_competition(comp, data_dir, source=raw).status == "skipped"
    assert prepare_competition(comp, data_dir, source=raw, force=True).status == "prepared"
    after = paths.record()
    assert before is not None and after is not None
    assert after["checksums"] == before["checksums"], "prepare must be deterministic"


def _pin_of() -> Callable[[dict[str, str]], str]:
    spec = importlib.util.spec_from_file_location("prepared_digest", ROOT / "scripts" / "prepared_digest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    pin: Callable[[dict[str, str]], str] = module.pin
    return pin


PINS: dict[str, str] = json.loads((ROOT / "tests" / "prepared_pins.json").read_text(encoding="utf-8"))
REGENERATE = "if the change is meant, rewrite them: python scripts/prepared_digest.py --pins tests/prepared_pins.json"


def test_every_declarative_competition_is_pinned() -> None:
    declarative = {registry.get(cid).ref for cid in PREPARED if registry.get(cid).prepare.get("split")}
    assert set(PINS) == declarative, REGENERATE


def test_declarative_prepared_bytes_do_not_change(prepared: tuple[Competition, Path, Path]) -> None:
    """The prepared files of a declarative competition are the pinned ones, byte for byte."""
    comp, _, data_dir = prepared
    if comp.ref not in PINS:  # prepared by its prepare.py
        return
    record = CompetitionPaths(data_dir, comp.id).record()
    assert record is not None
    assert _pin_of()(record["checksums"]) == PINS[comp.ref], f"{comp.ref}: the prepared files changed; {REGENERATE}"


# ---- robustness, on one small declarative competition ---------------------------------------

COMP = "spaceship-titanic"


def test_interrupted_prepare_leaves_nothing_ready(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    comp = registry.get(COMP)
    raw = make_raw(comp, tmp_path / "raw")

    def crash(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("podium.data.prepare.scan_for_leaks", crash)
    with pytest.raises(KeyboardInterrupt):
        prepare_competition(comp, tmp_path / "data", source=raw)
    paths = CompetitionPaths(tmp_path / "data", comp.id)
    assert not paths.prepared.exists() and not list(paths.root.glob(".prepared.tmp-*"))
    monkeypatch.undo()
    assert prepare_competition(comp, tmp_path / "data", source=raw).status == "prepared"


def test_stale_staging_from_a_killed_run_is_removed(tmp_path: Path) -> None:
    comp = registry.get(COMP)
    raw = make_raw(comp, tmp_path / "raw")
    paths = CompetitionPaths(tmp_path / "data", comp.id)
    stale = paths.staging("12345")
    (stale / "public").mkdir(parents=True)
    (stale / "public" / "train.csv").write_text("half-written")
    assert not paths.prepared.exists()
    assert prepare_competition(comp, tmp_path / "data", source=raw).status == "prepared"
    assert not stale.exists()


def test_missing_raw_file_is_a_clear_error(tmp_path: Path) -> None:
    comp = registry.get(COMP)
    raw = make_raw(comp, tmp_path / "raw")
    (raw / "train.csv").unlink()
    with pytest.raises(PrepareError, match=r"raw file is missing.*train\.csv"):
        prepare_competition(comp, tmp_path / "data", source=raw)
    assert not CompetitionPaths(tmp_path / "data", comp.id).prepared.exists()


def test_no_raw_data_and_no_credentials(tmp_path: Path) -> None:
    with pytest.raises(PrepareError, match="--from"):
        prepare_competition(registry.get(COMP), tmp_path / "data")


def test_split_matches_train_test_split_on_the_whole_table(tmp_path: Path) -> None:
    import pandas as pd
    from sklearn.model_selection import train_test_split

    comp = registry.get(COMP)
    raw = make_raw(comp, tmp_path / "raw")
    prepare_competition(comp, tmp_path / "data", source=raw)
    table = pd.read_csv(raw / "train.csv", dtype=str)
    _, expected = train_test_split(table, test_size=0.1, random_state=0)
    answers = pd.read_csv(tmp_path / "data" / comp.id / "prepared" / "private" / comp.answers, dtype=str)
    assert sorted(answers["PassengerId"]) == sorted(expected["PassengerId"])
    public_test = pd.read_csv(tmp_path / "data" / comp.id / "prepared" / "public" / "test.csv", dtype=str)
    assert "Transported" not in public_test.columns
    assert np.array_equal(np.sort(public_test["PassengerId"]), np.sort(answers["PassengerId"]))


def test_kill_9_mid_prepare_then_rerun(tmp_path: Path) -> None:
    """A real SIGKILL while the staging folder is being written: nothing looks ready, rerun works."""
    import os
    import signal
    import subprocess
    import sys
    import time

    comp = registry.get(COMP)
    raw = make_raw(comp, tmp_path / "raw")
    data = tmp_path / "data"
    code = (
        "import sys, time\n"
        "import podium.data.prepare as p\n"
        "from podium import registry\n"
        "from pathlib import Path\n"
        "def stall(*a, **k):\n"
        "    print('staged', flush=True); time.sleep(60)\n"
        "p.scan_for_leaks = stall\n"
        "p.prepare_competition(registry.get(sys.argv[1]), Path(sys.argv[2]), source=Path(sys.argv[3]))\n"
    )
    child = subprocess.Popen([sys.executable, "-c", code, COMP, str(data), str(raw)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "staged"
        paths = CompetitionPaths(data, comp.id)
        assert list(paths.root.glob(".prepared.tmp-*")), "the staging folder should exist mid-prepare"
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=30)
    deadline = time.monotonic() + 5
    while child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not paths.prepared.exists(), "a killed prepare must leave nothing that looks ready"
    from podium.errors import DataNotFoundError

    with pytest.raises(DataNotFoundError):
        load_answers(comp, data)
    assert prepare_competition(comp, data, source=raw).status == "prepared"
    assert not list(paths.root.glob(".prepared.tmp-*"))


def test_grading_other_version_than_prepared_warns(tmp_path: Path) -> None:
    comp = registry.get("random-acts-of-pizza", latest=True)  # version 2 changes the public data
    raw = make_raw(comp, tmp_path / "raw")
    prepare_competition(comp, tmp_path / "data", source=raw)
    sample = CompetitionPaths(tmp_path / "data", comp.id).prepared / comp.sample_submission
    same = grade(comp, sample, tmp_path / "data")
    assert not any("prepared for version" in w for w in same.warnings)
    older = grade(registry.get(f"{comp.id}@1"), sample, tmp_path / "data")
    assert any("prepared for version 2, graded as random-acts-of-pizza@1" in w for w in older.warnings)


def test_a_version_that_only_changes_grading_uses_the_same_prepared_data(tmp_path: Path) -> None:
    published = registry.get("tgs-salt-identification-challenge")
    corrected = registry.get(published.id, latest=True)
    raw = make_raw(published, tmp_path / "raw")
    assert prepare_competition(published, tmp_path / "data", source=raw).status == "prepared"
    assert prepare_competition(corrected, tmp_path / "data", source=raw).status == "skipped"
    sample = CompetitionPaths(tmp_path / "data", published.id).prepared / published.sample_submission
    for comp in (published, corrected):
        report = grade(comp, sample, tmp_path / "data")
        assert not any("prepared for version" in w for w in report.warnings), report.warnings
        (other,) = report.other_versions  # both definitions, side by side
        assert {report.competition_version, other["competition_version"]} == {1, 2}
