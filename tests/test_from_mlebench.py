"""`podium prepare --from-mlebench DIR`: an MLE-bench data dir (DIR/<id>/prepared/{public,private}/, as
mlebench/registry.py lays it out) made from podium's own prepared practice data, taken, checked against
podium's recorded checksums, linked or copied; the source left as it was; links in it never followed."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest

from podium import registry
from podium.cli import main
from podium.data.mlebench import take_from_mlebench
from podium.data.prepare import prepare_competition
from podium.data.verify import verify
from podium.paths import CompetitionPaths

TAKEN = ("practice-wine", "practice-digits")  # a few tables; and a folder of 1,797 images


@pytest.fixture(scope="module")
def podium_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """podium's own prepare of the practice competitions (their data ships with packages)."""
    data = tmp_path_factory.mktemp("podium-data")
    for cid in (*TAKEN, "practice-breast-cancer"):
        prepare_competition(registry.get(cid), data)
    return data


def _mlebench(podium_data: Path, root: Path, ids: tuple[str, ...] = TAKEN) -> Path:
    """An MLE-bench data dir holding ``ids``: podium's public/ and private/, with MLE-bench's own description."""
    for cid in ids:
        prepared = root / cid / "prepared"
        for side in ("public", "private"):
            shutil.copytree(podium_data / cid / "prepared" / side, prepared / side)
        (prepared / "public" / "description.md").write_text(f"# {cid}\n\nMLE-bench's description.\n")
    (root / "leaderboard-cache").mkdir()  # a folder of no competition: not taken, not an error
    return root


def _state(root: Path) -> dict[str, tuple[Any, ...]]:
    """Every entry under ``root``: its kind, mode, size, times and content hash (links not followed)."""
    out = {}
    for folder, names, files in os.walk(root):
        for name in [*names, *files]:
            path = Path(folder) / name
            info = path.lstat()
            digest = hashlib.sha256(path.read_bytes()).hexdigest() if stat.S_ISREG(info.st_mode) else None
            out[str(path.relative_to(root))] = (info.st_mode, info.st_size, info.st_mtime_ns, digest)
    return out


def _read_only(root: Path) -> None:
    for folder, names, files in os.walk(root):
        for name in [*names, *files]:
            path = Path(folder) / name
            path.chmod(path.lstat().st_mode & ~0o222)
    root.chmod(root.stat().st_mode & ~0o222)


def _writable(root: Path) -> None:
    root.chmod(root.stat().st_mode | 0o200)
    for folder, names, _ in os.walk(root):
        for name in names:
            (Path(folder) / name).chmod((Path(folder) / name).stat().st_mode | 0o200)


def _prepare(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["prepare", *args])
    out, err = capsys.readouterr()
    return code, out, err


def _no_links(root: Path) -> None:
    for folder, names, files in os.walk(root):
        for name in [*names, *files]:
            assert not (Path(folder) / name).is_symlink(), Path(folder) / name


def test_identical_data_is_taken_and_checked_and_the_source_is_left_as_it_was(
    podium_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _mlebench(podium_data, tmp_path / "mle-bench" / "data")
    _read_only(source)
    before = _state(source)
    data = tmp_path / "podium"
    try:
        code, out, err = _prepare(capsys, "--from-mlebench", str(source), "--data-dir", str(data))
        assert code == 0, out + err
        assert "2 taken, 0 skipped, 0 differs, 0 missing, 0 failed" in out
        for cid in TAKEN:
            line = next(line for line in out.splitlines() if line.startswith(f"{cid}: "))
            assert "taken" in line and "identical to podium's recorded checksums" in line, line
            assert "description.md: podium's own (MLE-bench's differs)" in line
            mine = CompetitionPaths(data, cid).record()
            assert mine is not None and mine["checksums"] == CompetitionPaths(podium_data, cid).record()["checksums"]
            assert mine["source"]["mlebench"] == str(source / cid / "prepared")
            assert verify(registry.get(cid), data).status == "ok"
        assert "[1/2] practice-digits@1" in err and "practice-digits: taking 1,801 files" in err
        assert "practice-digits: checking" in err
        _no_links(data)
        assert _state(source) == before
        again = _prepare(capsys, "--from-mlebench", str(source), "--data-dir", str(data))
        assert again[0] == 0 and "0 taken, 2 skipped" in again[1]
        assert _state(source) == before
    finally:
        _writable(source)


def test_a_file_that_differs_is_not_taken_and_each_difference_is_named_with_the_fix(
    podium_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _mlebench(podium_data, tmp_path / "mle")
    answers = source / "practice-wine" / "prepared" / "private" / "test.csv"
    answers.write_bytes(answers.read_bytes()[:-2] + (b"1\n" if answers.read_bytes()[-2:] == b"0\n" else b"0\n"))
    (source / "practice-digits" / "prepared" / "public" / "extra.csv").write_text("id\n1\n")
    data = tmp_path / "podium"
    args = ["--from-mlebench", str(source), "--data-dir", str(data), "-c", "practice-wine", "-c", "practice-digits"]
    code, out, _ = _prepare(capsys, *args, "-c", "practice-diabetes")
    assert code == 1
    assert "0 taken, 0 skipped, 2 differs, 1 missing, 0 failed" in out
    assert "changed: private/test.csv" in out and "unexpected: public/extra.csv" in out
    assert "fix: podium prepare -c practice-wine@1" in out and "fix: podium prepare -c practice-digits@1" in out
    assert f"practice-diabetes: missing: no practice-diabetes/ in {source}" in out
    assert "fix: podium prepare -c practice-diabetes@1" in out
    for cid in ("practice-wine", "practice-digits"):
        paths = CompetitionPaths(data, cid)
        assert not paths.prepared.exists() and not paths.stale_staging(), "no half-written state"


def test_links_and_special_files_in_the_source_are_refused_never_followed(
    podium_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = tmp_path / "secret.csv"
    secret.write_text("id,target\nTHE-SECRET,1\n")
    source = _mlebench(podium_data, tmp_path / "mle", ids=("practice-wine",))
    train = source / "practice-wine" / "prepared" / "public" / "train.csv"
    train.unlink()
    train.symlink_to(secret)
    elsewhere = _mlebench(podium_data, tmp_path / "elsewhere", ids=("practice-digits", "practice-breast-cancer"))
    (source / "practice-digits").symlink_to(elsewhere / "practice-digits")
    cancer = shutil.copytree(elsewhere / "practice-breast-cancer", source / "practice-breast-cancer")
    images = tmp_path / "images"
    images.mkdir()
    (cancer / "prepared" / "private" / "more").symlink_to(images, target_is_directory=True)
    data = tmp_path / "podium"
    ids = ["-c", "practice-wine", "-c", "practice-digits", "-c", "practice-breast-cancer"]
    code, out, _ = _prepare(capsys, "--from-mlebench", str(source), "--data-dir", str(data), *ids)
    assert code == 1 and "3 failed" in out
    assert "public/train.csv is a symbolic link" in out
    assert "practice-digits is a link or a file, not a folder; links are not followed" in out
    assert "private/more is a symbolic link" in out
    for cid in ("practice-wine", "practice-digits", "practice-breast-cancer"):
        assert not CompetitionPaths(data, cid).prepared.exists()
        assert not CompetitionPaths(data, cid).stale_staging()
    for path in data.rglob("*"):
        assert path.is_dir() or b"THE-SECRET" not in path.read_bytes()
    fifo = source / "practice-wine" / "prepared" / "private" / "pipe"
    train.unlink()
    shutil.copyfile(podium_data / "practice-wine" / "prepared" / "public" / "train.csv", train)
    os.mkfifo(fifo)
    code, out, _ = _prepare(capsys, "--from-mlebench", str(source), "--data-dir", str(data), "-c", "practice-wine")
    assert code == 1 and "private/pipe is not a regular file or folder" in out  # never opened: no hang


def test_an_interrupted_take_resumes_from_what_it_took(podium_data: Path, tmp_path: Path) -> None:
    source = _mlebench(podium_data, tmp_path / "mle", ids=("practice-digits",))
    competition = registry.get("practice-digits")
    data = tmp_path / "podium"

    def interrupt(line: str) -> None:
        if "checking" in line:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        take_from_mlebench(competition, source, data, say=interrupt)
    paths = CompetitionPaths(data, competition.id)
    (staging,) = paths.stale_staging()
    assert not paths.prepared.exists()
    taken = sorted(p for p in (staging / "public" / "images").iterdir())
    taken[0].unlink()  # one file lost with the interruption
    (staging / "private" / "left-over.csv").write_text("x\n")  # and one the source does not hold
    outcome = take_from_mlebench(competition, source, data, say=lambda line: None)
    assert outcome.status == "taken", outcome.detail
    assert outcome.how["already taken"] == outcome.files - 1 and sum(outcome.how.values()) == outcome.files
    assert not (paths.private / "left-over.csv").exists() and not paths.stale_staging()
    assert verify(competition, data).status == "ok"


def test_a_file_not_every_user_may_read_is_copied_not_linked_and_other_filesystems_get_copies(
    podium_data: Path, tmp_path: Path
) -> None:
    source = _mlebench(podium_data, tmp_path / "mle", ids=("practice-wine",))
    answers = source / "practice-wine" / "prepared" / "private" / "test.csv"
    answers.chmod(0o600)
    outcome = take_from_mlebench(registry.get("practice-wine"), source, tmp_path / "podium", say=lambda line: None)
    assert outcome.status == "taken" and outcome.how.get("copy", 0) + outcome.how.get("reflink", 0) >= 1
    taken = tmp_path / "podium" / "practice-wine" / "prepared" / "private" / "test.csv"
    assert taken.stat().st_ino != answers.stat().st_ino and stat.S_IMODE(taken.stat().st_mode) == 0o644
    assert stat.S_IMODE(answers.stat().st_mode) == 0o600, "the source's mode is never changed"
    other = Path("/dev/shm")
    if not other.is_dir() or other.stat().st_dev == tmp_path.stat().st_dev or not os.access(other, os.W_OK):
        pytest.skip("no writable tmpfs at /dev/shm to take the data across filesystems")
    target = Path(os.path.join(other, f"podium-test-{os.getpid()}"))
    try:
        outcome = take_from_mlebench(registry.get("practice-wine"), source, target, say=lambda line: None)
        assert outcome.status == "taken" and set(outcome.how) <= {"copy", "reflink"}, outcome.how
        assert verify(registry.get("practice-wine"), target).status == "ok"
    finally:
        shutil.rmtree(target, ignore_errors=True)


def test_usage_errors_name_the_value_and_the_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    for args, words in (
        (["--from-mlebench", str(tmp_path / "nowhere")], "no such folder; give MLE-bench's data dir"),
        (["--from-mlebench", str(empty)], "holds no <id>/prepared/ folder of a competition podium knows"),
        (["--from-mlebench", str(empty), "--from", str(empty), "-c", "practice-wine"], "give one of them"),
        (["--from-mlebench", str(empty), "--keep-raw", "-c", "practice-wine"], "drop --keep-raw"),
    ):
        code, out, err = _prepare(capsys, *args, "--data-dir", str(tmp_path / "data"))
        assert code == 2 and not out and words in err and len(err.strip().splitlines()) == 1, err


def test_the_recorded_checksums_are_podiums_prepare_of_the_practice_data(podium_data: Path) -> None:
    """The practice competitions ship the checksums of their prepared data, which --from-mlebench and verify
    compare against (without podium's description, which --obfuscated swaps)."""
    for cid in (*TAKEN, "practice-breast-cancer"):
        shipped = json.loads((registry.get(cid).folder / "checksums.json").read_text())["1"]
        record = CompetitionPaths(podium_data, cid).record()
        assert record is not None
        assert shipped == {k: v for k, v in record["checksums"].items() if k != "public/description.md"}


def test_verify_compares_with_the_recorded_checksums_whichever_description_was_given(
    podium_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The recorded checksums leave podium's description out: an --obfuscated prepare verifies, and a changed
    file is a difference from both the prepare's own record and the recorded checksums."""
    data = tmp_path / "data"
    code, out, err = _prepare(capsys, "-c", "practice-wine", "--obfuscated", "--data-dir", str(data))
    assert code == 0, out + err
    assert verify(registry.get("practice-wine"), data).status == "ok"
    answers = data / "practice-wine" / "prepared" / "private" / "test.csv"
    answers.write_text(answers.read_text() + "999,1,0,0\n")
    result = verify(registry.get("practice-wine"), data)
    assert result.status == "mismatch"
    assert [p.split(" (")[0] for p in result.problems] == [
        "changed: private/test.csv",
        "reference: changed: private/test.csv",
    ]
