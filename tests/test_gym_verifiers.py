"""podium's gym episodes under Prime Intellect's verifiers: its own evaluation entry point (``vf-eval``) plays a
practice competition against podium's scripted model, and the reward it reports is podium's grade of the landed
episode. Runs in the training stack's venv (scripts/train_env.sh; tests/train_stack.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from podium.testing import ScriptedLLM
from test_gym_rollout import COMP, _session
from train_stack import train_python

pytestmark = pytest.mark.train

SRC = Path(__file__).resolve().parents[1] / "src"
VF_EVAL = "import sys; from verifiers.v1.cli.eval.main import main; main(sys.argv[1:])"


def _vf_eval(python: str, base_url: str, tmp: Path, *more: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "SCRIPTED_KEY": "sk-scripted-not-a-key-000000",
           "PYTHONPATH": str(SRC)}  # fmt: skip
    args = ["podium-verifiers", "--env.agent.runtime.type", "subprocess", "--model", "policy",
            "--client.base-url", base_url, "--client.api-key-var", "SCRIPTED_KEY", "--rich", "None",
            "--push", "False", "-o", str(tmp / "out"), *more]  # fmt: skip
    return subprocess.run([python, "-c", VF_EVAL, *args], capture_output=True, text=True, env=env, cwd=tmp,
                          timeout=900)  # fmt: skip


def _podium(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "podium", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=600)  # fmt: skip


def test_vf_eval_plays_a_podium_episode_and_reports_podiums_reward(tmp_path):
    python = train_python()
    runs = tmp_path / "runs"
    with ScriptedLLM(_session(), caps=True) as model:
        done = _vf_eval(python, model.base_url + "/v1", tmp_path, "-n", "1", "-r", "1",
                        "--env.taskset.competitions", json.dumps([COMP]), "--env.taskset.runs-dir", str(runs),
                        "--env.taskset.run-group", "vf", "--env.taskset.max-steps", "12",
                        "--env.taskset.time-limit", "5m")  # fmt: skip
        asked = [r["body"] for r in model.requests]
    assert done.returncode == 0, done.stderr[-3000:]
    # Every model call of the episode went through verifiers (its interception) with podium's tools.
    assert len(asked) == 6 and {t["function"]["name"] for t in asked[0]["tools"]} >= {"bash", "write_file", "submit"}
    traces = [json.loads(line) for line in next((tmp_path / "out").glob("*/traces.jsonl")).read_text().splitlines()]
    assert len(traces) == 1 and traces[0]["ok"], traces[0]["errors"]
    trace = traces[0]["traces"][0]
    assert trace["errors"] == [] and trace["task"]["data"]["competition"] == COMP
    episode = trace["info"]["podium"]
    assert episode["terminated"] and episode["steps"] == 5 and episode["model_calls"] == 6
    # The episode landed as a podium run; the reward verifiers reports is podium's grade of its submission.
    run_dir = Path(episode["run_dir"])
    assert run_dir == runs / "vf" / COMP / "0"
    record = json.loads((run_dir / "record.json").read_text())
    assert record["gym"]["terminated"] and record["gym"]["model"] == "policy"
    graded = _podium("grade-sample", str(run_dir / "submission" / "submission.csv"), COMP, cwd=tmp_path)
    score = json.loads(graded.stdout)["score"]
    assert record["grade"]["valid_submission"] and record["grade"]["score"] == pytest.approx(score)
    assert trace["rewards"]["podium"]["score"] == pytest.approx(score) and score > 0
    assert f"reward={score:.3f}" in done.stderr


def test_a_landed_record_without_a_gym_reward_is_refused(tmp_path):
    from podium.errors import UsageError
    from podium.gym.verifiers import landed_reward

    (tmp_path / "record.json").write_text(json.dumps({"gym": None}))
    with pytest.raises(UsageError, match="holds no gym reward"):
        landed_reward(str(tmp_path))
    (tmp_path / "record.json").write_text(json.dumps({"gym": {"reward": 0.5}}))
    assert landed_reward(str(tmp_path)) == 0.5


def test_the_module_imports_without_verifiers_and_says_how_to_get_it():
    code = (
        "import sys; sys.modules['verifiers'] = None; import podium.gym.verifiers as m\n"
        "try:\n    m.PodiumTaskset\nexcept Exception as e:\n    print(type(e).__name__, e)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("pip install verifiers") and "UsageError" in done.stdout


def test_vf_eval_refuses_an_unknown_competition_or_no_episodes_before_playing(tmp_path):
    python = train_python()
    for args, said in (
        (["--env.taskset.competitions", '["no-such-thing"]'], "Unknown competition 'no-such-thing'"),
        (["--env.taskset.competitions", json.dumps([COMP]), "--env.taskset.episodes", "0"], "episodes"),
    ):
        done = _vf_eval(python, "http://127.0.0.1:9/v1", tmp_path, *args, "--env.taskset.runs-dir", "runs")
        assert done.returncode != 0 and said in done.stdout + done.stderr, done.stderr[-2000:]
        assert "Traceback" not in done.stdout + done.stderr and not (tmp_path / "runs").exists()


def test_the_relay_answers_502_when_verifiers_address_is_down_and_refuses_other_schemes():
    import socket
    import urllib.error
    import urllib.request

    from podium.errors import UsageError
    from podium.gym.verifiers import _BearerRelay

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    relay = _BearerRelay(f"http://127.0.0.1:{port}/v1", "secret")
    try:
        request = urllib.request.Request(relay.base_url + "/chat/completions", data=b"{}", method="POST")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=30)
        assert refused.value.code == 502
    finally:
        relay.close()
    with pytest.raises(UsageError, match="cannot call"):
        _BearerRelay("file:///etc/passwd", "secret")
