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


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """my-spaceship declared in a folder of its own, prepared from its generated raw files and run by the dummy,
    every step through the command line with --competitions-dir."""
    from podium.fixtures import make_raw

    tmp = tmp_path_factory.mktemp("declared")
    root = tmp / "mine"
    root.mkdir()
    folder = _declare(root, "my-spaceship")
    with pytest.MonkeyPatch.context() as env:
        env.setenv(declarations.PATH_VARIABLE, str(root))
        raw = make_raw(registry.get("my-spaceship"), tmp / "raw")
    data, runs = tmp / "data", tmp / "runs"
    dirs = ("--competitions-dir", str(root))
    prepared = _podium("prepare", "-c", "my-spaceship", "--from", str(raw), "--data-dir", str(data), *dirs)
    assert prepared.returncode == 0, prepared.stderr
    result = _podium("run", "--agent", "dummy", "--competitions", "my-spaceship", "--time-limit", "2m",
                     "--data-dir", str(data), "--runs-dir", str(runs), *dirs)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return {"root": root, "folder": folder, "data": data, "runs": runs, "tmp": tmp}


def test_every_stage_runs_on_a_users_competition_and_the_record_names_its_declaration(ran: dict[str, Path]) -> None:
    dirs = ("--competitions-dir", str(ran["root"]))
    run = ran["runs"] / "default" / "my-spaceship" / "0"
    record = json.loads((run / "record.json").read_text())
    assert record["grade"]["valid_submission"] is True  # graded in its isolated child, which found it too
    assert record["declaration"] == {"sha256": declarations.digest(ran["folder"]), "source": "user"}
    submission = run / "submission" / "submission.csv"
    graded = _podium("grade-sample", str(submission), "my-spaceship", "--data-dir", str(ran["data"]), *dirs)
    assert graded.returncode == 0 and json.loads(graded.stdout)["score"] == record["grade"]["score"]
    report = _podium("report", str(ran["runs"] / "default"), *dirs)
    assert report.returncode == 0 and "my-spaceship" in report.stdout, report.stderr
    said = f"graded by declarations of the user's own, not podium's: my-spaceship (sha256 {declarations.digest(ran['folder'])[:16]}...)"
    assert said in " ".join(report.stdout.split()), report.stdout  # the text report wraps its notes
    # without the folder the competition is unknown, in one line
    unknown = _podium("grade-sample", str(submission), "my-spaceship", "--data-dir", str(ran["data"]))
    assert unknown.returncode == 2 and "my-spaceship" in unknown.stderr


def test_a_bundle_carries_the_declaration_and_verify_grades_with_it_and_names_a_changed_one(
    ran: dict[str, Path],
) -> None:
    import tarfile

    bundle = ran["tmp"] / "bundle.tar.gz"
    dirs = ("--competitions-dir", str(ran["root"]))
    made = _podium("bundle", "create", str(ran["runs"] / "default"), "-o", str(bundle), "--data-dir", str(ran["data"]),
                   *dirs)  # fmt: skip
    assert made.returncode == 0, made.stderr[-3000:]
    with tarfile.open(bundle) as tar:
        names = tar.getnames()
        manifest = json.load(tar.extractfile("podium-bundle/manifest.json"))  # type: ignore[arg-type]
    assert "podium-bundle/competitions/my-spaceship/competition.yaml" in names
    assert manifest["declarations"]["my-spaceship"] == {
        "sha256": declarations.digest(ran["folder"]),
        "source": "user",
        "bundled": "competitions/my-spaceship",
    }
    # elsewhere, without the author's folder: graded again by the bundle's copy
    alone = _podium("bundle", "verify", str(bundle), "--data-dir", str(ran["data"]))
    assert alone.returncode == 0, alone.stdout + alone.stderr[-2000:]
    assert _podium("bundle", "verify", str(bundle), "--data-dir", str(ran["data"]), *dirs).returncode == 0
    # the verifier's own declaration differs: said, and the run graded again by theirs
    changed = ran["tmp"] / "changed"
    shutil.copytree(ran["folder"], changed / "my-spaceship")
    (changed / "my-spaceship" / "description.md").write_text("Another description.\n")
    other = _podium("bundle", "verify", str(bundle), "--data-dir", str(ran["data"]), "--competitions-dir", str(changed))
    assert other.returncode == 1
    (line,) = [line for line in other.stdout.splitlines() if line.startswith("declaration: ")]
    assert line.startswith("declaration: my-spaceship: its runs were graded by the declaration sha256 ")
    assert line.endswith("graded again by yours")


def test_verify_never_runs_python_from_a_bundled_declaration(ran: dict[str, Path]) -> None:
    import io
    import tarfile

    bundle, forged = ran["tmp"] / "bundle.tar.gz", ran["tmp"] / "hooked.tar.gz"
    if not bundle.exists():
        pytest.skip("needs the bundle of the test before")
    marker = ran["tmp"] / "ran-the-hook"
    hook = f"open({str(marker)!r}, 'w').write('ran')\n".encode()
    with tarfile.open(bundle) as source, tarfile.open(forged, "w:gz") as target:
        for member in source.getmembers():
            data = source.extractfile(member).read() if member.isfile() else None  # type: ignore[union-attr]
            target.addfile(member, io.BytesIO(data) if data is not None else None)
        extra = tarfile.TarInfo("podium-bundle/competitions/my-spaceship/hooks.py")
        extra.size = len(hook)
        target.addfile(extra, io.BytesIO(hook))
    result = _podium("bundle", "verify", str(forged), "--data-dir", str(ran["data"]))
    assert result.returncode == 1 and not marker.exists()
    assert any(
        line.startswith("not verified: cannot re-grade my-spaceship: its declaration holds Python (hooks.py)")
        for line in result.stdout.splitlines()
    ), result.stdout


def test_a_builtin_runs_record_names_podiums_own_declaration(spaceship_data_dir: Path, tmp_path: Path) -> None:
    ran = _podium("run", "--agent", "dummy", "--competitions", "spaceship-titanic", "--time-limit", "2m",
                  "--data-dir", str(spaceship_data_dir), "--runs-dir", str(tmp_path / "runs"))  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-3000:]
    record = json.loads((tmp_path / "runs" / "default" / "spaceship-titanic" / "0" / "record.json").read_text())
    folder = registry.COMPETITIONS_DIR / "spaceship-titanic"
    assert record["declaration"] == {"sha256": declarations.digest(folder), "source": "built-in"}


def test_the_notebooks_of_a_users_competition_are_its_own_kernels_txt(own: Path) -> None:
    from podium.data.kernels import kernel_refs

    (own / "my-spaceship" / "kernels.txt").write_text("# the top public notebooks\nalice/first-try\nbob/second\n")
    assert kernel_refs("my-spaceship") == ["alice/first-try", "bob/second"]
    builtin = (registry.COMPETITIONS_DIR / "aerial-cactus-identification" / "kernels.txt").read_text().split()
    assert kernel_refs("aerial-cactus-identification") == [r for r in builtin if not r.startswith("#")]
    assert kernel_refs("nowhere") == []


def test_validate_audit_export_and_the_gym_take_a_users_competition(ran: dict[str, Path]) -> None:
    dirs = ("--competitions-dir", str(ran["root"]))
    group = ran["runs"] / "default"
    submission = group / "my-spaceship" / "0" / "submission" / "submission.csv"
    valid = _podium("validate", str(submission), "my-spaceship", "--data-dir", str(ran["data"]), *dirs)
    assert valid.returncode == 0 and json.loads(valid.stdout)["valid"] is True, valid.stderr
    audit = _podium(
        "audit", str(group), "--data-dir", str(ran["data"]), "--checks", "submission,answers,integrity", *dirs
    )
    assert audit.returncode == 0 and "0 flagged" in audit.stdout, audit.stdout + audit.stderr[-2000:]
    exported = _podium("export", "mlebench", str(group), "--out", str(ran["tmp"] / "export"), *dirs)
    assert exported.returncode == 0 and (ran["tmp"] / "export" / "LEADERBOARD.md").is_file(), exported.stderr
    episode = (
        "import gymnasium, podium.gym\n"
        f"env = gymnasium.make('podium/my-spaceship-v1', task='sealed', allow_sealed=True, data_dir={str(ran['data'])!r},"
        f" runs_dir={str(ran['tmp'] / 'gym')!r}, max_steps=4)\n"
        "env.reset(seed=0)\n"
        "env.step({'tool': 'bash', 'command': 'cp /home/data/sample_submission.csv /home/submission/submission.csv'})\n"
        "print(env.step({'tool': 'submit'})[1]); env.close()\n"
    )
    environ = {**os.environ, declarations.PATH_VARIABLE: str(ran["root"])}
    played = subprocess.run([sys.executable, "-c", episode], capture_output=True, text=True, timeout=300, env=environ)
    assert played.returncode == 0, played.stderr[-3000:]
    assert float(played.stdout.split()[-1]) > 0  # the sample submission's accuracy, graded by the user's declaration
