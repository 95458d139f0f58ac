"""Hostile submissions (issue 9): what an agent writes must never lead grading anywhere else,
crash it, take its memory, or give two verdicts.

Each test here failed against podium before the fix (87872b9): grading followed a symbolic link
to the answers (graded 1.0) or to a host secret (quoted in the error), reported a directory as a
missing file, crashed on a non-UTF-8 path and on an int column with an empty cell and a value
beyond 2^53, accepted hex ids that validation refused, quoted a 100,000-character id in full, and
allocated gigabytes for a 140 KB submission.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from podium import registry
from podium.competition import Competition
from podium.errors import InvalidSubmissionError, quote
from podium.fixtures import Fixture, make_fixture, write_prepared
from podium.grading import grade
from podium.grading.files import NoSubmissionError, open_submission, open_user_file, size_cap
from podium.grading.isolated import Limits, grade_isolated
from podium.grading.table import Frame, write_csv
from podium.grading.validator import validate

SECRET = "root:$6$very-secret-hash:19000:0:99999:7:::"


def _prepared(cid: str, root: Path) -> tuple[Competition, Fixture, Path]:
    comp = registry.get(cid)
    fixture = make_fixture(comp)
    prepared = write_prepared(comp, fixture, root)
    return comp, fixture, prepared / comp.sample_submission


def _answers(comp: Competition, root: Path) -> Path:
    return root / comp.id / "prepared" / "private" / comp.answers


def _with(frame: Frame, **cells: dict[int, str]) -> Frame:
    """The frame with some cells replaced: column -> {row: text}."""
    columns = {name: values.copy() for name, values in frame.columns.items()}
    for name, changes in cells.items():
        for row, text in changes.items():
            columns[name][row] = text
    return Frame(columns, frame.n_rows)


# -- where grading reads from ---------------------------------------------------------------


def test_a_symlink_to_the_answers_is_refused_not_graded(tmp_path: Path) -> None:
    comp, _, _ = _prepared("spaceship-titanic", tmp_path)
    folder = tmp_path / "run" / "submission"
    folder.mkdir(parents=True)
    (folder / "submission.csv").symlink_to(_answers(comp, tmp_path))
    for report in (grade_isolated(comp, folder, tmp_path), grade(comp, folder / "submission.csv", tmp_path)):
        assert not report.valid_submission and report.score is None and not report.gold_medal
        assert report.submission_exists and "symbolic link" in (report.error or "")


def test_a_hard_link_to_the_answers_is_refused_not_graded(tmp_path: Path) -> None:
    """Issue 28 §1: a file with more than one name may be the answers or a host file under another name."""
    comp, _, _ = _prepared("spaceship-titanic", tmp_path)
    folder = tmp_path / "run" / "submission"
    folder.mkdir(parents=True)
    os.link(_answers(comp, tmp_path), folder / "submission.csv")
    report = grade_isolated(comp, folder, tmp_path)
    assert not report.valid_submission and report.score is None and not report.gold_medal
    assert report.submission_exists and "is a hard link (2 names for one file)" in (report.error or "")
    with pytest.raises(InvalidSubmissionError, match="hard link"):
        open_submission(folder)
    open_user_file(folder / "submission.csv").close()  # a file a user names on the command line is theirs


def test_a_symlink_to_a_host_secret_is_never_quoted(tmp_path: Path) -> None:
    comp, _, _ = _prepared("spaceship-titanic", tmp_path)
    secret = tmp_path / "shadow"
    secret.write_text(SECRET + "\nbin:*:19000:0:99999:7:::\n")
    folder = tmp_path / "run" / "submission"
    folder.mkdir(parents=True)
    (folder / "submission.csv").symlink_to(secret)
    for report in (grade_isolated(comp, folder, tmp_path), grade(comp, folder / "submission.csv", tmp_path)):
        assert not report.valid_submission
        assert "very-secret" not in json.dumps(report.to_dict())


def test_a_symlink_at_any_level_below_the_folder_is_refused(tmp_path: Path) -> None:
    comp, fixture, _ = _prepared("spaceship-titanic", tmp_path)
    elsewhere = tmp_path / "elsewhere"
    write_csv(fixture.perfect, elsewhere / "submission.csv")
    folder = tmp_path / "run" / "submission"
    folder.mkdir(parents=True)
    (folder / "out").symlink_to(elsewhere)
    report = grade_isolated(comp, folder, tmp_path, name="out/submission.csv")
    assert not report.valid_submission and "symbolic link" in (report.error or "")
    write_csv(fixture.perfect, folder / "real" / "submission.csv")
    assert grade_isolated(comp, folder, tmp_path, name="real/submission.csv").score == 1.0
    with pytest.raises(ValueError, match="relative"):
        open_submission(folder, "../elsewhere/submission.csv")
    swapped = tmp_path / "run2" / "submission"  # with no sandbox the agent can swap the folder itself
    swapped.parent.mkdir()
    swapped.symlink_to(elsewhere)
    assert "symbolic link" in (grade_isolated(comp, swapped, tmp_path).error or "")


def test_fifos_devices_and_directories_are_refused_without_hanging(tmp_path: Path) -> None:
    comp, _, sample = _prepared("spaceship-titanic", tmp_path)
    folder = tmp_path / "run" / "submission"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "submission.csv")  # opening it for reading would block for ever
    report = grade_isolated(comp, folder, tmp_path)
    assert not report.valid_submission and "FIFO" in (report.error or "")
    assert "FIFO" in (grade(comp, folder / "submission.csv", tmp_path).error or "")
    assert "FIFO" in (validate(comp, folder / "submission.csv", sample).error or "")
    assert "device" in (grade(comp, "/dev/null", tmp_path).error or "")
    directory = tmp_path / "dir.csv"
    directory.mkdir()
    report = grade(comp, directory, tmp_path)
    assert report.submission_exists and not report.valid_submission
    assert "is a directory" in (report.error or "") and "no submission" not in (report.error or "")


def test_missing_submission_is_reported_as_missing(tmp_path: Path) -> None:
    comp, _, _ = _prepared("spaceship-titanic", tmp_path)
    folder = tmp_path / "run" / "submission"
    folder.mkdir(parents=True)
    report = grade_isolated(comp, folder, tmp_path)
    assert not report.submission_exists and "no submission file" in (report.error or "")
    with pytest.raises(NoSubmissionError):
        open_submission(folder)


def test_the_file_read_is_the_file_opened(tmp_path: Path) -> None:
    """No second lookup by name: replacing or growing the file after opening changes nothing."""
    folder = tmp_path / "submission"
    folder.mkdir()
    path = folder / "submission.csv"
    path.write_bytes(b"id,x\n1,2\n")
    with open_submission(folder) as file:
        path.unlink()
        path.symlink_to("/etc/passwd")
        assert file.read_bytes() == b"id,x\n1,2\n"
    path.unlink()
    path.write_bytes(b"id,x\n1,2\n")
    with open_submission(folder) as file, path.open("ab") as grow:
        grow.write(b"3,4\n" * 1000)
        grow.flush()
        assert file.read_bytes() == b"id,x\n1,2\n"  # bounded to the size seen at opening


def test_files_over_the_size_cap_are_invalid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    comp, fixture, sample = _prepared("spaceship-titanic", tmp_path)
    assert size_cap(10) == 256 * 2**20 and size_cap(100 * 2**20) == 800 * 2**20
    path = write_csv(fixture.perfect, tmp_path / "submission.csv")
    monkeypatch.setattr("podium.grading.grader.size_cap", lambda reference: 100)
    monkeypatch.setattr("podium.grading.validator.size_cap", lambda reference: 100)
    report = grade(comp, path, tmp_path)
    assert not report.valid_submission and "at most 100 bytes" in (report.error or "")
    assert validate(comp, path, sample).error == report.error
    with pytest.raises(InvalidSubmissionError, match="at most 10 bytes"):
        open_user_file(path, max_bytes=10)


def test_a_path_that_is_not_utf8_is_graded(tmp_path: Path) -> None:
    comp, fixture, sample = _prepared("spaceship-titanic", tmp_path)
    path = os.fsdecode(os.fsencode(tmp_path) + b"/sub\xff.csv")
    write_csv(fixture.perfect, Path(path))
    report = grade(comp, path, tmp_path)
    assert report.valid_submission and report.score == 1.0
    assert report.submission_path.endswith("sub\\xff.csv")
    json.dumps(report.to_dict(), ensure_ascii=False).encode()  # printable, storable
    assert validate(comp, path, sample).valid


# -- one reader, one verdict -------------------------------------------------------------------


INT_COMPETITIONS = [
    cid
    for cid in registry.ids()
    if any(c.kind in ("int", "int_id") for c in registry.get(cid).columns)
    and not (registry.get(cid).folder / "hooks.py").is_file()  # hooks may shape answers differently from submissions
]


@pytest.mark.parametrize("cid", INT_COMPETITIONS)
def test_an_empty_cell_and_a_value_beyond_2_53_in_an_int_column_is_invalid(cid: str, tmp_path: Path) -> None:
    comp, fixture, sample = _prepared(cid, tmp_path)
    column = next(c.name for c in comp.columns if c.kind in ("int", "int_id"))
    frame = _with(fixture.perfect, **{column: {0: "", 1: str(2**53 + 1)}})
    path = write_csv(frame, tmp_path / "submission.csv")
    report = grade(comp, path, tmp_path)
    assert not report.valid_submission and column in (report.error or "")
    assert validate(comp, path, sample).error == report.error


def test_exact_ints_beyond_2_53(tmp_path: Path) -> None:
    comp, fixture, _ = _prepared("dogs-vs-cats-redux-kernels-edition", tmp_path)
    big = 2**53 + 1
    ids = fixture.perfect["id"].copy()
    ids[0] = str(big)  # an id no answer has: named exactly, not rounded to 2^53
    report = grade(comp, write_csv(_with(fixture.perfect, id=dict(enumerate(ids))), tmp_path / "s.csv"), tmp_path)
    assert str(big) in (report.error or "") and "not in the test set" in (report.error or "")


NUMBER_CASES = {
    "hex": "0x10",
    "underscore": "1_0",
    "arabic_indic": "\u0661",
    "full_width": "\uff11",
    "nbsp": "\u00a01",
    "overflow": "1e999",
    "inf": "inf",
    "nan": "nan",
    "nan_payload": "nan(1)",
    "empty": "",
    "huge": "9" * 400,
}


@pytest.mark.parametrize("case", sorted(NUMBER_CASES))
@pytest.mark.parametrize("column", ["id", "label"])
def test_validate_and_grade_give_one_verdict(case: str, column: str, tmp_path: Path) -> None:
    comp, fixture, sample = _prepared("dogs-vs-cats-redux-kernels-edition", tmp_path)
    frame = _with(fixture.perfect, **{column: {3: NUMBER_CASES[case]}})
    path = write_csv(frame, tmp_path / "submission.csv")
    report = grade(comp, path, tmp_path)
    validation = validate(comp, path, sample)
    assert not report.valid_submission and not validation.valid
    assert report.error == validation.error
    assert "row 5" in (report.error or "")  # the row, as written (the endpoint: test_validation_server.py)


@pytest.mark.parametrize("cell", ["+0.25", " 0.25 ", "\t.25", "2.5e-1", "0.250"])
def test_numbers_with_sign_spaces_and_exponent_are_numbers(cell: str, tmp_path: Path) -> None:
    comp, fixture, sample = _prepared("dogs-vs-cats-redux-kernels-edition", tmp_path)
    path = write_csv(_with(fixture.perfect, label={2: cell}), tmp_path / "submission.csv")
    report = grade(comp, path, tmp_path)
    assert report.valid_submission, report.error
    assert validate(comp, path, sample).valid


def test_an_out_of_range_probability_is_quoted_as_written(tmp_path: Path) -> None:
    """Grading parses float columns while reading; a failing check quotes the cell as written."""
    comp, fixture, sample = _prepared("dogs-vs-cats-redux-kernels-edition", tmp_path)
    path = write_csv(_with(fixture.perfect, label={2: "1.50"}), tmp_path / "submission.csv")
    report = grade(comp, path, tmp_path)
    assert "'1.50'" in (report.error or "")
    assert validate(comp, path, sample).error == report.error


def test_a_100k_character_id_gives_a_short_message(tmp_path: Path) -> None:
    comp, fixture, sample = _prepared("spaceship-titanic", tmp_path)
    frame = _with(fixture.perfect, PassengerId={0: "x" * 100_000})
    path = write_csv(frame, tmp_path / "submission.csv")
    for message in (grade(comp, path, tmp_path).error, validate(comp, path, sample).error):
        assert message is not None and "xxxx" in message and len(message) < 1000
    header = write_csv(Frame({"y" * 100_000: np.array(["1"], dtype=object)}, 1), tmp_path / "h.csv")
    assert len(grade(comp, header, tmp_path).error or "") < 2000
    assert len(quote("z" * 10**6)) == 80


# -- memory --------------------------------------------------------------------------------------

_LIMITED = """
import resource, sys
resource.setrlimit(resource.RLIMIT_DATA, (int(sys.argv[4]), int(sys.argv[4])))
from podium import registry
from podium.grading import grade
report = grade(registry.get(sys.argv[1]), sys.argv[2], sys.argv[3])
print("VALID" if report.valid_submission else "INVALID", report.error)
"""


@pytest.mark.parametrize(
    ("cid", "column", "cells"),
    [
        ("plant-pathology-2021-fgvc8", "labels", {0: "a" * 100_000, 1: "x " * 20_000}),
        ("kuzushiji-recognition", "labels", {0: "U+0041" + "Z" * 300_000 + " 1 1 " + "a 1 1 " * 100_000}),
        (
            "3d-object-detection-for-autonomous-vehicles",
            "PredictionString",
            {0: "1 1 1 1 1 1 1 0 " + "c" * 300_000 + " 1 1 1 1 1 1 1 0 c" * 35_000},
        ),
        # twenty million-digit integers (issue 19): refused without parsing them
        ("dogs-vs-cats-redux-kernels-edition", "id", {i: "1" * 1_000_000 for i in range(20)}),
    ],
)
def test_long_cells_do_not_take_gigabytes(cid: str, column: str, cells: dict[int, str], tmp_path: Path) -> None:
    """Before the fix these allocated fixed-width numpy strings sized by the longest cell
    (7.5 GB for plant-pathology's 140 KB file); graded here under a 1 GiB data segment."""
    pytest.importorskip("shapely")
    comp, fixture, _ = _prepared(cid, tmp_path)
    path = write_csv(_with(fixture.perfect, **{column: cells}), tmp_path / "submission.csv")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[1] / "src"), *sys.path])}
    env["OPENBLAS_NUM_THREADS"] = "1"
    result = subprocess.run(
        [sys.executable, "-c", _LIMITED, comp.ref, str(path), str(tmp_path), str(1 << 30)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.startswith(("VALID", "INVALID")), result.stdout


def test_isolated_grading_turns_exhaustion_into_an_invalid_submission(tmp_path: Path) -> None:
    comp, fixture, _ = _prepared("spaceship-titanic", tmp_path)
    folder = tmp_path / "run" / "submission"
    columns = dict(fixture.perfect.columns)
    columns["padding"] = np.array(["p" * (32 << 20)] + [""] * (fixture.perfect.n_rows - 1), dtype=object)
    write_csv(Frame(columns, fixture.perfect.n_rows), folder / "submission.csv")
    assert grade_isolated(comp, folder, tmp_path).valid_submission  # fine under the default cap
    tight = Limits(memory_bytes=_baseline() + (8 << 20), timeout_s=300)  # too little to read 32 MB
    report = grade_isolated(comp, folder, tmp_path, limits=tight)
    assert not report.valid_submission and "memory" in (report.error or ""), report.error
    slow = grade_isolated(comp, folder, tmp_path, limits=Limits(memory_bytes=8 << 30, timeout_s=0.01))
    assert not slow.valid_submission and "longer than" in (slow.error or "")


def _baseline() -> int:
    """The data segment a fresh grading child uses before it reads a submission."""
    code = (
        "import podium.grading, podium.grading.isolated, pyarrow.csv, pyarrow.compute;"
        "podium.grading.isolated._warm_up();"
        "print(open('/proc/self/status').read().split('VmData:')[1].split()[0])"
    )
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    return int(out) * 1024


def test_grading_threads_do_not_share_a_descriptor(tmp_path: Path) -> None:
    """Isolated grading from several threads (as podium run's workers do) keeps each run's file."""
    comp, fixture, _ = _prepared("spaceship-titanic", tmp_path)
    folders = []
    for k in range(3):
        folder = tmp_path / f"run{k}" / "submission"
        frame = fixture.perfect if k != 1 else fixture.perfect.take(np.arange(fixture.perfect.n_rows - 1))
        write_csv(frame, folder / "submission.csv")
        folders.append(folder)
    before = resource.getrlimit(resource.RLIMIT_DATA)
    reports: dict[int, object] = {}
    threads = [
        threading.Thread(target=lambda k=k: reports.__setitem__(k, grade_isolated(comp, folders[k], tmp_path)))
        for k in range(3)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [getattr(reports[k], "valid_submission", None) for k in range(3)] == [True, False, True]
    assert resource.getrlimit(resource.RLIMIT_DATA) == before  # only the children are capped


BOX_COMPETITIONS = [cid for cid in registry.ids() if any(c.kind == "boxes" for c in registry.get(cid).columns)]


@pytest.mark.parametrize("cell", ["", "   "])
@pytest.mark.parametrize("cid", BOX_COMPETITIONS)
def test_an_empty_box_cell_gets_one_verdict(cid: str, cell: str, tmp_path: Path) -> None:
    """Where the metric refuses a row with no object, the endpoint says so too (before 2: valid there)."""
    comp, fixture, sample = _prepared(cid, tmp_path)
    column = next(c.name for c in comp.columns if c.kind == "boxes")
    path = write_csv(_with(fixture.perfect, **{column: {1: cell}}), tmp_path / "submission.csv")
    report, validation = grade(comp, path, tmp_path), validate(comp, path, sample)
    assert report.valid_submission == validation.valid
    if not validation.valid:
        assert report.error == validation.error and "empty cells" in (validation.error or "")
