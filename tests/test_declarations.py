"""Competitions declared outside the package (issue 42 §1): a user's folders, named by ``--competitions-dir`` or
``PODIUM_COMPETITIONS_PATH``, load through the same registry; an id that would shadow a built-in one, two folders
declaring one id and a TODO left are each refused in one line; a record names the declaration that graded it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from podium import declarations, registry
from podium.errors import RegistryError

ROOT = Path(__file__).resolve().parents[1]


def _podium(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != declarations.PATH_VARIABLE}
    return subprocess.run([sys.executable, "-m", "podium", *args], capture_output=True, text=True, timeout=300,
                          env={**environ, **(env or {})})  # fmt: skip


def _declare(root: Path, new_id: str, like: str = "spaceship-titanic") -> Path:
    """A copy of a built-in declaration under another id (its checksums left behind: they are podium's own)."""
    folder = shutil.copytree(
        registry.COMPETITIONS_DIR / like, root / new_id, ignore=shutil.ignore_patterns("checksums.json")
    )
    text = (folder / "competition.yaml").read_text()
    (folder / "competition.yaml").write_text(text.replace(f"id: {like}\n", f"id: {new_id}\n", 1))
    return folder


@pytest.fixture
def own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "mine"
    root.mkdir()
    _declare(root, "my-spaceship")
    monkeypatch.setenv(declarations.PATH_VARIABLE, str(root))
    return root


def test_a_users_folder_loads_through_the_registry_with_its_source(own: Path) -> None:
    competition = registry.get("my-spaceship")
    assert competition.folder == own / "my-spaceship" and competition.metric.name == "accuracy"
    assert "my-spaceship" in registry.ids() and registry.split_ids("user") == ["my-spaceship"]
    assert "my-spaceship" not in registry.split_ids("split75") and "spaceship-titanic" in registry.ids()
    assert declarations.source_of(competition.folder) == str(own / "my-spaceship")
    assert declarations.source_of(registry.get("spaceship-titanic").folder) == declarations.BUILTIN


def test_the_digest_names_the_declaration_and_changes_with_any_edit(own: Path) -> None:
    folder = own / "my-spaceship"
    first = declarations.digest(folder)
    assert first == declarations.digest(folder) and len(first) == 64
    copy = shutil.copytree(folder, own.parent / "elsewhere" / "my-spaceship")
    assert declarations.digest(copy) == first  # the same declaration anywhere
    (folder / "description.md").write_text((folder / "description.md").read_text() + "\nOne more line.\n")
    assert declarations.digest(folder) != first


def test_an_id_that_shadows_a_built_in_one_is_refused_in_one_line(tmp_path: Path) -> None:
    root = tmp_path / "mine"
    root.mkdir()
    _declare(root, "practice-wine", like="practice-wine")
    result = _podium("list", "--competitions-dir", str(root))
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "would shadow podium's built-in practice-wine" in result.stderr


def test_two_folders_declaring_one_id_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        _declare(tmp_path / name, "twice")
    monkeypatch.setenv(declarations.PATH_VARIABLE, f"{tmp_path / 'a'}{os.pathsep}{tmp_path / 'b'}")
    with pytest.raises(RegistryError, match="both declare 'twice'"):
        registry.ids()


def test_a_folder_that_is_not_there_is_one_line(tmp_path: Path) -> None:
    result = _podium("list", "--competitions-dir", str(tmp_path / "nowhere"))
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "is not a folder" in result.stderr


def test_a_declaration_with_a_todo_left_is_refused_naming_each(own: Path) -> None:
    path = own / "my-spaceship" / "competition.yaml"
    text = path.read_text().replace(
        "  name: accuracy\n", '  name: "TODO: pick the metric: Kaggle says Categorization Accuracy"\n'
    )
    path.write_text(text.replace("test_size: 0.1", 'test_size: "TODO: decide the test size"'))
    with pytest.raises(RegistryError) as refused:
        registry.get("my-spaceship")
    message = str(refused.value)
    assert "2 TODO(s) left" in message and "metric.name (TODO: pick the metric" in message
    assert "prepare.split.test_size (TODO: decide the test size)" in message and "\n" not in message
    result = _podium("show", "my-spaceship", env={declarations.PATH_VARIABLE: str(own)})
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "TODO(s) left" in result.stderr


def test_every_stage_runs_on_a_users_competition_and_the_record_names_its_declaration(tmp_path: Path) -> None:
    from podium.fixtures import make_raw

    root = tmp_path / "mine"
    root.mkdir()
    folder = _declare(root, "my-spaceship")
    dirs = ["--competitions-dir", str(root)]
    os.environ[declarations.PATH_VARIABLE] = str(root)
    try:
        raw = make_raw(registry.get("my-spaceship"), tmp_path / "raw")
    finally:
        del os.environ[declarations.PATH_VARIABLE]
    data, runs = tmp_path / "data", tmp_path / "runs"
    prepared = _podium("prepare", "-c", "my-spaceship", "--from", str(raw), "--data-dir", str(data), *dirs)
    assert prepared.returncode == 0, prepared.stderr
    ran = _podium("run", "--agent", "dummy", "--competitions", "my-spaceship", "--time-limit", "2m", "--data-dir",
                  str(data), "--runs-dir", str(runs), *dirs)  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-3000:]
    record = json.loads((runs / "default" / "my-spaceship" / "0" / "record.json").read_text())
    assert record["grade"]["valid_submission"] is True  # graded in its isolated child, which found it too
    assert record["declaration"] == {"sha256": declarations.digest(folder), "source": "user"}
    submission = runs / "default" / "my-spaceship" / "0" / "submission" / "submission.csv"
    graded = _podium("grade-sample", str(submission), "my-spaceship", "--data-dir", str(data), *dirs)
    assert graded.returncode == 0 and json.loads(graded.stdout)["score"] == record["grade"]["score"]
    report = _podium("report", str(runs / "default"), *dirs)
    assert report.returncode == 0 and "my-spaceship" in report.stdout, report.stderr
    # without the folder the competition is unknown, in one line that says where competitions come from
    unknown = _podium("grade-sample", str(submission), "my-spaceship", "--data-dir", str(data))
    assert unknown.returncode == 2 and "my-spaceship" in unknown.stderr


def test_a_builtin_runs_record_names_podiums_own_declaration(spaceship_data_dir: Path, tmp_path: Path) -> None:
    ran = _podium("run", "--agent", "dummy", "--competitions", "spaceship-titanic", "--time-limit", "2m",
                  "--data-dir", str(spaceship_data_dir), "--runs-dir", str(tmp_path / "runs"))  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-3000:]
    record = json.loads((tmp_path / "runs" / "default" / "spaceship-titanic" / "0" / "record.json").read_text())
    folder = registry.COMPETITIONS_DIR / "spaceship-titanic"
    assert record["declaration"] == {"sha256": declarations.digest(folder), "source": "built-in"}
