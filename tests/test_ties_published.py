"""Version 1 where the published grader sorts on a key with ties: the portable numbers, on any machine.

``tests/fixtures/cases/ties-v1`` (a copy of ``../shared/cases/ties-v1``; its README has the whole
table) holds two cases graded by the published grader (openai/mle-bench at 783b15a, numpy 1.26.4,
pandas 2.2.2). Both sort the submission and the answers with pandas' default sort on a key that
repeats, then pair rows by position, so the order numpy's unstable quicksort leaves tied rows in
decides the score; numpy 1.26.4 orders them one way with its AVX-512 sort and another with its
portable introsort:

| case | published, AVX-512 | published, portable sort |
|---|---|---|
| hms shuffled_perfect.csv | 8.326187044263847 | 7.5937659158236155 |
| google-quest dup_id.csv | 0.649698768315408 | 0.6435885717082432 |

Version 1 gives the portable numbers, to the last bit, whatever CPU and numpy run the tests.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from podium import registry
from podium.grading import grade, load_answers
from podium.grading.grader import score_frames
from podium.grading.table import read_csv
from podium.paths import CompetitionPaths

#: A copy of ../shared/cases/ties-v1 travels with the tests, so a clone anywhere runs them.
CASES = Path(__file__).resolve().parent / "fixtures" / "cases" / "ties-v1"
HMS, QUEST = "hms-harmful-brain-activity-classification", "google-quest-challenge"

#: The published grader's unrounded scores with numpy's portable sort (the case's README).
PORTABLE = {
    (HMS, "shuffled_perfect.csv"): 7.5937659158236155,
    (QUEST, "dup_id.csv"): 0.6435885717082432,
}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Both cases' answers and samples in the prepared layout."""
    root = tmp_path_factory.mktemp("ties")
    for cid in (HMS, QUEST):
        paths = CompetitionPaths(root, cid)
        paths.private.mkdir(parents=True)
        paths.public.mkdir(parents=True)
        shutil.copyfile(CASES / cid / "test.csv", paths.private / "test.csv")
        shutil.copyfile(CASES / cid / "sample_submission.csv", paths.public / "sample_submission.csv")
    return root


@pytest.mark.parametrize(("cid", "name"), sorted(PORTABLE))
def test_version_1_gives_the_published_portable_score_exactly(cid: str, name: str, data_dir: Path) -> None:
    comp = registry.get(cid, 1)
    score, _ = score_frames(comp, load_answers(comp, data_dir), read_csv(CASES / cid / name, what="submission"))
    assert score == PORTABLE[(cid, name)]
    report = grade(comp, CASES / cid / name, data_dir)
    assert report.valid_submission and report.score == round(PORTABLE[(cid, name)], 5)


def test_version_2_pairs_the_hms_rows_in_file_order(data_dir: Path) -> None:
    """The shuffled answers themselves: a perfect score once rows of one EEG pair in file order."""
    report = grade(registry.get(HMS, 2), CASES / HMS / "shuffled_perfect.csv", data_dir)
    assert report.valid_submission and report.score == 0.0


def test_version_2_refuses_the_repeated_qa_id(data_dir: Path) -> None:
    report = grade(registry.get(QUEST, 2), CASES / QUEST / "dup_id.csv", data_dir)
    assert not report.valid_submission and report.error and "more than one row" in report.error
