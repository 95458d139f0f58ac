"""podium rollout: a model plays gym episodes through podium's proxy; they land as runs and export as trajectories.

The model is podium's scripted model server: a session that writes a script, runs it, reads the traceback, fixes it,
runs it again and submits, as chat-completions tool calls of the environment's own tools."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from podium.testing import Expect, Reply, ScriptedLLM, ToolCall
from test_sandbox import _processes_with  # a sandbox's processes left, by their command line

pytest.importorskip("gymnasium")

COMP = "practice-titanic"
BROKEN = "import csv\nrows = list(csv.DictReader(open('/home/data/sample_submission.csv')))\nprint(predictions)\n"
FIXED = "import shutil\nshutil.copyfile('/home/data/sample_submission.csv', '/home/submission/submission.csv')\nprint('wrote it')\n"


def _session() -> list:
    return [
        ToolCall("write_file", {"path": "/home/code/train.py", "content": BROKEN}),
        Expect("wrote", ToolCall("bash", {"command": "python3 /home/code/train.py"})),
        Expect("NameError", ToolCall("write_file", {"path": "/home/code/train.py", "content": FIXED})),
        ToolCall("bash", {"command": "python3 /home/code/train.py"}),
        Expect("wrote it", Reply("Done, I think.")),  # no tool call: reminded once
        ToolCall("submit", {}),
    ]


def _podium(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENAI_API_KEY": "sk-scripted-not-a-key-000000"}
    return subprocess.run([sys.executable, "-m", "podium", *args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=900)  # fmt: skip


def test_a_model_plays_episodes_that_land_as_runs_and_export_as_trajectories(tmp_path, practice_data):
    runs = tmp_path / "runs"
    with ScriptedLLM(_session() + _session(), caps=True) as model:
        done = _podium("rollout", "--model", "policy", "--base-url", model.base_url, "--competitions", COMP,
                       "--episodes", "2", "--runs-dir", str(runs), "--run-group", "roll", "--max-steps", "12",
                       "--time-limit", "5m", "--logprobs", cwd=tmp_path)  # fmt: skip
        asked = [r["body"] for r in model.requests]
    assert done.returncode == 0, done.stderr[-3000:]
    assert "[2/2] practice-titanic seed 1: reward" in done.stderr and "2 with a valid submission" in done.stderr
    assert all(body.get("logprobs") is True for body in asked)
    assert {t["function"]["name"] for t in asked[0]["tools"]} >= {"bash", "write_file", "submit"}
    records = sorted(runs.glob("roll/practice-titanic/*/record.json"))
    assert len(records) == 2
    record = json.loads(records[0].read_text())
    assert record["gym"]["model"] == "policy" and record["gym"]["terminated"] is True
    assert record["llm"]["calls"] == 6 and (records[0].parent / "llm_transcript.jsonl").is_file()
    graded = _podium("grade-sample", str(records[0].parent / "submission" / "submission.csv"), COMP, cwd=tmp_path)
    assert record["gym"]["reward"] == pytest.approx(json.loads(graded.stdout)["score"])
    out = tmp_path / "t.jsonl"
    exported = _podium("trajectories", "export", str(runs), "--out", str(out), cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 2 and rows[0]["model"] == "policy"
    roles = [m["role"] for m in rows[0]["messages"]]
    assert roles[:2] == ["system", "user"] and roles.count("assistant") == 6 and roles[-1] == "tool"
    assert any("NameError" in (m["content"] or "") for m in rows[0]["messages"] if m["role"] == "tool")
    report = _podium("report", str(runs / "roll"), cwd=tmp_path)  # no --pad-missing: group.json names the competitions
    assert report.returncode == 0 and COMP in report.stdout, report.stderr


def test_rollout_refuses_bad_input_in_one_line(tmp_path):
    for args, said in (
        (["--competitions", "no-such-thing"], "no-such-thing"),
        (["--competitions", COMP, "--episodes", "0"], "--episodes"),
        (["--competitions", COMP, "--run-group", "../x"], "cannot name a run group"),
    ):
        done = _podium("rollout", "--model", "m", "--base-url", "http://127.0.0.1:9", *args, "--runs-dir",
                       str(tmp_path / "runs"), cwd=tmp_path)  # fmt: skip
        assert done.returncode == 2 and said in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not (tmp_path / "runs").exists()


def test_a_gym_group_declares_what_it_was_asked_so_report_takes_it_without_flags(tmp_path, practice_data):
    """Episodes write group.json as podium run does: the settings of the first, each competition as its first episode
    starts; `podium report` takes those competitions as the denominator (it needed --pad-missing before), and an
    episode under other settings is refused in one line."""
    import gymnasium

    import podium.gym  # noqa: F401
    from podium.errors import UsageError

    data = str(practice_data)
    runs = tmp_path / "runs"
    for name in ("practice-titanic", "practice-wine"):
        env = gymnasium.make(f"podium/{name}-v1", runs_dir=str(runs), run_group="g", time_limit="5m", data_dir=data)
        for seed in (0, 1):
            env.reset(seed=seed)
            env.step({"tool": "bash", "command": "cp /home/data/sample_submission.csv /home/submission/"})
            env.step({"tool": "submit"})
        env.close()
    document = json.loads((runs / "g" / "group.json").read_text())
    assert document["competitions"] == ["practice-titanic", "practice-wine"]
    assert document["settings"]["agent"] == "gym" and document["settings"]["time_limit_s"] == 300
    report = _podium("report", str(runs / "g"), cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    assert "pass --pad-missing" not in report.stdout + report.stderr
    other = gymnasium.make("podium/practice-wine-v1", runs_dir=str(runs), run_group="g", time_limit="7m", data_dir=data)
    with pytest.raises(UsageError, match=r"time limit 5m.*\(now 7m\).*run_group="):
        other.reset(seed=5)
    other.close()
    assert not (runs / "g" / "practice-wine" / "5").exists()


def test_episodes_of_many_processes_join_one_group_json(tmp_path):
    """make_vec's processes start episodes at once: each competition is listed, none lost to a race."""
    import threading

    from podium.run.group import join

    settings = {"agent": "gym", "time_limit_s": 60.0}
    names = [f"c{i}" for i in range(16)]
    threads = [threading.Thread(target=join, args=(tmp_path / "g", settings, name)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert json.loads((tmp_path / "g" / "group.json").read_text())["competitions"] == sorted(names)


def test_what_a_node_says_of_its_episode_does_not_set_its_reward(tmp_path, practice_data):
    """A cluster node's record of an episode is hostile: the driver writes the episode's gym facts from its own
    options, the reward from its own grade, keeps only checked observations, and follows no link in the steps."""
    from podium.gym.options import check_options
    from podium.gym.remote import GymLanding
    from podium.paths import RunPaths
    from podium.records import GradeReport, RunRecord

    data = str(practice_data)
    options = check_options("practice-wine", data_dir=data, model="policy", max_steps=10)
    grade = {"competition_id": "practice-wine", "competition_version": 1, "score": 0.25, "gold_threshold": None,
             "silver_threshold": None, "bronze_threshold": None, "median_threshold": None, "any_medal": False,
             "gold_medal": False, "silver_medal": False, "bronze_medal": False, "above_median": False,
             "submission_exists": True, "valid_submission": True, "is_lower_better": True, "created_at": "",
             "submission_path": ""}  # fmt: skip
    lies = {"reward": 1e9, "model": "someone-else", "task": "holdout", "sealed_test_touched": False, "steps": -4,
            "terminated": "yes", "truncated": True, "exposed": ["none really", "validation_calls:3", "x:1"]}  # fmt: skip
    record = RunRecord.from_dict({"run_group": "g", "competition_id": "practice-wine", "competition_version": 1,
                                  "seed": 0, "agent": "gym", "status": "finished", "gym": lies})  # fmt: skip
    record.grade = GradeReport.from_dict(grade)
    staging = RunPaths(tmp_path / "run")
    staging.root.mkdir()
    outside = tmp_path / "host-file"
    outside.write_text('{"terminated": true, "reward": 0}\n')
    (staging.root / "gym_steps.jsonl").symlink_to(outside)
    GymLanding({"practice-wine": options})(record, staging)
    gym = record.gym
    assert gym["reward"] == -0.25  # the driver's grade, lower is better: signed
    assert gym["model"] == "policy" and gym["task"] == "sealed" and gym["steps"] == 0
    assert gym["terminated"] is False and gym["truncated"] is True and gym["exposed"] == ["validation_calls:3"]
    assert outside.read_text() == '{"terminated": true, "reward": 0}\n'  # the link was not followed
    (staging.root / "gym_steps.jsonl").unlink()
    (staging.root / "gym_steps.jsonl").write_text('{"step": 1}\n{"step": 2, "terminated": true, "reward": 5}\n')
    GymLanding({"practice-wine": options})(record, staging)
    last = json.loads((staging.root / "gym_steps.jsonl").read_text().splitlines()[-1])
    assert last == {"step": 2, "terminated": True, "reward": -0.25}
    record.grade = None  # a harness error: no grade, no reward
    GymLanding({"practice-wine": options})(record, staging)
    assert record.gym["reward"] is None


CP = "cp /home/data/sample_submission.csv /home/submission/submission.csv"


def test_a_model_server_sending_lone_surrogates_and_escapes_loses_no_episode(tmp_path, practice_data):
    """A reply whose content, or whose tool call's arguments, hold a lone surrogate (the valid JSON escape
    "\\ud800", or one the arguments' own JSON makes) or raw terminal escapes: each becomes an observation or a
    refused call, every episode lands, the files podium wrote read back as strict UTF-8, and nothing raw reaches the
    terminal."""
    from test_gym_hostile import strict_lines

    def session() -> list:
        return [
            Reply("thinking \ud800 \x1b[2J\x1b]0;pwned\x07"),
            ToolCall("bash", '{"command": "echo \\ud800"}'),  # the escape inside the arguments' JSON
            ToolCall("bash", '{"command": "echo \ud800 \udcff"}'),  # the characters themselves in the arguments
            ToolCall("write_file", {"path": "/home/code/\ud800", "content": "x"}),
            ToolCall("bash", {"command": "printf '\\033[2J\\033]0;pwned\\007'; " + CP}),
            ToolCall("submit", {}),
        ]

    runs = tmp_path / "runs"
    with ScriptedLLM(session() + session(), caps=True) as model:
        done = _podium("rollout", "--model", "policy", "--base-url", model.base_url, "--competitions", COMP,
                       "--episodes", "2", "--runs-dir", str(runs), "--run-group", "roll", "--max-steps", "12",
                       "--time-limit", "5m", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert "\x1b" not in done.stderr + done.stdout and "\x07" not in done.stderr + done.stdout
    records = sorted(runs.glob("roll/practice-titanic/*/record.json"))
    assert len(records) == 2
    for path in records:
        record = json.loads(path.read_text())
        assert record["status"] == "finished" and record["grade"]["valid_submission"] is True
        steps = strict_lines(path.parent / "gym_steps.jsonl")
        assert [s["tool"] for s in steps] == ["reset", "invalid", "invalid", "invalid", "bash", "submit"]
        assert all("lone surrogate" in s["observation"] for s in steps[1:4])
        assert "\x1b" not in steps[4]["observation"] and "\\e[2J" in steps[4]["observation"]
        messages = strict_lines(path.parent / "gym_messages.jsonl")
        assert messages[2]["content"].startswith("thinking ")
    assert not [p for p in (runs / "roll" / "practice-titanic").iterdir() if p.name.startswith(".")]
    out = tmp_path / "t.jsonl"
    exported = _podium("trajectories", "export", str(runs), "--out", str(out), cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    assert len(strict_lines(out)) == 2


def _rollout_command(base_url: str, runs: Path, episodes: int = 2) -> list[str]:
    return [sys.executable, "-m", "podium", "rollout", "--model", "policy", "--base-url", base_url, "--competitions",
            COMP, "--episodes", str(episodes), "--runs-dir", str(runs), "--run-group", "roll", "--max-steps", "12",
            "--time-limit", "5m"]  # fmt: skip


def _interrupt_when(proc: subprocess.Popen, ready, what: str) -> tuple[int, str]:
    import signal
    import time

    for _ in range(1200):
        if ready() or proc.poll() is not None:
            break
        time.sleep(0.05)
    assert proc.poll() is None, f"podium rollout ended before {what}: {proc.communicate()[1][-2000:]}"
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    return proc.returncode, stderr


def test_ctrl_c_discards_the_episode_in_progress_and_the_same_command_resumes(tmp_path, practice_data):
    """Ctrl-C in the middle of an episode's command: the episode is not landed (no record, no staging folder, no
    sandbox left), as the command says; the same command again plays only the seed that is missing, leaving the
    landed one as it was, and a third time plays nothing."""
    runs = tmp_path / "runs"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENAI_API_KEY": "sk-scripted-not-a-key-000000"}
    marker = "sleep 4133.5"
    script = [ToolCall("bash", {"command": CP}), ToolCall("submit", {}),
              ToolCall("bash", {"command": marker})]  # fmt: skip
    folder = runs / "roll" / COMP
    with ScriptedLLM(script, caps=True) as model:
        proc = subprocess.Popen(_rollout_command(model.base_url, runs), cwd=tmp_path, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
        code, stderr = _interrupt_when(proc, lambda: bool(_processes_with(marker)), "seed 1's command ran")
    assert code == 130 and "the episode in progress was discarded" in stderr, stderr[-3000:]
    assert "Traceback" not in stderr
    assert sorted(p.name for p in folder.iterdir()) == ["0"]  # seed 1: neither landed nor staged
    assert _processes_with(marker) == []
    kept = (folder / "0" / "record.json").read_bytes()
    assert json.loads(kept)["grade"]["valid_submission"] is True

    with ScriptedLLM([ToolCall("bash", {"command": CP}), ToolCall("submit", {})], caps=True) as model:
        again = subprocess.run(_rollout_command(model.base_url, runs), cwd=tmp_path, env=env, capture_output=True,
                               text=True, timeout=900)  # fmt: skip
        asked = len(model.requests)
    assert again.returncode == 0, again.stderr[-3000:]
    assert asked == 2 and "1 of 2 episode(s) already" in again.stderr  # seed 1 only
    assert (folder / "0" / "record.json").read_bytes() == kept
    assert json.loads((folder / "1" / "record.json").read_text())["grade"]["valid_submission"] is True

    with ScriptedLLM([], caps=True) as model:
        third = subprocess.run(_rollout_command(model.base_url, runs), cwd=tmp_path, env=env, capture_output=True,
                               text=True, timeout=900)  # fmt: skip
        assert model.requests == []
    assert third.returncode == 0 and "nothing left to play" in third.stderr, third.stderr


def test_ctrl_c_while_the_model_thinks_lands_nothing(tmp_path, practice_data):
    from podium.testing import Stall

    runs = tmp_path / "runs"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENAI_API_KEY": "sk-scripted-not-a-key-000000"}
    with ScriptedLLM([Stall(120)], caps=True) as model:
        proc = subprocess.Popen(_rollout_command(model.base_url, runs, episodes=1), cwd=tmp_path, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
        code, stderr = _interrupt_when(proc, lambda: bool(model.requests), "the model was asked")
    assert code == 130 and "discarded" in stderr and "Traceback" not in stderr, stderr[-3000:]
    assert [p.name for p in (runs / "roll" / COMP).iterdir()] == []


def test_a_failed_episode_never_replaces_a_finished_one(tmp_path, practice_data, monkeypatch):
    """Seed 0 landed with a valid submission; the same seed played again with a model that cannot be reached (every
    model call fails: a harness error) raises, and leaves seed 0 as it was, with no staging folder beside it."""
    import gymnasium

    import podium.gym  # noqa: F401
    from podium.errors import PodiumError
    from podium.gym.rollout import RolloutSettings, play_episode

    monkeypatch.setenv("OPENAI_API_KEY", "sk-scripted-not-a-key-000000")
    common = {"runs_dir": str(tmp_path), "run_group": "g", "time_limit": "5m", "data_dir": str(practice_data)}
    env = gymnasium.make(f"podium/{COMP}-v1", **common)
    env.reset(seed=0)
    env.step({"tool": "bash", "command": CP})
    env.step({"tool": "submit"})
    env.close()
    folder = tmp_path / "g" / COMP
    kept = (folder / "0" / "record.json").read_bytes()
    llm = {"model": "policy", "base_url": "http://127.0.0.1:9"}  # nothing listens there
    env = gymnasium.make(f"podium/{COMP}-v1", llm=llm, model="policy", **common)
    try:
        with pytest.raises(PodiumError, match="model call"):
            play_episode(env, 0, RolloutSettings(model="policy", competitions=[COMP]), call_timeout=30)
    finally:
        env.close()
    assert (folder / "0" / "record.json").read_bytes() == kept
    assert sorted(p.name for p in folder.iterdir()) == ["0"]


def test_a_second_rollout_on_a_busy_group_is_refused(tmp_path):
    """The group is held for the whole batch, as podium run --cluster holds it: a second batch is one line."""
    from podium.errors import UsageError
    from podium.gym.rollout import RolloutSettings, rollout
    from podium.run.group import batch_lock

    settings = RolloutSettings(model="m", competitions=[COMP], runs_dir=str(tmp_path), run_group="busy")
    with batch_lock(tmp_path / "busy"), pytest.raises(UsageError, match="one batch at a time"):
        rollout(settings, make=lambda *a, **k: pytest.fail("an episode was started"))
