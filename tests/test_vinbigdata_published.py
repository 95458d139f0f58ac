"""vinbigdata-chest-xray-abnormalities-detection@1 against the published grader's own numbers.

``tests/fixtures/cases/vinbigdata-v1`` (a copy of ``../shared/cases/vinbigdata-v1``) holds a small answers file (in the prepared long layout, its
images NOT in sorted id order), its sample and three submissions, with the unrounded scores the
published grader (openai/mle-bench at 783b15a, pycocotools) gave them. The published evaluation
numbers images and true boxes in the answers' order; pycocotools breaks ties of confidence across
images by image id and never matches the true box numbered 0, so the answers' order reaches the
score. Grading aligns rows by sorted id, which is why the metric is handed each row's position in
the answers (``answers.@row``). (The prepared answers are sorted by id, as the published
preparation's groupby writes them, so there both orders agree; these answers are not.)
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from podium import registry
from podium.fixtures import Fixture, write_prepared
from podium.grading import grade, load_answers
from podium.grading.grader import score_frames
from podium.grading.table import Frame, read_csv
from podium.paths import CompetitionPaths

VIN = "vinbigdata-chest-xray-abnormalities-detection"
ROOT = Path(__file__).resolve().parents[1]
#: A copy of ../shared/cases/vinbigdata-v1 travels with the tests, so a clone anywhere runs them.
CASE = ROOT / "tests" / "fixtures" / "cases" / "vinbigdata-v1"

#: The published grader's unrounded scores (the case's README).
PUBLISHED = {
    "perfect.csv": 0.970957095709571,
    "shuffled_perfect.csv": 0.970957095709571,
    "near.csv": 0.9135313531353135,
}


@pytest.fixture(scope="module")
def case_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (CASE / "answers.csv").is_file():
        pytest.skip(f"the published vinbigdata case is not at {CASE} (copied from ../shared/cases)")
    data_dir = tmp_path_factory.mktemp("vinbig")
    paths = CompetitionPaths(data_dir, VIN)
    paths.private.mkdir(parents=True)
    paths.public.mkdir(parents=True)
    shutil.copyfile(CASE / "answers.csv", paths.private / "answers.csv")
    shutil.copyfile(CASE / "sample_submission.csv", paths.public / "sample_submission.csv")
    return data_dir


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_version_1_gives_the_published_unrounded_score(name: str, case_dir: Path) -> None:
    comp = registry.get(f"{VIN}@1")
    answers = load_answers(comp, case_dir)
    score, _ = score_frames(comp, answers, read_csv(CASE / name, what="submission"))
    assert score == pytest.approx(PUBLISHED[name], abs=1e-9)
    report = grade(comp, CASE / name, case_dir)
    assert report.valid_submission and report.score == round(PUBLISHED[name], 5)


def test_version_2_ignores_the_published_numbering(case_dir: Path) -> None:
    """Version 2 matches every true box: the answers scored against themselves give 1, in any row order."""
    comp = registry.get(f"{VIN}@2")
    for name in ("perfect.csv", "shuffled_perfect.csv"):
        assert grade(comp, CASE / name, case_dir).score == 1.0
    near = grade(comp, CASE / "near.csv", case_dir)
    assert near.valid_submission and near.score is not None and near.score < 1.0


def test_answers_out_of_id_order_keep_the_published_numbering(tmp_path: Path) -> None:
    """Without the shared case: image "b" before image "a" in the answers. The published grader
    numbers b's box 0, so class 3 (b's only box) is never matched (AP 0) while both boxes of class
    5 are (AP 1): 0.5. Numbering in sorted id order would leave a class-5 box unmatched instead."""
    comp = registry.get(f"{VIN}@1")
    cells = {"b": "3 1 10 10 50 50", "a": "5 1 10 10 50 50 5 1 100 100 150 150"}
    answers = Frame(
        {
            "image_id": np.array(list(cells), dtype=object),
            "PredictionString": np.array(list(cells.values()), dtype=object),
        },
        2,
    )
    write_prepared(comp, Fixture(answers, answers, answers), tmp_path)
    for order in (["b", "a"], ["a", "b"]):  # the submission's own order does not matter here
        path = tmp_path / f"{''.join(order)}.csv"
        path.write_text("image_id,PredictionString\n" + "".join(f"{i},{cells[i]}\n" for i in order))
        assert grade(comp, path, tmp_path).score == 0.5
        assert grade(registry.get(f"{VIN}@2"), path, tmp_path).score == 1.0
