"""The LLM judge end to end with a real small model (SmolLM2-135M through llama.cpp's server) and podium's
real proxy: the path, not the model's judgement. Needs the local model stack (scripts/local_model.sh);
skipped without it, failed under PODIUM_REQUIRE_LOCAL_MODEL=1, run last (conftest), like
tests/test_local_model.py, whose fixtures it uses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from podium.audit import audit_run
from podium.audit.judge import LOG_FILE, QUESTIONS
from test_audit_framework import make_run
from test_local_model import server, stack  # noqa: F401  (fixtures)

pytestmark = pytest.mark.local_model


def test_smollm2_answers_the_judge_through_the_proxy(
    server: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    run = make_run(tmp_path / "runs")
    (run / "logs" / "agent.stdout.log").write_text("reading train.csv\nfitting a random forest\nwrote submission.csv\n")
    (run / "code" / "solution.py").write_text("import pandas as pd\nprint(pd.read_csv('train.csv').shape)\n")
    options = {"model": "smollm2", "base_url": server, "judge_answer_tokens": 96}
    audit = audit_run(run, ["judge"], options)
    result = audit.result("judge")
    assert result is not None and result.verdict in ("clean", "flagged", "unclear")
    assert all(result.inputs[f"verdict.{q.id}"] in ("yes", "no", "unclear") for q in QUESTIONS)
    assert not any("the check failed" in f.reason or "did not answer" in f.reason for f in result.flags)
    calls = [json.loads(line) for line in (run / LOG_FILE).read_text().splitlines()]
    assert 3 <= len(calls) <= 6 and all(c["status"] == 200 and c["output_tokens"] > 0 for c in calls)
    assert int(result.inputs["input_tokens"]) == sum(c["input_tokens"] for c in calls)
