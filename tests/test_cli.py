"""The command line, end to end, as a user runs it (fresh processes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from podium import registry
from podium.fixtures import make_fixture, write_csv, write_prepared
from podium.grading.table import Frame

COMP = "spaceship-titanic"


def podium(*args: str, data_dir: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    if data_dir is not None:
        env["PODIUM_DATA_DIR"] = str(data_dir)
    return subprocess.run([sys.executable, "-m", "podium", *args], capture_output=True, text=True, env=env, timeout=120)


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("cli")
    comp = registry.get(COMP)
    fixture = make_fixture(comp)
    write_prepared(comp, fixture, root / "data")
    good = write_csv(fixture.perfect, root / "perfect.csv")
    bad = write_csv(
        Frame({k: v[1:] for k, v in fixture.sample.columns.items()}, fixture.sample.n_rows - 1), root / "short.csv"
    )
    return root / "data", good, bad


def test_list_and_show_json() -> None:
    listed = podium("list", "--json")
    assert listed.returncode == 0, listed.stderr
    ids = [c["id"] for c in json.loads(listed.stdout)]
    assert COMP in ids and ids == sorted(ids)
    shown = json.loads(podium("show", COMP, "--json").stdout)
    for key in (
        "metric",
        "higher_is_better",
        "n_teams",
        "gold_threshold",
        "silver_threshold",
        "bronze_threshold",
        "median_threshold",
    ):
        assert key in shown


def test_unknown_id_is_a_clear_error() -> None:
    result = podium("show", "spaceship-titanc")
    assert result.returncode == 2
    assert "Did you mean: spaceship-titanic" in result.stderr


def test_grade_sample_prints_report(prepared: tuple[Path, Path, Path]) -> None:
    data_dir, good, bad = prepared
    report = json.loads(podium("grade-sample", str(good), COMP, "--data-dir", str(data_dir)).stdout)
    assert report["valid_submission"] and report["score"] == 1.0
    assert report["competition_id"] == COMP and report["is_lower_better"] is False
    invalid = json.loads(podium("grade-sample", str(bad), COMP, data_dir=data_dir).stdout)
    assert not invalid["valid_submission"] and "missing PassengerId" in invalid["error"]


def test_missing_answers_name_the_fix(tmp_path: Path, prepared: tuple[Path, Path, Path]) -> None:
    _, good, _ = prepared
    result = podium("grade-sample", str(good), COMP, "--data-dir", str(tmp_path))
    assert result.returncode == 2 and "podium prepare" in result.stderr


def test_validate_uses_sample_submission(prepared: tuple[Path, Path, Path]) -> None:
    data_dir, good, bad = prepared
    ok = podium("validate", str(good), COMP, "--data-dir", str(data_dir))
    assert ok.returncode == 0 and json.loads(ok.stdout)["valid"] is True
    not_ok = podium("validate", str(bad), COMP, "--data-dir", str(data_dir))
    assert not_ok.returncode == 1 and "missing" in json.loads(not_ok.stdout)["error"]
    assert "score" not in not_ok.stdout


def test_grade_jsonl_writes_one_report(tmp_path: Path, prepared: tuple[Path, Path, Path]) -> None:
    data_dir, good, bad = prepared
    runs = tmp_path / "runs.jsonl"
    lines = [{"competition_id": COMP, "submission_path": str(p)} for p in (good, bad, tmp_path / "absent.csv")]
    runs.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    result = podium(
        "grade", "--submission", str(runs), "--output-dir", str(tmp_path / "out"), "--data-dir", str(data_dir)
    )
    assert result.returncode == 0, result.stderr
    (report_path,) = (tmp_path / "out").glob("*_grading_report.json")
    report = json.loads(report_path.read_text())
    assert (
        report["total_runs"] == 3
        and report["total_runs_with_submissions"] == 2
        and report["total_valid_submissions"] == 1
    )
    exists = [r["submission_exists"] for r in report["competition_reports"]]
    assert exists == [True, True, False]


def test_grade_jsonl_rejects_bad_line(tmp_path: Path) -> None:
    runs = tmp_path / "runs.jsonl"
    runs.write_text('{"competition_id": "spaceship-titanic"}\n')
    result = podium("grade", "--submission", str(runs), "--output-dir", str(tmp_path))
    assert result.returncode == 2 and "runs.jsonl:1" in result.stderr and "submission_path" in result.stderr


def test_example_grades_generated_submissions(tmp_path: Path) -> None:
    result = podium("example", "--split", "dev", "--output-dir", str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 failure(s)" in result.stdout and COMP in result.stdout
    assert np.all([line.split()[3] != "invalid" for line in result.stdout.splitlines()[1:-2] if line.strip()])


def test_grade_jsonl_checks_every_answers_file_first(tmp_path: Path, prepared: tuple[Path, Path, Path]) -> None:
    data_dir, good, _ = prepared
    runs = tmp_path / "runs.jsonl"
    lines = [
        {"competition_id": COMP, "submission_path": str(good)},
        {"competition_id": "aerial-cactus-identification", "submission_path": str(good)},
    ]
    runs.write_text("\n".join(json.dumps(x) for x in lines))
    result = podium(
        "grade", "--submission", str(runs), "--output-dir", str(tmp_path / "out"), "--data-dir", str(data_dir)
    )
    assert (
        result.returncode == 2 and "aerial-cactus-identification" in result.stderr and "podium prepare" in result.stderr
    )
    assert not (tmp_path / "out").exists()


def test_version_and_every_help_names_its_defaults() -> None:
    from podium import __version__

    version = podium("--version")
    assert version.returncode == 0 and version.stdout.strip() == f"podium {__version__}"
    run_help = podium("run", "--help")
    assert run_help.returncode == 0
    text = " ".join(run_help.stdout.split())
    for default in ("(default: 24h)", "(default: 1)", "(default: runs)", "(default: baseline)", "(default: default)"):
        assert default in text, default
    for agent in ("aide", "baseline", "claude-code", "codex", "dummy", "mlab", "openhands", "search"):
        assert f" {agent}," in text or f" {agent})" in text or f"({agent}," in text, f"--agent's help lacks {agent}"
    for command in ("list", "show", "grade-sample", "validate", "grade", "prepare", "verify", "example"):
        shown = podium(command, "--help")
        assert shown.returncode == 0 and "usage: podium " + command in shown.stdout, command


def test_a_reader_that_goes_away_ends_podium_quietly() -> None:
    """`podium list | head`: the pipe closes before podium writes; no BrokenPipeError traceback."""
    child = subprocess.Popen(
        [sys.executable, "-m", "podium", "list", "--split", "all"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()
    stderr = child.stderr.read().decode()
    assert child.wait(timeout=120) == 141 and stderr == ""


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--time-limit", "-5m"], "the time limit must be positive, got -5m"),
        (["--time-limit=-5m"], "the time limit must be positive, got -5m"),
        (["--time-limit", "0"], "the time limit must be positive, got 0"),
        (["--time-limit", "5x"], "cannot read the time limit '5x'"),
        (["--cpus", "0"], "the CPUs per run must be more than 0, got 0"),
        (["--cpus", "-1"], "the CPUs per run must be more than 0, got -1"),
        (["--memory", "0"], "the memory cap must be positive, got 0"),
        (["--memory", "-1G"], "the memory cap must be positive, got -1G"),
        (["--disk", "lots"], "cannot read the disk cap 'lots'"),
        (["--seeds", "0"], "the number of seeds must be at least 1, got 0"),
        (["--workers", "-2"], "the number of workers must be at least 1, got -2"),
        (["--gpus", "-1"], "the number of GPUs must be at least 0, got -1"),
    ],
)
def test_run_limits_are_checked_before_anything_is_created(tmp_path: Path, args: list[str], says: str) -> None:
    result = podium("run", "--agent", "dummy", *args, "--runs-dir", str(tmp_path / "runs"))
    assert result.returncode == 2, result.stderr
    assert says in result.stderr and result.stderr.startswith("podium: error:") and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("agent", ["mlab", "openhands"])
def test_an_llm_agent_without_its_key_is_refused_before_anything_runs(tmp_path: Path, agent: str) -> None:
    """Issue 29 item 9: the refusal came after "0 of 1 run(s) already finished; running 1" (and after preparing
    the data): one line now, and nothing prepared or created."""
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"} | {"OMP_NUM_THREADS": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "podium", "run", "--agent", agent, "--competitions", "practice-wine",
         "--runs-dir", str(tmp_path / "runs"), "--data-dir", str(tmp_path / "data")],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("podium: error: the agent's model access") and "set OPENAI_API_KEY" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and result.stdout == "", result.stderr
    assert not (tmp_path / "runs").exists() and not (tmp_path / "data").exists()


def test_a_bad_agent_yaml_is_one_line_naming_file_key_and_fix(tmp_path: Path) -> None:
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "agent.yaml").write_text("command: [python3, main.py]\nenviron: {A: 1}\n")
    result = podium("run", "--agent", str(tmp_path / "agent"), "--runs-dir", str(tmp_path / "runs"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == (
        f"podium: error: {tmp_path / 'agent' / 'agent.yaml'}: unknown key 'environ'. Fix: did you mean 'env'? "
        "(the keys are name, command, env, resources, image, build, llm, environment)"
    )
    assert not (tmp_path / "runs").exists()


def test_a_directory_is_reported_as_a_directory(tmp_path: Path, prepared: tuple[Path, Path, Path]) -> None:
    data_dir, _, _ = prepared
    folder = tmp_path / "submission.csv"
    folder.mkdir()
    for command in ("validate", "grade-sample"):
        result = podium(command, str(folder), COMP, "--data-dir", str(data_dir))
        assert result.returncode == 1 and "is a directory" in json.loads(result.stdout)["error"], command


def test_a_bug_shows_its_traceback_and_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from podium import cli
    from podium.cli import commands

    def broken(args: object) -> int:
        raise RuntimeError("boom")

    monkeypatch.setattr(commands, "cmd_list", broken)
    assert cli.main(["list"]) == 70
    err = capsys.readouterr().err
    assert "Traceback" in err and "RuntimeError: boom" in err and "a bug in podium" in err

    def interrupted(args: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(commands, "cmd_list", interrupted)
    assert cli.main(["list"]) == 130
    assert capsys.readouterr().err.strip() == "podium: interrupted"
