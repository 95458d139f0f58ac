"""`podium kernels download`: notebooks pulled with the real ``kaggle`` client from the fake Kaggle of kaggle_fake."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("kaggle")
pytest.importorskip("jupytext")

from kaggle_fake import FakeKaggle, home, key, server  # noqa: F401  (fixtures)
from podium.cli import main
from podium.data import kernels
from podium.data.prepare import PrepareError

FIXTURE = (
    Path(__file__).parent / "fixtures" / "kernels" / "spaceship-titanic" / "fixture__spaceship-cabin-boosting.ipynb"
)
NOTEBOOK = FIXTURE.read_text(encoding="utf-8")
SCRIPT = "import pandas as pd\nprint(pd.__version__)\n"
REFS = kernels.kernel_refs("spaceship-titanic")


def test_podium_ships_the_published_lists() -> None:
    assert len(REFS) >= 10 and all(ref.count("/") == 1 for ref in REFS)
    shared = Path(__file__).parents[1] / ".." / "shared" / "competitions" / "kernels" / "spaceship-titanic.txt"
    if shared.is_file():
        assert [line for line in shared.read_text().splitlines() if line.strip()] == REFS
    assert kernels.kernel_refs("practice-titanic") == []


def test_a_notebook_becomes_its_code_cells() -> None:
    script = kernels.notebook_to_python(NOTEBOOK)
    assert "def add_features(frame):" in script and "HistGradientBoostingClassifier" in script
    assert "compact pipeline" not in script  # markdown is left out
    compile(script, "converted.py", "exec")


def _serve_all(server: FakeKaggle) -> None:
    server.kernels.update({ref: ("notebook", NOTEBOOK) for ref in REFS})
    server.kernels[REFS[1]] = ("script", SCRIPT)
    server.kernels[REFS[2]] = 404


def test_a_notebook_that_cannot_be_compared_is_recorded_and_the_rest_fetched(
    server: FakeKaggle, key: None, tmp_path: Path
) -> None:
    _serve_all(server)
    server.kernels[REFS[4]] = ("notebook", "{not a notebook")
    (outcome,) = kernels.download_kernels(["spaceship-titanic"], tmp_path)
    assert outcome.unavailable == [REFS[2], REFS[4]] and outcome.fetched == len(REFS) - 2
    entry = kernels.read_manifest(tmp_path / "spaceship-titanic" / "kernels")[REFS[4]]
    assert entry.status == "unavailable" and "no readable notebook" in entry.detail


def test_download_converts_records_checksums_and_resumes(
    server: FakeKaggle, key: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _serve_all(server)
    data = tmp_path / "data"
    (outcome,) = kernels.download_kernels(["spaceship-titanic"], data)
    folder = data / "spaceship-titanic" / "kernels"
    assert outcome.folder == folder and outcome.fetched == len(REFS) - 1 and outcome.unavailable == [REFS[2]]
    first = REFS[0].replace("/", "__")
    assert (folder / f"{first}.ipynb").read_text() == NOTEBOOK
    assert "def add_features" in (folder / f"{first}.py").read_text()
    assert (folder / f"{REFS[1].replace('/', '__')}.py").read_text() == SCRIPT
    manifest = json.loads((folder / kernels.MANIFEST).read_text())
    assert [item["ref"] for item in manifest["kernels"]] == REFS
    by_ref = {item["ref"]: item for item in manifest["kernels"]}
    assert by_ref[REFS[2]]["status"] == "unavailable" and "404" in by_ref[REFS[2]]["detail"]
    assert len(by_ref[REFS[0]]["python_sha256"]) == 64
    assert capsys.readouterr().out == ""

    calls = len(server.seen)
    (folder / f"{first}.py").write_text("changed")  # a damaged file is fetched again; the rest is kept
    (again,) = kernels.download_kernels(["spaceship-titanic"], data)
    assert again.kept == len(REFS) - 2 and again.fetched == 1
    assert len(server.seen) - calls == 2  # the damaged one and the unavailable one
    assert "def add_features" in (folder / f"{first}.py").read_text()
    assert not list(folder.glob(".pull-*"))


def test_an_interrupted_download_keeps_what_it_finished(
    server: FakeKaggle, key: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _serve_all(server)
    server.kernels[REFS[3]] = 500  # stands for a dropped connection half-way
    with pytest.raises(PrepareError, match=r"HTTP 500.*Run again to resume"):
        kernels.download_kernels(["spaceship-titanic"], tmp_path)
    done = kernels.read_manifest(tmp_path / "spaceship-titanic" / "kernels")
    assert list(done) == REFS[:3]
    server.kernels[REFS[3]] = ("notebook", NOTEBOOK)
    (outcome,) = kernels.download_kernels(["spaceship-titanic"], tmp_path)
    assert outcome.kept == 2 and outcome.fetched == len(REFS) - 3


def test_rejected_and_missing_credentials(server: FakeKaggle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(PrepareError, match="no Kaggle credentials"):
        kernels.download_kernels(["spaceship-titanic"], tmp_path)
    monkeypatch.setenv("KAGGLE_USERNAME", "tester")
    monkeypatch.setenv("KAGGLE_KEY", "wrong")
    with pytest.raises(PrepareError, match="rejected the credentials"):
        kernels.download_kernels(["spaceship-titanic"], tmp_path)


def test_cli_without_credentials_is_one_line_and_exit_2(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["kernels", "download", "-c", "spaceship-titanic", "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("podium: error: no Kaggle credentials") and "--from PATH" in err


def test_cli_from_a_folder_needs_no_kaggle(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "downloaded" / "spaceship-titanic"
    source.mkdir(parents=True)
    slug = REFS[0].partition("/")[2]
    (source / f"{slug}.ipynb").write_text(NOTEBOOK)  # the name Kaggle's client gives it
    (source / "mine.py").write_text(SCRIPT)
    (source / "elsewhere.py").symlink_to(tmp_path / "nothing.py")
    code = main(["kernels", "download", "-c", "spaceship-titanic", "--from", str(tmp_path / "downloaded"),
                 "--data-dir", str(tmp_path / "data")])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    entries = kernels.read_manifest(tmp_path / "data" / "spaceship-titanic" / "kernels")
    assert sorted(entries) == sorted([REFS[0], "local/mine"])
    assert "spaceship-titanic" in capsys.readouterr().out


def test_cli_from_a_missing_folder_is_a_usage_error(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["kernels", "download", "--split", "lite", "--from", str(tmp_path / "nope"), "--data-dir", str(tmp_path)]
    )
    assert code == 2 and "no such folder" in capsys.readouterr().err
