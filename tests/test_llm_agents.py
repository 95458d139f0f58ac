"""podium's search agent end to end (issue 11 §2, §5): `podium run --agent search` against the scripted
model server, through podium's real proxy, in bwrap, with its environment: retries, a repair prompt, a
failed node debugged, a node stopped for time, the best node's submission placed, snapshots, journal and
token counts in the record."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from podium.agents import BUILTIN
from podium.testing import Fail, Reply, ScriptedLLM, ToolCall

COMP = "spaceship-titanic"

GOOD = """\
import pandas as pd
train = pd.read_csv("/home/data/train.csv")
sample = pd.read_csv("/home/data/sample_submission.csv")
majority = bool(train["Transported"].mode()[0])
print(f"holdout metric: {(train['Transported'] == majority).mean():.4f}")
sample["Transported"] = {value}
sample.to_csv("submission.csv", index=False)
"""
BUGGY = "import pandas as pd\nraise ValueError('boom: a column is missing')\n"
SLOW = "import time\ntime.sleep(600)\n"


def _text(request: dict[str, Any]) -> str:
    body = request["body"]
    return " ".join(str(m.get("content")) for m in body.get("messages") or [])


class Model:
    """Answers by what the agent asks: drafts, a debug, an improvement, and structured reviews."""

    def __init__(self) -> None:
        self.drafts = 0

    def __call__(self, request: dict[str, Any]) -> Any:
        text = _text(request)
        if request["body"].get("tools"):
            if "boom" in text or "stopped after" in text:
                return ToolCall(
                    "submit_review", {"is_bug": True, "summary": "it failed", "metric": None, "lower_is_better": False}
                )
            metric = 0.9 if "False  # improved" in text else 0.6
            return ToolCall(
                "submit_review",
                {"is_bug": False, "summary": "majority class", "metric": metric, "lower_is_better": False},
            )
        if "A script that failed" in text:
            return Reply("The column was missing.\n```python\n" + GOOD.replace("{value}", "True") + "```")
        if "solution to improve" in text:
            return Reply("Flip it.\n```python\n" + GOOD.replace("{value}", "False  # improved") + "```")
        self.drafts += 1
        if self.drafts == 1:
            return Reply("I would start with a majority-class baseline.")  # no code: repaired
        if self.drafts == 2:
            return Reply("```python\n" + GOOD.replace("{value}", "True") + "```")
        if self.drafts == 3:
            return Reply("```python\n" + BUGGY + "```")
        return Reply("```python\n" + SLOW + "```")


@pytest.fixture(scope="module")
def env_dir(minimal_env_dir: Path) -> Path:
    return minimal_env_dir


SEARCH_SETTINGS = {"SEARCH_DRAFTS": "3", "SEARCH_STEPS": "6", "SEARCH_STEP_TIMEOUT": "8", "OMP_NUM_THREADS": "1"}


def _agent(tmp_path: Path, builtin: str = "search", settings: dict[str, str] | None = None, **env: str) -> Path:
    """A copy of a built-in agent whose agent.yaml's env: is ``settings`` (the search agent's test settings)
    with ``env`` on top."""
    folder = tmp_path / builtin
    shutil.copytree(BUILTIN / builtin, folder)
    settings = {**(SEARCH_SETTINGS if settings is None else settings), **env}
    text = (folder / "agent.yaml").read_text()
    text = "\n".join(line for line in text.splitlines() if not line.startswith("env:"))
    (folder / "agent.yaml").write_text(text + f"\nenv: {json.dumps(settings)}\n")
    return folder


def _run(
    agent: Path, model: ScriptedLLM, spaceship_data_dir: Path, runs: Path, env_dir: Path, *more: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "podium", "run", "--agent", str(agent), "--competitions", COMP, "--time-limit", "3m",
         "--memory", "3G", "--model", "scripted-1", "--base-url", model.base_url, "--data-dir", str(spaceship_data_dir),
         "--runs-dir", str(runs), *more],
        capture_output=True, text=True, timeout=900,
        env={**os.environ, "PODIUM_ENV_DIR": str(env_dir), "OPENAI_API_KEY": "sk-test", "OMP_NUM_THREADS": "1"},
    )  # fmt: skip


def test_the_search_agent_runs_end_to_end_through_the_proxy(
    tmp_path: Path, spaceship_data_dir: Path, env_dir: Path
) -> None:
    answer = Model()
    with ScriptedLLM([Fail(429, "slow down", retry_after=0.1), *[answer] * 40]) as model:
        result = _run(_agent(tmp_path), model, spaceship_data_dir, tmp_path / "runs", env_dir)
        asked = list(model.requests)
    assert result.returncode == 0, result.stderr[-3000:]
    run = tmp_path / "runs" / "default" / COMP / "0"
    journal = [json.loads(line) for line in (run / "logs" / "journal.jsonl").read_text().splitlines()]
    operators = [n["operator"] for n in journal]
    assert operators[:3] == ["draft", "draft", "draft"] and "debug" in operators and "improve" in operators
    first, buggy = journal[0], journal[1]
    assert first["metric"] == 0.6 and first["valid"] and first["input_tokens"] > 0
    assert buggy["is_bug"] and "boom" in buggy["output_tail"]
    assert any(n["killed_for"] == "time" for n in journal), "the slow draft is stopped at its step timeout"
    best = max((n for n in journal if n["valid"]), key=lambda n: n["metric"])
    assert best["operator"] == "improve" and best["metric"] == 0.9
    snapshots = [json.loads(line) for line in (run / "logs" / "snapshots" / "snapshots.jsonl").read_text().splitlines()]
    assert snapshots[0]["source"] == "sample" and snapshots[-1]["source"] == f"node{best['id']:04d}"
    assert "False" in (run / "submission" / "submission.csv").read_text()
    record = json.loads((run / "record.json").read_text())
    assert record["grade"]["valid_submission"] and record["environment"]["name"] == "minimal"
    llm = record["llm"]
    assert llm["calls"] == len(asked) and llm["input_tokens"] > 0 and llm["output_tokens"] > 0
    assert llm["models"] == {"scripted-1": "scripted-1"} and llm["cost_usd"] is None  # no price for this model
    assert "could not be used" in _text(asked[2])  # the draft without code got its repair prompt
    assert all(r["body"]["model"] == "scripted-1" for r in asked)


def test_a_spent_budget_ends_the_run_with_the_best_submission_in_place(
    tmp_path: Path, spaceship_data_dir: Path, env_dir: Path
) -> None:
    answer = Model()
    answer.drafts = 1  # the first draft is good
    with ScriptedLLM([answer, answer, Fail(429, "token budget spent (9000 of 9000 tokens used)")]) as model:
        result = _run(_agent(tmp_path), model, spaceship_data_dir, tmp_path / "runs", env_dir)
    assert result.returncode == 0, result.stderr[-3000:]
    run = tmp_path / "runs" / "default" / COMP / "0"
    assert "budget is spent" in (run / "logs" / "agent.stdout.log").read_text()
    record = json.loads((run / "record.json").read_text())
    assert record["grade"]["valid_submission"]
    assert json.loads((run / "logs" / "journal.jsonl").read_text().splitlines()[0])["valid"]


AIDE_CODE = """\
import pandas as pd
train = pd.read_csv("./input/train.csv")
sample = pd.read_csv("./input/sample_submission.csv")
print("Validation accuracy:", {metric})
sample["Transported"] = {value}
sample.to_csv("./working/submission.csv", index=False)
"""


def test_aide_runs_unpatched_and_its_best_node_is_what_gets_graded(
    tmp_path: Path, spaceship_data_dir: Path, aide_env_dir: Path
) -> None:
    """AIDE from PyPI through the proxy: its model is an alias, its extra report call is off, and the best
    node (not the last script) writes the submission."""
    env_dir = aide_env_dir
    codes = iter([("0.9", "False"), ("0.5", "True"), ("0.4", "True")])  # the best node comes first

    def answer(request: dict[str, Any]) -> Any:
        text = _text(request)
        if request["body"].get("tools"):
            metric = float(text.split("Validation accuracy:")[-1].split()[0]) if "Validation accuracy:" in text else 0.0
            return ToolCall(
                "submit_review", {"is_bug": False, "summary": "ran", "metric": metric, "lower_is_better": False}
            )
        metric, value = next(codes, ("0.3", "True"))
        return Reply(
            "A baseline.\n```python\n" + AIDE_CODE.replace("{metric}", metric).replace("{value}", value) + "```"
        )

    agent = tmp_path / "aide"
    shutil.copytree(BUILTIN / "aide", agent)
    with open(agent / "agent.yaml", "a") as handle:
        handle.write("\n# the test: three steps\n")
    text = (
        (agent / "agent.yaml")
        .read_text()
        .replace('env: {OMP_NUM_THREADS: "2"}', 'env: {OMP_NUM_THREADS: "1", STEP_LIMIT: "3"}')
    )
    (agent / "agent.yaml").write_text(text)
    with ScriptedLLM([answer] * 20) as model:
        result = _run(agent, model, spaceship_data_dir, tmp_path / "runs", env_dir)
        asked = list(model.requests)
    assert result.returncode == 0, result.stderr[-3000:]
    run = tmp_path / "runs" / "default" / COMP / "0"
    out = (run / "logs" / "agent.stdout.log").read_text()
    assert "the best node's submission is in place" in out, out[-3000:]
    assert "False" in (run / "submission" / "submission.csv").read_text()  # the 0.9 node's, not the last one's
    assert all(r["body"]["model"] == "scripted-1" for r in asked)  # the alias, rewritten by the proxy
    assert len(asked) == 6, "three drafts and three reviews; no report call"
    record = json.loads((run / "record.json").read_text())
    assert record["grade"]["valid_submission"] and record["llm"]["models"] == {"aide-code": "scripted-1"}


def test_aide_goes_on_after_a_review_that_is_not_json(
    tmp_path: Path, spaceship_data_dir: Path, aide_env_dir: Path
) -> None:
    """A weak model's review (a forced tool call) with arguments that are not JSON used to end AIDE's search
    and leave it hung until the run's time was up (seen with SmolLM2). Now it is asked for once more, then
    the node counts as buggy and the search goes on to a node that works."""
    env_dir = aide_env_dir
    reviews = iter(['{"is_bug": false, "summary": "ran\nbadly', '{"is_bug": false, "summary": "ran\nbadly'])

    def answer(request: dict[str, Any]) -> Any:
        text = _text(request)
        if request["body"].get("tools"):
            bad = next(reviews, None)
            if bad is not None:
                return ToolCall("submit_review", bad)  # a control character inside a JSON string
            metric = float(text.split("Validation accuracy:")[-1].split()[0]) if "Validation accuracy:" in text else 0.0
            return ToolCall(
                "submit_review", {"is_bug": False, "summary": "ran", "metric": metric, "lower_is_better": False}
            )
        return Reply(
            "A baseline.\n```python\n" + AIDE_CODE.replace("{metric}", "0.7").replace("{value}", "False") + "```"
        )

    agent = tmp_path / "aide"
    shutil.copytree(BUILTIN / "aide", agent)
    text = (agent / "agent.yaml").read_text()
    (agent / "agent.yaml").write_text(
        text.replace('env: {OMP_NUM_THREADS: "2"}', 'env: {OMP_NUM_THREADS: "1", STEP_LIMIT: "2"}')
    )
    with ScriptedLLM([answer] * 20) as model:
        result = _run(agent, model, spaceship_data_dir, tmp_path / "runs", env_dir)
    assert result.returncode == 0, result.stderr[-3000:]
    run = tmp_path / "runs" / "default" / COMP / "0"
    out = (run / "logs" / "agent.stdout.log").read_text()
    assert "review 2 of 2 was not valid JSON" in out and "AIDE finished" in out, out[-3000:]
    [journal] = (run / "logs" / "aide").glob("*/journal.json")
    nodes = json.loads(journal.read_text())["nodes"]
    assert len(nodes) == 2 and nodes[0]["is_buggy"] and "not valid JSON twice" in nodes[0]["analysis"]
    assert not nodes[1]["is_buggy"]
    assert "the best node's submission is in place" in out
