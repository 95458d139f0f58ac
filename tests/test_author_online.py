"""``podium new ID`` online: the real ``kaggle`` client against the fake Kaggle of tests/kaggle_fake.py, which pages
the leaderboard at 20 rows a call as Kaggle does. The whole board is read (45 teams, three calls) and checked
against the team count; the metadata, the pages, the notebooks and the data zip land where they belong; an
unknown id, missing credentials, rules not accepted and a board cut short are each one line, exit 2, nothing
written."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
import yaml

pytest.importorskip("kaggle")

from kaggle_fake import FakeKaggle, home, key, server  # noqa: F401  (fixtures)
from podium import declarations
from podium.cli import main
from podium.data.kernels import kernel_refs

TEAMS = 45
NOTEBOOKS = ["alice/first-look", "bob/gradient-boosting", "carol/stacking"]


def _zip() -> bytes:
    """Kaggle's data zip of a small tabular competition: train, Kaggle's unlabelled test, the sample submission."""
    lines = ["id,city,temperature,rainy"] + [f"{i},{'ab'[i % 2]},{i % 30 + 0.5},{i % 3 == 0}" for i in range(300)]
    tests = ["id,city,temperature"] + [f"{i},a,{i % 30}" for i in range(300, 400)]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("train.csv", "\n".join(lines) + "\n")
        archive.writestr("test.csv", "\n".join(tests) + "\n")
        archive.writestr("sample_submission.csv", "id,rainy\n" + "".join(f"{i},False\n" for i in range(300, 400)))
    return buffer.getvalue()


@pytest.fixture
def kaggle(server: FakeKaggle) -> FakeKaggle:
    name = "rain-forecast"
    server.competitions[name] = "open"
    server.metadata[name] = {
        "title": "Rain Forecast", "deadline": "2023-05-01T23:59:00Z", "category": "Featured",
        "evaluationMetric": "Categorization Accuracy", "teamCount": TEAMS, "isKernelsSubmissionsOnly": True,
        "awardsPoints": True,
    }  # fmt: skip
    server.pages[name] = [
        {"name": "data-description", "content": "One row per city and day."},
        {"name": "rules", "content": "One account per participant."},
        {"name": "evaluation", "content": "Submissions are scored on accuracy."},
        {"name": "description", "content": "Will it rain tomorrow in each city?"},
    ]
    server.files[name] = [{"name": n, "totalBytes": 100} for n in ("train.csv", "test.csv", "sample_submission.csv")]
    server.boards[name] = [
        {
            "teamId": i,
            "teamName": f"team {i}",
            "submissionDate": "2023-05-01T12:00:00Z",
            "score": f"{0.99 - i / 100:.5f}",
        }
        for i in range(TEAMS)
    ]
    server.notebooks[name] = NOTEBOOKS
    server.archives[name] = _zip()
    return server


def _error(err: str) -> str:
    """The one error line (what the client prints of its progress goes to stderr too)."""
    (line,) = [line for line in err.splitlines() if line.startswith("podium: error:")]
    return line


def _new(tmp_path: Path, *args: str) -> int:
    return main(["new", "rain-forecast", "--out", str(tmp_path / "mine"), "--data-dir", str(tmp_path / "data"), *args])


def test_the_whole_board_is_read_page_by_page_and_everything_lands(
    kaggle: FakeKaggle, key: None, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _new(tmp_path) == 0
    out = capsys.readouterr().out
    calls = [path for method, path, _ in kaggle.seen if method == "POST" and path.endswith("/GetLeaderboard")]
    assert len(calls) == 3  # 20 + 20 + 5 rows
    folder = tmp_path / "mine" / "rain-forecast"
    board = json.loads((folder / "leaderboard.json").read_text())
    assert board["n_teams"] == TEAMS and board["gold"] == pytest.approx(0.99 - 3 / 100)  # position 4 of 45
    declared = yaml.safe_load((folder / "competition.yaml").read_text())
    assert declared["metric"] == {"name": "accuracy", "higher_is_better": True}
    assert declared["awards_medals"] is True and declared["deadline"] == "2023-05-01"
    assert declared["kaggle"]["leaderboard"] == {"board": "private", "rows": TEAMS, "pages": 3}
    assert declared["kaggle"]["team_count"] == TEAMS and declared["kaggle"]["code_only"] is True
    assert declared["columns"]["rainy"]["kind"] == "bool" and declared["id_columns"] == ["id"]
    assert declared["prepare"]["split"]["test_size"] == 0.25  # Kaggle's 100 test rows against 300 train rows
    text = (folder / "description.md").read_text()
    order = [text.index(words) for words in ("Will it rain", "scored on accuracy", "One row per city")]
    assert order == sorted(order) and "One account" not in text  # overview, evaluation, data; not the rules
    assert (folder / "kernels.txt").read_text().split() == NOTEBOOKS
    assert (tmp_path / "data" / "rain-forecast" / "rain-forecast.zip").read_bytes() == kaggle.archives["rain-forecast"]
    assert f"Kaggle's private leaderboard (3 pages), {TEAMS} teams" in out
    assert "next     podium check rain-forecast --competitions-dir" in out
    monkeypatch.setenv(declarations.PATH_VARIABLE, str(tmp_path / "mine"))
    assert kernel_refs("rain-forecast") == NOTEBOOKS  # the plagiarism audit's list, beside the declaration
    prepared = main(
        ["prepare", "-c", "rain-forecast", "--data-dir", str(tmp_path / "data")]
    )  # from the zip new fetched
    assert prepared == 0 and (tmp_path / "data" / "rain-forecast" / "prepared" / "private" / "test.csv").is_file()
    assert "Skipping" in capsys.readouterr().err  # the client found the zip complete: nothing downloaded again


def test_a_board_cut_short_is_refused_against_the_team_count(
    kaggle: FakeKaggle, key: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kaggle.stop_paging = True  # one page of 20, as a client that makes one view call gets
    assert _new(tmp_path) == 2
    err = capsys.readouterr().err
    assert _error(err).count("gave 20 rows in 1 page(s), but its metadata counts 45 teams") == 1
    assert "--leaderboard FILE" in err and not (tmp_path / "mine").exists()


def test_a_board_of_a_running_competition_is_said_to_be_the_public_one(
    kaggle: FakeKaggle, key: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kaggle.metadata["rain-forecast"]["deadline"] = "2999-01-01T00:00:00Z"
    assert _new(tmp_path) == 0
    assert "Kaggle's public leaderboard" in capsys.readouterr().out
    declared = yaml.safe_load((tmp_path / "mine" / "rain-forecast" / "competition.yaml").read_text())
    assert declared["kaggle"]["leaderboard"]["board"] == "public"


@pytest.mark.parametrize(
    ("state", "words"),
    [
        (None, "Kaggle knows no competition named rain-forecast (HTTP 404)"),
        ("rules", "https://www.kaggle.com/c/rain-forecast/rules"),
        ("no-key", "no Kaggle credentials"),
    ],
)
def test_an_unknown_slug_rules_not_accepted_and_no_credentials_are_one_line(
    state: str | None, words: str, kaggle: FakeKaggle, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    if state != "no-key":
        monkeypatch.setenv("KAGGLE_USERNAME", "tester")
        monkeypatch.setenv("KAGGLE_KEY", "good-key")
    if state is None:
        del kaggle.competitions["rain-forecast"]
    elif state == "rules":
        kaggle.competitions["rain-forecast"] = "rules"
    assert _new(tmp_path) == 2
    err = capsys.readouterr().err
    assert words in _error(err)
    assert not (tmp_path / "mine").exists() and not (tmp_path / "data").exists()


def test_with_from_and_kaggle_the_facts_come_from_kaggle_and_the_data_from_the_folder(
    kaggle: FakeKaggle, key: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = tmp_path / "raw"
    with zipfile.ZipFile(io.BytesIO(kaggle.archives["rain-forecast"])) as archive:
        archive.extractall(raw)
    assert _new(tmp_path, "--from", str(raw), "--kaggle") == 0
    assert not [path for method, path, _ in kaggle.seen if method == "GET"]  # no data asked for
    assert not [path for method, path, _ in kaggle.seen if path.endswith("/DownloadDataFiles")]
    declared = yaml.safe_load((tmp_path / "mine" / "rain-forecast" / "competition.yaml").read_text())
    assert declared["kaggle"]["team_count"] == TEAMS and declared["name"] == "Rain Forecast"
    assert f"--from {raw}" in capsys.readouterr().out
