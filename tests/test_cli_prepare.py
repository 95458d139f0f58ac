"""`podium prepare` and `podium verify` as a user runs them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from podium import registry
from podium.fixtures import make_raw

COMP = "spaceship-titanic"


def podium(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "podium", *args], capture_output=True, text=True, env=env, timeout=300)


def test_prepare_from_folder_then_verify_detects_tampering(tmp_path: Path) -> None:
    raw = make_raw(registry.get(COMP), tmp_path / "raw")
    data = tmp_path / "data"
    first = podium("prepare", "-c", COMP, "--from", str(raw), "--data-dir", str(data))
    assert first.returncode == 0, first.stderr
    assert "1 prepared, 0 skipped, 0 failed" in first.stdout
    again = podium("prepare", "-c", COMP, "--from", str(raw), "--data-dir", str(data))
    assert "0 prepared, 1 skipped" in again.stdout
    ok = podium("verify", "-c", COMP, "--data-dir", str(data))
    assert ok.returncode == 0 and " ok" in ok.stdout
    answers = data / COMP / "prepared" / "private" / "test.csv"
    answers.write_text(answers.read_text().replace("True", "False", 1))
    bad = podium("verify", "-c", COMP, "--data-dir", str(data))
    assert bad.returncode == 1 and "changed: private/test.csv" in bad.stdout


def test_prepare_from_zip(tmp_path: Path) -> None:
    import shutil

    raw = make_raw(registry.get(COMP), tmp_path / "raw")
    archive = Path(shutil.make_archive(str(tmp_path / COMP), "zip", raw))
    result = podium("prepare", "-c", COMP, "--from", str(archive), "--data-dir", str(tmp_path / "data"))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "data" / COMP / "prepared" / "public" / "train.csv").is_file()


def test_prepare_list_goes_on_past_failures_and_summarises(tmp_path: Path) -> None:
    sources = tmp_path / "sources"
    make_raw(registry.get(COMP), sources / COMP)
    (sources / "aerial-cactus-identification").mkdir(parents=True)  # an empty folder: nothing to prepare from
    listing = tmp_path / "ids.txt"
    listing.write_text(f"aerial-cactus-identification\n# a comment\n{COMP}\n")
    result = podium("prepare", "--list", str(listing), "--from", str(sources), "--data-dir", str(tmp_path / "data"))
    assert result.returncode == 1
    assert "1 prepared, 0 skipped, 1 failed" in result.stdout
    failed = next(line for line in result.stdout.splitlines() if line.startswith("aerial-cactus-identification"))
    assert "failed" in failed
    assert (tmp_path / "data" / COMP / "prepared").is_dir()
    assert not (tmp_path / "data" / "aerial-cactus-identification" / "prepared").exists()


def test_prepare_needs_a_selection() -> None:
    result = podium("prepare")
    assert result.returncode == 2 and "-c ID" in result.stderr


def test_verify_that_checked_nothing_fails_and_says_so(tmp_path: Path) -> None:
    empty = tmp_path / "data"
    empty.mkdir()
    for args in (["verify", "--data-dir", str(empty)], ["verify", "-c", COMP, "--data-dir", str(empty)]):
        result = podium(*args)
        assert result.returncode == 3, (args, result.stdout, result.stderr)
        assert "nothing verified" in result.stderr and "podium prepare" in result.stderr
    assert "3: nothing verified" in " ".join(podium("verify", "--help").stdout.split())
