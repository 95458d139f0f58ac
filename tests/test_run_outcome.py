"""A finished run's one line (podium.run.outcome): what `podium run` prints when each run ends."""

from __future__ import annotations

from pathlib import Path

from podium.records import GradeReport, RunRecord
from podium.run.outcome import outcome


def _record(tmp_path: Path, llm: dict | None) -> RunRecord:
    run = tmp_path / "runs" / "default" / "practice-wine" / "0"
    grade = GradeReport.from_dict(
        {"competition_id": "practice-wine", "competition_version": 1, "score": 0.25, "submission_exists": True,
         "valid_submission": True, "submission_path": str(run / "submission" / "submission.csv")}
    )  # fmt: skip
    record = RunRecord(run_group="default", competition_id="practice-wine", competition_version=1, seed=0, agent="x")
    record.grade, record.llm, record.agent_result = grade, llm, {"exit_code": 1, "seconds": 2.0}
    return record


def test_a_run_whose_every_model_call_the_proxy_refused_says_so(tmp_path: Path) -> None:
    """Codex 0.171 once met a proxy rule it broke on its first call: the run ended 'finished' with the sample
    submission's score and nothing said the agent never had its model. Now the line says so and where to look."""
    line = outcome(_record(tmp_path, {"calls": 0, "refused": 3, "answered_calls": 0}))
    calls = tmp_path / "runs" / "default" / "practice-wine" / "0" / "llm_calls.jsonl"
    assert line.startswith("score 0.25; the agent exited with status 1")
    assert f"podium's proxy refused all 3 of its model calls and answered none (why: {calls})" in line
    for fine in ({"calls": 4, "refused": 1, "answered_calls": 3}, {"calls": 0, "refused": 0}, None):
        assert "refused" not in outcome(_record(tmp_path, fine))
