"""Two hostile files of issue 19 (fuzzing): a million-digit integer in a cell, a long file name.

Before the fix, a cell of a million digits made grading and validation of 39 competitions raise
Python's integer-string-length ``ValueError`` (``podium grade-sample`` / ``validate`` exited 70,
"internal error"), and a 240-character name ending in ``.csv`` was refused as "not a .csv file"
because the name was cut to 200 characters before the suffix rule looked at it.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from podium import registry
from podium.competition import Competition
from podium.fixtures import make_fixture, write_prepared
from podium.grading import check_submission, expected_keys, grade, load_answers, read_submission
from podium.grading.files import open_user_file
from podium.grading.table import write_csv
from podium.grading.validator import validate
from podium.services import ValidationServer, sandbox_file

HUGE = "1" * 1_000_000
SRC = Path(__file__).resolve().parents[1] / "src"
EXIT_INVALID = 1  # podium grade-sample / validate on an invalid submission (70 is a podium bug)


def _podium(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    env["OMP_NUM_THREADS"] = "1"
    return subprocess.run([sys.executable, "-m", "podium", *args], capture_output=True, text=True, env=env, timeout=300)


@pytest.fixture(scope="module", params=registry.ids())
def prepared(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    comp = registry.get(request.param)
    fixture = make_fixture(comp)
    root = tmp_path_factory.mktemp(comp.id.replace("-", "_")[:40])
    prepared_dir = write_prepared(comp, fixture, root)
    path = write_csv(fixture.perfect, root / "perfect.csv")
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    return {"competition": comp, "root": root, "sample": prepared_dir / comp.sample_submission, "rows": rows}


def _write(rows: list[list[str]], path: Path) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(rows)
    return path


@pytest.mark.parametrize("where", ["id", "value"])
def test_a_million_digit_integer_is_an_invalid_cell(prepared: dict[str, object], where: str) -> None:
    """In the first id column or the last column of every competition: invalid, one short line,
    and validation says the same (or, where only the metric can see the fault, the shared check
    passes with the answers' ids too, as in test_submission_fuzz.py)."""
    comp, root, sample = prepared["competition"], Path(str(prepared["root"])), Path(str(prepared["sample"]))
    assert isinstance(comp, Competition)
    rows = [list(r) for r in prepared["rows"]]  # type: ignore[attr-defined]
    column = rows[0].index(comp.id_columns[0]) if where == "id" else len(rows[0]) - 1
    rows[1][column] = HUGE
    path = _write(rows, root / f"huge_{where}.csv")
    report = grade(comp, path, root)
    validation = validate(comp, path, sample)
    id_kind = next(c.kind for c in comp.columns if c.name == comp.id_columns[0])
    if where == "id" and report.valid_submission and comp.matching.get("extra_ids") and id_kind == "id":
        # version 1 of a competition whose published grader accepts an id it does not know (rows paired
        # by position or by sorted order): a million-character id string is such an id, read as text
        assert comp.matching.get("pairing", "key") != "key" and validation.valid, (comp.matching, validation.error)
        return
    assert not report.valid_submission and report.submission_exists
    error = report.error or ""
    assert error and "\n" not in error and len(error) < 1000, error[:300]
    unscored_sample_ids = bool(comp.matching.get("extra_ids"))  # h-and-m's sample lists more ids than are scored
    if not validation.valid and unscored_sample_ids and "have no prediction" in error:
        assert "have no prediction" in (validation.error or ""), validation.error  # counted against other ids
    elif not validation.valid:
        assert validation.error == report.error
    else:
        with open_user_file(path) as file:
            answer_keys = expected_keys(comp, load_answers(comp, root), answers=True)
            check_submission(comp, read_submission(comp, file), answer_keys)


# -- the command line and the in-sandbox endpoint --------------------------------------------------


CID = "aptos2019-blindness-detection"  # an int label: one of the 39 that crashed


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Competition, Path, list[list[str]]]]:
    comp = registry.get(CID)
    fixture = make_fixture(comp)
    root = tmp_path_factory.mktemp("cli")
    write_prepared(comp, fixture, root)
    path = write_csv(fixture.perfect, root / "perfect.csv")
    with path.open(newline="", encoding="utf-8") as handle:
        yield comp, root, list(csv.reader(handle))


def _endpoint_says(comp: Competition, root: Path, submission: Path) -> str:
    """What the agent-facing validation endpoint tells the sandbox client about ``submission``."""
    short = Path(tempfile.mkdtemp(prefix="pv-", dir="/tmp"))  # a Unix socket path must stay short
    sample = root / comp.id / "prepared" / comp.sample_submission
    try:
        with ValidationServer(comp, sample, short / "v.sock", short / "validation.jsonl") as server:
            env = {**os.environ, "PODIUM_VALIDATION_SOCKET": str(server.socket_path)}
            client = [sys.executable, str(sandbox_file("validate_submission.py")), str(submission)]
            result = subprocess.run(client, capture_output=True, text=True, env=env, timeout=120, check=False)
        (call,) = server.calls
        return f"{result.returncode} {call['verdict']} {call['error']}"
    finally:
        for leftover in short.iterdir():
            leftover.unlink()
        short.rmdir()


def test_huge_cells_give_one_reason_on_the_command_line_and_the_endpoint(
    data: tuple[Competition, Path, list[list[str]]],
) -> None:
    comp, root, perfect = data
    for column in (0, len(perfect[0]) - 1):
        rows = [list(r) for r in perfect]
        rows[2][column] = HUGE
        path = _write(rows, root / f"huge{column}.csv")
        graded = _podium("grade-sample", str(path), comp.ref, "--data-dir", str(root))
        checked = _podium("validate", str(path), comp.ref, "--data-dir", str(root))
        assert graded.returncode == checked.returncode == EXIT_INVALID, graded.stderr + checked.stderr
        reason = json.loads(checked.stdout)["error"]
        assert json.loads(graded.stdout)["error"] == reason and "\n" not in reason
        assert ("not in the test set" if column == 0 else "too large") in reason, reason  # a text id; an int label
        assert _endpoint_says(comp, root, path) == f"1 invalid {reason}"


# -- long file names ----------------------------------------------------------------------------


def test_a_240_character_csv_name_is_graded(data: tuple[Competition, Path, list[list[str]]], tmp_path: Path) -> None:
    comp, root, perfect = data
    long_csv = _write(perfect, tmp_path / ("s" * 236 + ".csv"))
    sample = root / comp.id / "prepared" / comp.sample_submission
    report = grade(comp, long_csv, root)
    assert report.valid_submission and report.score == 1.0, report.error
    assert validate(comp, long_csv, sample).valid
    for command in ("grade-sample", "validate"):
        result = _podium(command, str(long_csv), comp.ref, "--data-dir", str(root))
        assert result.returncode == 0 and json.loads(result.stdout)["error"] is None, result.stdout + result.stderr
    assert _endpoint_says(comp, root, long_csv) == "0 valid None"


def test_a_long_name_of_another_kind_keeps_its_suffix_in_the_reason(
    data: tuple[Competition, Path, list[list[str]]], tmp_path: Path
) -> None:
    comp, root, perfect = data
    long_txt = _write(perfect, tmp_path / ("s" * 200 + "-final-predictions.txt"))
    sample = root / comp.id / "prepared" / comp.sample_submission
    report = grade(comp, long_txt, root)
    assert not report.valid_submission
    reason = report.error or ""
    assert reason.startswith("the submission must be a .csv file") and reason.endswith("s-final-predictions.txt")
    assert validate(comp, long_txt, sample).error == reason
    for command in ("grade-sample", "validate"):
        result = _podium(command, str(long_txt), comp.ref, "--data-dir", str(root))
        assert result.returncode == EXIT_INVALID and json.loads(result.stdout)["error"] == reason


def test_a_name_too_long_for_the_file_system_says_so(data: tuple[Competition, Path, list[list[str]]]) -> None:
    comp, root, _ = data
    name = root / ("s" * 300 + ".csv")  # longer than any file name can be (255 bytes)
    sample = root / comp.id / "prepared" / comp.sample_submission
    report = grade(comp, name, root)
    assert not report.valid_submission and report.submission_exists
    assert "name too long" in (report.error or "").lower() and ".csv" not in (report.error or "").split("cannot")[1]
    assert validate(comp, name, sample).error == report.error
