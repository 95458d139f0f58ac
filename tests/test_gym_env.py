"""podium.gym: competitions as Gymnasium environments, played by a plain Gymnasium loop (bwrap, practice data)."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import gymnasium
import pytest

import podium.gym  # noqa: F401  (registers the ids)
from podium.errors import PodiumError, UsageError
from podium.paths import default_data_dir

DATA = default_data_dir()
PODIUM = [sys.executable, "-m", "podium"]
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")
needs_data = pytest.mark.usefixtures("practice_data")  # prepared in DATA (tests/conftest.py)

BUGGY = """import pandas as pd
sample = pd.read_csv('/home/data/sample_submission.csv')
sample.to_csv(OUT, index=False)
"""


def _play(env: gymnasium.Env, seed: int) -> tuple[list[str], float, dict]:
    """A scripted policy: writes code with a bug, runs it, reads the traceback, fixes it, submits."""
    observations = []
    obs, info = env.reset(seed=seed)
    assert "/home/data/train.csv" in obs and {t["function"]["name"] for t in info["tools"]} == {
        "bash",
        "write_file",
        "submit",
    }
    steps = [
        {"tool": "write_file", "path": "/home/code/solve.py", "content": BUGGY},
        {"tool": "bash", "command": "cd /home/code && python3 solve.py"},
    ]
    for action in steps:
        obs, reward, terminated, truncated, _ = env.step(action)
        observations.append(obs)
        assert reward == 0.0 and not terminated and not truncated
    assert "NameError" in observations[-1] and "exit code 1" in observations[-1]
    fixed = BUGGY.replace("OUT", "'/home/submission/submission.csv'")
    call = {
        "type": "function",
        "id": "call_1",
        "function": {"name": "write_file", "arguments": json.dumps({"path": "solve.py", "content": fixed})},
    }
    obs, reward, terminated, truncated, _ = env.step(call)
    assert obs.startswith("wrote ") and "/home/code/solve.py" in obs  # relative to the shell's folder, which persisted
    obs, reward, terminated, truncated, _ = env.step(
        {"tool": "bash", "command": "python3 solve.py && wc -l /home/submission/submission.csv"}
    )
    assert "exit code 0" in obs
    obs, reward, terminated, truncated, info = env.step({"tool": "submit"})
    assert terminated and not truncated
    return observations, reward, info


@needs_bwrap
@needs_data
def test_a_plain_loop_plays_two_episodes_on_two_competitions_landed_as_runs(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    for name in ("practice-titanic", "practice-wine"):
        env = gymnasium.make(
            f"podium/{name}-v1", runs_dir=str(runs), run_group="g", time_limit="10m", data_dir=str(DATA)
        )
        for seed in (1, 2):
            _, reward, info = _play(env, seed)
            record = json.loads(Path(info["record"]).read_text())
            assert record["status"] == "finished" and record["gym"]["terminated"] and record["gym"]["reward"] == reward
            assert record["gym"]["sealed_test_touched"] is False and record["gym"]["exposed"] == []
            # the terminal reward is what `podium grade` gives the same submission
            listing = tmp_path / f"{name}-{seed}.jsonl"
            listing.write_text(
                json.dumps({"competition_id": name, "submission_path": record["grade"]["submission_path"]})
            )
            out = tmp_path / f"grade-{name}-{seed}"
            subprocess.run(
                [*PODIUM, "grade", "--submission", str(listing), "--output-dir", str(out), "--data-dir", str(DATA)],
                check=True,
                capture_output=True,
            )
            report = json.loads(next(out.glob("*.json")).read_text())
            graded = report["competition_reports"][0] if "competition_reports" in report else report
            signed = -graded["score"] if graded["is_lower_better"] else graded["score"]  # higher is better
            assert signed == pytest.approx(reward)
            steps = [
                json.loads(line) for line in (Path(info["record"]).parent / "gym_steps.jsonl").read_text().splitlines()
            ]
            assert (
                [s["step"] for s in steps] == list(range(6))
                and steps[0]["tool"] == "reset"
                and steps[-1]["reward"] == reward
            )
        with pytest.raises(UsageError, match="after its episode ended"):
            env.step({"tool": "bash", "command": "true"})
        env.close()
    report = subprocess.run([*PODIUM, "report", "--pad-missing", str(runs / "g")], capture_output=True, text=True)
    assert report.returncode == 0, report.stderr
    assert "practice-titanic" in report.stdout and "practice-wine" in report.stdout
    audit = subprocess.run(
        [
            *PODIUM,
            "audit",
            "--checks",
            "submission,answers",
            "--data-dir",
            str(DATA),
            "--format",
            "json",
            str(runs / "g"),
        ],
        capture_output=True,
        text=True,
    )
    assert audit.returncode == 0, audit.stderr
    assert len(list((runs / "g").glob("*/*/audit.json"))) == 4


@needs_bwrap
@needs_data
def test_the_shell_keeps_folder_and_environment_and_bounds_output(tmp_path: Path) -> None:
    env = gymnasium.make(
        "podium/practice-titanic-v1", runs_dir=str(tmp_path), max_observation_chars=500, data_dir=str(DATA)
    )
    env.reset(seed=0)
    env.step({"tool": "bash", "command": "mkdir -p /home/code/x && cd /home/code/x && export KEEP=42"})
    obs, *_ = env.step({"tool": "bash", "command": "pwd; echo $KEEP"})
    assert "/home/code/x\n42\n" in obs
    obs, *_ = env.step({"tool": "bash", "command": "seq 1 100000"})
    assert len(obs) <= 600 and "cut" in obs and obs.startswith("1\n2\n") and "100000" in obs
    obs, *_ = env.step({"tool": "bash", "command": "sleep 30", "timeout": 1})
    assert "timed out" in obs
    obs, _, terminated, _, info = env.step({"tool": "nope"})
    assert obs.startswith("error: unknown tool") and info["error"] and not terminated
    obs, *_ = env.step({"type": "function", "function": {"name": "bash", "arguments": "{not json"}})
    assert "not valid JSON" in obs
    env.close()  # an episode still going is landed as truncated
    record = json.loads(next(tmp_path.glob("*/practice-titanic/0/record.json")).read_text())
    assert record["gym"]["truncated"] is True and record["gym"]["reward"] == 0.0


@needs_bwrap
@needs_data
def test_max_steps_truncates_and_grades_what_is_in_place(tmp_path: Path) -> None:
    env = gymnasium.make("podium/practice-titanic-v1", runs_dir=str(tmp_path), max_steps=2, data_dir=str(DATA))
    env.reset(seed=3)
    env.step({"tool": "bash", "command": "cp /home/data/sample_submission.csv /home/submission/submission.csv"})
    _, reward, terminated, truncated, info = env.step({"tool": "bash", "command": "true"})
    assert truncated and not terminated and info["grade"]["valid_submission"] and reward == info["grade"]["score"] > 0
    env.close()


@needs_bwrap
@needs_data
def test_a_policy_looking_for_the_answers_finds_nothing(tmp_path: Path) -> None:
    answers = DATA / "practice-titanic/prepared/private/test.csv"
    digest = hashlib.sha256(answers.read_bytes()).hexdigest()
    env = gymnasium.make(
        "podium/practice-titanic-v1", runs_dir=str(tmp_path), data_dir=str(DATA), max_observation_chars=200_000
    )
    env.reset(seed=0)
    hunt = (
        "find / -xdev \\( -path /proc -o -path /sys \\) -prune -o -type f -print 2>/dev/null | head -20000 | "
        "xargs -d '\\n' sha256sum 2>/dev/null | cut -d' ' -f1; "
        "for p in /proc/[0-9]*/root /proc/[0-9]*/cwd; do ls $p/../ 2>/dev/null; done | head -50; "
        f"ls {DATA} {answers.parent} 2>&1; cat {answers} 2>&1 | head -2; ls -la /home"
    )
    obs, *_ = env.step({"tool": "bash", "command": hunt, "timeout": 120})
    assert digest not in obs
    assert "No such file or directory" in obs  # the data dir's host path is not there
    env.close()


@needs_bwrap
@needs_data
def test_check_env_passes(tmp_path: Path) -> None:
    from gymnasium.utils.env_checker import check_env

    env = gymnasium.make("podium/practice-wine-v1", runs_dir=str(tmp_path), data_dir=str(DATA), time_limit="5m")
    check_env(env.unwrapped, skip_render_check=True)
    env.close()


@needs_bwrap
@needs_data
def test_make_vec_async_runs_four_episodes(tmp_path: Path) -> None:
    envs = gymnasium.make_vec(
        "podium/practice-wine-v1",
        num_envs=4,
        vectorization_mode="async",
        vector_kwargs={"shared_memory": False},  # text observations go by pipe
        runs_dir=str(tmp_path),
        run_group="vec",
        data_dir=str(DATA),
    )
    try:
        obs, _ = envs.reset(seed=10)
        assert len(obs) == 4 and all("/home/data" in o for o in obs)
        actions = (
            {"tool": "bash", "command": "cp /home/data/sample_submission.csv /home/submission/submission.csv"},
        ) * 4
        envs.step(actions)
        _, rewards, terminated, _, _ = envs.step(({"tool": "submit"},) * 4)
        assert list(terminated) == [True] * 4 and all(r != 0 for r in rewards)  # log loss: negative, signed
    finally:
        envs.close()
    assert sorted(p.name for p in (tmp_path / "vec/practice-wine").iterdir() if (p / "record.json").exists())[:4] == [
        "10",
        "11",
        "12",
        "13",
    ]


def test_bad_input_is_one_line_naming_the_value_and_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(gymnasium.error.Error, match="practice-titanic"):  # Gymnasium's own did-you-mean
        gymnasium.make("podium/practice-titanc-v1")
    cases = [
        ({"task": "sealed"}, "allow_sealed=True"),
        ({"reward": "percentile"}, "holdout task"),
        ({"reward": "medal"}, "holdout task"),
        ({"reward": "nope"}, "Fix: pass one of"),
        ({"task": "nope"}, "task='nope'"),
        ({"max_steps": 0}, "max_steps=0"),
        ({"time_limit": "soon"}, "time_limit='soon'"),
        ({"run_group": "../x"}, "run group"),
    ]
    for kwargs, message in cases:
        with pytest.raises(UsageError, match=message) as caught:
            gymnasium.make("podium/leaf-classification-v1", runs_dir=str(tmp_path), **kwargs)
        assert "\n" not in str(caught.value)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(PodiumError, match="bubblewrap") as caught:
        gymnasium.make("podium/practice-titanic-v1", runs_dir=str(tmp_path), data_dir=str(DATA))
    assert "\n" not in str(caught.value)


def test_arguments_nested_too_deep_or_too_large_are_an_answer_not_an_exception() -> None:
    """A policy's arguments are its own text: nested 100,000 deep (json.loads raises RecursionError) or larger than
    any argument may be, parse_action answers with what is wrong, as for any malformed call."""
    from podium.gym.actions import MAX_ARGUMENT_CHARS, parse_action

    deep = "[" * 100_000 + "]" * 100_000
    said = parse_action({"type": "function", "function": {"name": "bash", "arguments": deep}})
    assert isinstance(said, str) and "cannot be read" in said and "nests too deep" in said
    huge = '{"command": "' + "x" * (MAX_ARGUMENT_CHARS * 4 + 2048) + '"}'
    said = parse_action({"type": "function", "function": {"name": "bash\x1b[2J", "arguments": huge}})
    assert isinstance(said, str) and "bytes, over the" in said and "\x1b" not in said
