"""The holdout task (issue 36 §1): a competition's public train re-split by podium with the episode's seed, graded
with the competition's metric against the rows it hides; the private answers are never read (the data dir here has
no ``private/`` at all), the hidden rows are nowhere in the sandbox, and a holdout grade claims no medal."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import gymnasium
import pandas as pd
import pytest

import podium.gym  # noqa: F401  (registers the ids)
from podium import registry
from podium.errors import UsageError
from podium.grading import grade
from podium.gym.holdout import HOLDOUT_DIR, build_holdout, unsupported
from podium.paths import CompetitionPaths
from test_gym_env import DATA, needs_bwrap, needs_data

ROOT = Path(__file__).resolve().parents[1]
COMPETITIONS = ("practice-titanic", "practice-wine")


@pytest.fixture(scope="module")
def public_only(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir holding only the practice competitions' public folders: no private answers to read."""
    root = tmp_path_factory.mktemp("public-only")
    for competition in COMPETITIONS:
        source = CompetitionPaths(DATA, competition).public
        if source.is_dir():
            shutil.copytree(source, CompetitionPaths(root, competition).public)
    return root


def test_the_holdout_list_in_the_docs_is_the_codes() -> None:
    text = (ROOT / "docs" / "gym.md").read_text(encoding="utf-8")
    listed = re.search(r"<!-- holdout-list -->\n(.*?)\n<!-- /holdout-list -->", text, re.S)
    assert listed is not None, "docs/gym.md lists the competitions with a holdout task between the markers"
    documented = sorted(re.findall(r"`([a-z0-9-]+)`", listed.group(1)))
    assert documented == sorted(c for c in registry.ids() if unsupported(registry.get(c)) is None)
    assert "practice-titanic" in documented and "spaceship-titanic" in documented


def test_a_competition_without_one_is_one_line_naming_why_and_the_fix() -> None:
    with pytest.raises(UsageError, match=r"aerial-cactus-identification has no holdout task: .*Fix: ") as refused:
        gymnasium.make("podium/aerial-cactus-identification-v1")
    assert "\n" not in str(refused.value)
    with pytest.raises(UsageError, match="rows=1"):
        gymnasium.make("podium/practice-titanic-v1", task="holdout", rows=1)


@needs_data
def test_the_resplit_is_the_seeds_cached_and_never_reads_the_private_answers(public_only: Path) -> None:
    titanic = registry.get("practice-titanic")
    first = build_holdout(titanic, public_only, 7, None)
    again = build_holdout(titanic, public_only, 7, None)
    other = build_holdout(titanic, public_only, 8, None)
    assert first == again and first != other and first.parent == public_only / HOLDOUT_DIR
    paths, others = CompetitionPaths(first, "practice-titanic"), CompetitionPaths(other, "practice-titanic")
    train = pd.read_csv(paths.public / "train.csv")
    hidden = pd.read_csv(paths.private / "test.csv")
    public_train = pd.read_csv(CompetitionPaths(public_only, "practice-titanic").public / "train.csv")
    assert list(hidden.columns) == ["id", "survived"] and set(train.id).isdisjoint(hidden.id)
    assert len(train) + len(hidden) == len(public_train) and set(hidden.id) <= set(public_train.id)
    assert "survived" not in pd.read_csv(paths.public / "test.csv").columns
    assert list(pd.read_csv(paths.public / "sample_submission.csv").id) == list(hidden.id)
    assert set(pd.read_csv(others.private / "test.csv").id) != set(hidden.id)  # another seed, another split
    small = build_holdout(titanic, public_only, 7, 60)
    kept = pd.read_csv(CompetitionPaths(small, "practice-titanic").public / "train.csv")
    assert len(kept) == 60 and set(kept.id) <= set(train.id)
    assert abs(kept.survived.mean() - train.survived.mean()) < 0.05  # stratified by the class
    assert sorted(p.name for p in (public_only / HOLDOUT_DIR).iterdir()) == sorted({first.name, other.name, small.name})
    with pytest.raises(UsageError, match=r"rows=5000 is more than the \d+ rows"):
        build_holdout(titanic, public_only, 7, 5000)


@needs_bwrap
@needs_data
def test_holdout_episodes_are_graded_against_the_hidden_rows_and_hide_them(public_only: Path, tmp_path: Path) -> None:
    for competition in COMPETITIONS:
        env = gymnasium.make(f"podium/{competition}-v1", task="holdout", runs_dir=str(tmp_path / "runs"),
                             run_group="h", time_limit="10m", data_dir=str(public_only), rows=50)  # fmt: skip
        obs, info = env.reset(seed=3)
        assert "holdout: the competition's public train re-split by podium (split seed 3" in obs
        cache = build_holdout(registry.get(competition), public_only, 3, 50)
        answers = CompetitionPaths(cache, competition).private / "test.csv"
        hidden_line = answers.read_text().splitlines()[1]
        looks = env.step({"tool": "bash", "command": (
            f"cat {answers} 2>&1 | head -2; ls {cache} 2>&1; echo env: $(env | grep -ci holdout); "
            "echo found: $(find / -xdev -path '*private*' -name '*.csv' 2>/dev/null | head -3); "
            "wc -l /home/data/train.csv"
        )})[0]  # fmt: skip
        assert looks.count("No such file or directory") == 2 and hidden_line not in looks, looks
        assert "\nenv: 0\nfound:\n51 /home/data/train.csv" in looks, looks
        assert "51 /home/data/train.csv" in looks
        env.step({"tool": "bash", "command": "cp /home/data/sample_submission.csv /home/submission/submission.csv"})
        _, reward, terminated, _, info = env.step({"tool": "submit"})
        env.close()
        record = json.loads(Path(info["record"]).read_text())
        expected = grade(registry.get(competition), record["grade"]["submission_path"], cache)
        signed = -expected.score if expected.is_lower_better else expected.score
        assert terminated and reward == pytest.approx(signed) and record["grade"]["score"] == expected.score
        assert record["gym"]["task"] == "holdout" and record["gym"]["split_seed"] == 3
        assert not record["grade"]["any_medal"] and record["grade"]["percentile"] is None
        assert record["grade"]["leaderboard"].startswith("holdout")
    assert not any((CompetitionPaths(public_only, c).private).exists() for c in COMPETITIONS)
