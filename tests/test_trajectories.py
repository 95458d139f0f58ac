"""podium trajectories export: episodes' run folders as training rows (JSONL, Parquet) a trainer takes as they are."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from podium.errors import UsageError
from podium.gym.trajectories import TRAJECTORY_FIELDS, episode_dirs, export, trajectory

TOOLS = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object", "properties": {
    "command": {"type": "string"}}, "required": ["command"]}}}]  # fmt: skip


def _episode(root: Path, seed: int, *, messages: list[dict] | None = None, task: str = "holdout") -> Path:
    """A landed episode as podium.gym writes it: record.json with its gym section, the steps, and (for a rollout)
    the conversation the model had."""
    run = root / "gym-test" / "practice-titanic" / str(seed)
    run.mkdir(parents=True)
    grade = {"competition_id": "practice-titanic", "score": 0.8, "valid_submission": True, "submission_exists": True,
             "gold_medal": False, "silver_medal": True, "bronze_medal": False, "percentile": 0.9}  # fmt: skip
    gym = {"task": task, "model": "policy-7b", "reward": 0.8, "terminated": True, "truncated": False, "steps": 2,
           "exposed": ["validation_calls:1"], "env_id": "podium/practice-titanic-v1",
           "sealed_test_touched": False}  # fmt: skip
    record = {"run_group": "gym-test", "competition_id": "practice-titanic", "competition_version": 1, "seed": seed,
              "agent": "gym", "status": "finished", "grade": grade, "gym": gym}  # fmt: skip
    (run / "record.json").write_text(json.dumps(record))
    steps = [
        {"step": 0, "tool": "reset", "arguments": {}, "call_id": None, "observation": "Task: predict Survived.",
         "tools": TOOLS},
        {"step": 1, "tool": "bash", "arguments": {"command": "python train.py"}, "call_id": "call_a",
         "observation": "exit 1\nTraceback: NameError", "exit_code": 1, "elapsed_s": 0.5, "step_s": 0.52,
         "cpu_s": 0.4, "max_rss_bytes": 1000, "reward": 0.0, "terminated": False, "truncated": False},
        {"step": 2, "tool": "submit", "arguments": {}, "call_id": "call_b", "observation": "graded: 0.8",
         "exit_code": None, "elapsed_s": 0.0, "step_s": 1.5, "reward": 0.8, "terminated": True, "truncated": False},
    ]  # fmt: skip
    (run / "gym_steps.jsonl").write_text("".join(json.dumps(s) + "\n" for s in steps))
    if messages is not None:
        (run / "gym_messages.jsonl").write_text("".join(json.dumps(m) + "\n" for m in messages))
    return run


def _rollout_messages() -> list[dict]:
    logprobs = {"content": [{"token": "call", "logprob": -0.1, "top_logprobs": []},
                            {"token": "ing", "logprob": -0.2, "top_logprobs": []}]}  # fmt: skip

    def call(i: str, name: str, args: dict) -> dict:
        return {"id": i, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}

    return [
        {"role": "system", "content": "You are an ML engineer."},
        {"role": "user", "content": "Task: predict Survived."},
        {"role": "assistant", "content": "", "tool_calls": [call("call_a", "bash", {"command": "python train.py"})],
         "logprobs": logprobs},
        {"role": "tool", "tool_call_id": "call_a", "content": "exit 1\nTraceback: NameError"},
        {"role": "assistant", "content": "Submitting.", "tool_calls": [call("call_b", "submit", {})]},
    ]  # fmt: skip


def test_a_scripted_policy_episode_becomes_a_conversation_from_its_steps(tmp_path):
    run = _episode(tmp_path, 0)
    row = trajectory(run)
    assert tuple(row) == TRAJECTORY_FIELDS
    roles = [m["role"] for m in row["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant", "tool"]
    first_call = row["messages"][1]["tool_calls"][0]
    assert first_call["function"] == {"name": "bash", "arguments": json.dumps({"command": "python train.py"})}
    assert row["messages"][2] == {"role": "tool", "content": "exit 1\nTraceback: NameError",
                                  "tool_calls": None, "tool_call_id": "call_a", "name": None}  # fmt: skip
    assert (row["reward"], row["terminated"], row["truncated"], row["step_count"]) == (0.8, True, False, 2)
    assert (row["score"], row["medal"], row["valid_submission"], row["percentile"]) == (0.8, "silver", True, 0.9)
    assert row["steps"][0]["cpu_s"] == 0.4 and row["steps"][1]["tool"] == "submit"
    assert row["exposed"] == ["validation_calls:1"] and row["complete"] is True
    assert json.loads(row["tools_json"]) == TOOLS and row["logprobs"] is None


def test_a_rollout_keeps_its_conversation_and_gets_the_last_answer_from_the_steps(tmp_path):
    run = _episode(tmp_path, 1, messages=_rollout_messages())
    row = trajectory(run)
    roles = [m["role"] for m in row["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool"]
    assert row["messages"][-1]["content"] == "graded: 0.8" and row["messages"][-1]["tool_call_id"] == "call_b"
    assert row["logprobs"] == [{"tokens": ["call", "ing"], "logprobs": [-0.1, -0.2]}, None]
    assert "logprobs" not in row["messages"][2]


def test_audit_verdict_is_carried_where_the_run_was_audited(tmp_path):
    run = _episode(tmp_path, 0)
    (run / "audit.json").write_text(json.dumps({"verdict": "clean", "checks": {}}))
    assert trajectory(run)["audit_verdict"] == "clean"


def test_hostile_files_in_an_episode_are_not_followed_or_trusted(tmp_path):
    secret = tmp_path / "secret.jsonl"
    secret.write_text(json.dumps({"role": "user", "content": "THE PRIVATE ANSWERS"}) + "\n")
    run = _episode(tmp_path, 0)
    (run / "gym_messages.jsonl").symlink_to(secret)
    (run / "audit.json").symlink_to(tmp_path / "elsewhere.json")
    (tmp_path / "elsewhere.json").write_text(json.dumps({"verdict": "clean"}))
    with open(run / "gym_steps.jsonl", "a") as handle:  # a line nested past any bound, and one that is not JSON
        handle.write("[" * 100_000 + "\n" + "not json\n")
    row = trajectory(run)
    assert "THE PRIVATE ANSWERS" not in json.dumps(row)
    assert row["audit_verdict"] is None and row["step_count"] == 2
    linked = tmp_path / "linked"
    linked.mkdir()
    os.symlink(run, linked / "run")
    assert episode_dirs([linked]) == []  # a link to a run is not walked into


def test_export_writes_jsonl_and_parquet_that_pandas_reads_alike(tmp_path):
    _episode(tmp_path / "runs", 0)
    _episode(tmp_path / "runs", 1, messages=_rollout_messages())
    assert export([tmp_path / "runs"], tmp_path / "t.jsonl", "jsonl") == 2
    assert export([tmp_path / "runs"], tmp_path / "t.parquet", "parquet") == 2
    from_json = pd.read_json(tmp_path / "t.jsonl", lines=True)
    from_parquet = pd.read_parquet(tmp_path / "t.parquet")
    assert list(from_parquet.columns) == list(TRAJECTORY_FIELDS) == list(from_json.columns)
    ids = list(from_parquet["id"])
    assert [i.rsplit("/", 1)[0] for i in ids] == ["gym-test/practice-titanic/0", "gym-test/practice-titanic/1"]
    assert ids == list(from_json["id"]) and all(len(i.rsplit("/", 1)[1]) == 12 for i in ids)
    assert [len(m) for m in from_parquet["messages"]] == [5, 6]
    assert not list(tmp_path.glob(".t.*"))  # no partial file left


def test_export_refuses_what_holds_no_episode_in_one_line(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match="no gym episodes under"):
        export([tmp_path / "empty"], tmp_path / "out.jsonl")
    with pytest.raises(UsageError, match="not a folder of runs"):
        export([tmp_path / "missing"], tmp_path / "out.jsonl")
    with pytest.raises(UsageError, match="--format 'csv'"):
        export([tmp_path / "empty"], tmp_path / "out.csv", "csv")
    _episode(tmp_path / "runs", 0)
    done = subprocess.run([sys.executable, "-m", "podium", "trajectories", "export", str(tmp_path / "runs"), "--out",
                           str(tmp_path)], capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 2 and "is a folder" in done.stderr and "Traceback" not in done.stderr


def test_an_export_into_a_folder_it_cannot_write_is_one_line(tmp_path):
    _episode(tmp_path / "runs", 0)
    with pytest.raises(UsageError, match="cannot write") as caught:
        export([tmp_path / "runs"], tmp_path / "missing" / "t.jsonl")
    assert "\n" not in str(caught.value) and caught.value.__suppress_context__  # no chained traceback


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")
@pytest.mark.usefixtures("practice_data")
def test_a_played_episode_exports_the_tools_it_offered_and_an_id_no_other_episode_has(tmp_path):
    """tools_json was always null (read from the record, which never held the tools); ids repeated across runs
    folders (GROUP/COMPETITION/SEED) while the same episode read twice kept one (issue 41 §4.6, §4.10)."""
    import gymnasium

    import podium.gym  # noqa: F401

    offered = []
    for runs in ("a", "b"):  # the same group, competition and seed in two runs folders
        env = gymnasium.make("podium/practice-titanic-v1", runs_dir=str(tmp_path / runs), run_group="g",
                             time_limit="5m")  # fmt: skip
        _, info = env.reset(seed=0)
        offered.append(info["tools"])
        env.step({"tool": "submit"})
        env.close()
    shutil.copytree(tmp_path / "a", tmp_path / "copy")  # the same episode, read from elsewhere
    rows = [trajectory(tmp_path / name / "g" / "practice-titanic" / "0") for name in ("a", "b", "copy")]
    assert [json.loads(row["tools_json"]) for row in rows[:2]] == offered
    assert {t["function"]["name"] for t in offered[0]} == {"bash", "write_file", "submit"}
    assert rows[0]["id"] != rows[1]["id"] and rows[0]["id"] == rows[2]["id"]
    assert all(row["id"].startswith("g/practice-titanic/0/") for row in rows)
