"""The hold-out scorer (issue 31 §3): the competition's exact metric on the agent's own predictions and labels,
through the validation socket with the real client (/home/score_holdout.py), logged apart from validation and
counted apart by the audit's integrity statement."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from podium import registry
from podium.fixtures import make_fixture, write_csv, write_prepared
from podium.grading import grade_frames, open_user_file, score_holdout
from podium.grading.table import Frame
from podium.services import ValidationServer, sandbox_file

CLIENT = sandbox_file("score_holdout.py")


def _frame(columns: dict[str, list[object]]) -> Frame:
    return Frame({k: np.asarray(v, dtype=object) for k, v in columns.items()}, len(next(iter(columns.values()))))


def _score(tmp_path: Path, comp_id: str, predictions: Frame, labels: Frame) -> tuple[float | None, str | None]:
    write_csv(predictions, tmp_path / "predictions.csv")
    write_csv(labels, tmp_path / "labels.csv")
    with open_user_file(tmp_path / "predictions.csv") as p, open_user_file(tmp_path / "labels.csv") as lab:
        result = score_holdout(registry.get(comp_id), p, lab)
    return result.score, result.error


@pytest.mark.parametrize("comp_id", [c for c in registry.ids() if not registry.get(c).hook("load_answers")])
def test_the_score_is_the_graders_with_the_labels_as_answers(comp_id: str, tmp_path: Path) -> None:
    """Over every competition whose answers are a table: labels in the sample submission's format (the perfect
    submission, plus any answer column the metric also reads) score the sample submission as the grader scores
    it against the answers."""
    comp = registry.get(comp_id)
    fixture = make_fixture(comp)
    extra = {
        n: fixture.answers[n]
        for n in {*comp.id_columns, *(c.name for c in comp.answer_columns)}
        | ({comp.metric.where["column"]} if comp.metric.where else set())
        if n not in fixture.perfect and n in fixture.answers
    }
    labels = Frame({**fixture.perfect.columns, **extra}, fixture.perfect.n_rows)
    graded = grade_frames(comp, fixture.answers, fixture.sample, "sample.csv")
    score, error = _score(tmp_path, comp_id, fixture.sample, labels)
    if comp_id == "kuzushiji-recognition":  # its answers are boxes (label x y w h), its submissions points
        assert score is None and error is not None and "multiple of 5" in error
        return
    assert score == graded.score, error
    if graded.score is None:
        assert error is not None and "undefined" in error


def test_what_is_wrong_is_said(tmp_path: Path) -> None:
    labels = _frame({"id": [1, 2, 3, 4], "survived": [0, 1, 1, 0]})
    assert _score(tmp_path, "practice-titanic", labels, labels) == (1.0, None)
    half = _frame({"id": [1, 2, 3, 4], "survived": [0, 0, 1, 1]})
    assert _score(tmp_path, "practice-titanic", half, labels) == (0.5, None)
    score, error = _score(tmp_path, "practice-titanic", _frame({"id": [1, 2, 3, 9], "survived": [0, 1, 1, 0]}), labels)
    assert score is None and error is not None and error.startswith("the predictions would be an invalid submission")
    score, error = _score(tmp_path, "practice-titanic", half, _frame({"id": [1, 2, 3, 4], "alive": [0, 1, 1, 0]}))
    assert score is None and error is not None and "lacks column(s) survived" in error
    score, error = _score(tmp_path, "practice-titanic", half, _frame({"id": [1, 2, 3, 4], "survived": [0, 1, 7, "x"]}))
    assert score is None and error is not None and error.startswith("the labels are not usable")
    comp = "tensorflow2-question-answering"  # answers read by the competition's own loader
    score, error = _score(tmp_path, comp, _frame({"example_id": ["a"], "PredictionString": [""]}),
                          _frame({"example_id": ["a"], "PredictionString": [""]}))  # fmt: skip
    assert score is None and error is not None and "own loader" in error


@pytest.fixture
def short_dir() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="ph-", dir="/tmp"))  # a Unix socket's path is short
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _client(socket: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PODIUM_VALIDATION_SOCKET": str(socket)}
    return subprocess.run([sys.executable, str(CLIENT), *args], capture_output=True, text=True, env=env, timeout=120)


def test_the_client_scores_through_the_socket_and_each_call_is_logged_apart(short_dir: Path) -> None:
    comp = registry.get("practice-titanic")
    fixture = make_fixture(comp)
    sample = write_prepared(comp, fixture, short_dir / "data") / comp.sample_submission
    labels = _frame({"id": [1, 2, 3, 4], "survived": [0, 1, 1, 0]})
    write_csv(labels, short_dir / "labels.csv")
    write_csv(_frame({"id": [1, 2, 3, 4], "survived": [0, 1, 1, 1]}), short_dir / "predictions.csv")
    (short_dir / "link.csv").symlink_to(short_dir / "labels.csv")
    logs = short_dir / "run"
    with ValidationServer(comp, sample, short_dir / "v.sock", logs / "validation.jsonl", min_interval_s=0.3,
                          holdout_log=logs / "holdout.jsonl") as server:  # fmt: skip
        scored = _client(server.socket_path, str(short_dir / "predictions.csv"), str(short_dir / "labels.csv"))
        validated = subprocess.run([sys.executable, str(sandbox_file("validate_submission.py")), str(sample)],
                                   capture_output=True, text=True, timeout=60,
                                   env={**os.environ, "PODIUM_VALIDATION_SOCKET": str(server.socket_path)})  # fmt: skip
        again = _client(server.socket_path, str(short_dir / "labels.csv"), str(short_dir / "labels.csv"))  # waits
        wrong = _client(server.socket_path, str(short_dir / "predictions.csv"), str(short_dir / "sample.csv"))
        linked = _client(server.socket_path, str(short_dir / "predictions.csv"), str(short_dir / "link.csv"))
        calls = server.holdout_calls
    assert scored.returncode == 0 and scored.stdout.startswith("score: 0.75 (accuracy, higher is better"), scored
    assert again.returncode == 0 and again.stdout.startswith("score: 1.0 "), again
    assert validated.returncode == 0, validated.stdout  # scoring has a rate limit of its own: no 429 here
    assert wrong.returncode == 1 and "no file at" in wrong.stdout
    assert linked.returncode == 1 and "symbolic link" in linked.stdout
    validation = [json.loads(line) for line in (logs / "validation.jsonl").read_text().splitlines()]
    assert [c["verdict"] for c in validation] == ["valid"]  # hold-out calls are never counted as validation calls
    final = [c for c in calls if c["status"] == 200]
    assert [c["score"] for c in final] == [0.75, 1.0] and all(c["verdict"] == "scored" for c in final)
    assert final[1]["predictions"]["sha256"] == final[1]["labels"]["sha256"]
    assert final[0]["predictions"]["rows"] == 4 and "row_sketch" in final[0]["labels"]
    assert all(c["verdict"] == "rate-limited" for c in calls if c["status"] == 429)


def test_without_a_holdout_log_the_endpoint_is_not_offered(short_dir: Path) -> None:
    comp = registry.get("practice-titanic")
    sample = write_prepared(comp, make_fixture(comp), short_dir / "data") / comp.sample_submission
    write_csv(_frame({"id": [1], "survived": [0]}), short_dir / "a.csv")
    with ValidationServer(comp, sample, short_dir / "v.sock", short_dir / "validation.jsonl") as server:
        result = _client(server.socket_path, str(short_dir / "a.csv"), str(short_dir / "a.csv"))
    assert result.returncode == 2 and "HTTP 404" in result.stdout


def test_the_integrity_statement_counts_holdout_calls_apart(tmp_path: Path) -> None:
    """Scores of the agent's own labels are no test signal: the statement counts them in a note of their own, and
    the validation part still says every validation answer was a format verdict."""
    from podium.audit import audit_run
    from test_audit_checks import make_run

    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "agent.yaml").write_text("name: mine\ncommand: [python3, /home/agent/main.py]\n")
    format_call = {"time": "t", "verdict": "valid", "status": 200, "error": None, "body_bytes": 10}
    run = make_run(tmp_path / "runs", tmp_path / "data", 0, agent_dir=agent, calls=[format_call])
    scored = {"time": "t", "verdict": "scored", "status": 200, "error": None, "score": 0.75, "body_bytes": 20}
    refused = {"time": "t", "verdict": "rate-limited", "status": 429, "error": "rate limited", "body_bytes": 20}
    (run / "holdout_calls.jsonl").write_text(f"{json.dumps(scored)}\n{json.dumps(refused)}\nnot json\n")
    result = audit_run(run, ["integrity"], {"agent_dir": str(agent)}).result("integrity")
    statement = [f.reason for f in result.flags]
    assert result.verdict == "clean", statement
    assert "validation: 1 calls, all format-only (no score returned)" in statement
    note = next(f for f in result.flags if f.reason.startswith("hold-out scorer"))
    assert note.reason == "hold-out scorer: 2 calls, 1 scored (the agent's own labels, never the test set)"
    assert note.figures == {"holdout_calls": 2, "holdout_scored": 1} and not note.violation


def test_a_file_whose_size_says_less_than_it_holds_never_splits_the_body(short_dir: Path) -> None:
    """A /proc file says size 0 but reads as text: the client sends exactly the declared bytes, so the labels still
    arrive whole as labels (before, the predictions' real bytes ran into the labels' part of the body)."""
    comp = registry.get("practice-titanic")
    sample = write_prepared(comp, make_fixture(comp), short_dir / "data") / comp.sample_submission
    write_csv(_frame({"id": [1, 2, 3, 4], "survived": [0, 1, 1, 0]}), short_dir / "labels.csv")
    logs = short_dir / "run"
    with ValidationServer(comp, sample, short_dir / "v.sock", logs / "validation.jsonl", min_interval_s=0.1,
                          holdout_log=logs / "holdout.jsonl") as server:  # fmt: skip
        scored = _client(server.socket_path, "/proc/self/status", str(short_dir / "labels.csv"))
        calls = server.holdout_calls
    assert scored.returncode == 1, scored
    call = calls[-1]
    assert call["body_bytes"] == (short_dir / "labels.csv").stat().st_size  # the declared bytes, no more
    assert call["labels"]["rows"] == 4 and call["predictions"]["rows"] == 0 and call["verdict"] == "not-scored"
