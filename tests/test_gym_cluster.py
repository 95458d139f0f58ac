"""`podium rollout --cluster ray`: gym episodes as Ray tasks on a real local cluster (a head and two workers as
separate processes, ``ray.cluster_utils.Cluster``), played against podium's scripted model, landed and graded on
the driver as `podium run --cluster` lands runs; a node removed mid-episode is retried elsewhere.

The policy answers by the conversation so far (a retried episode replays the same moves): a first `bash` step that
writes the submission (after a sleep, so that a node can be removed mid-episode), then `submit`.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from podium.records import GradeReport
from podium.testing import ScriptedLLM, ToolCall

ROOT = Path(__file__).resolve().parents[1]
COMP = "practice-wine"

if os.environ.get("PODIUM_REQUIRE_RAY") != "1":  # CI installs ray (the dev extra) and requires these tests
    pytest.importorskip("ray")
pytest.importorskip("gymnasium")
import ray.cluster_utils  # noqa: E402

pytestmark = pytest.mark.cluster


def _policy(sleep: int) -> Any:
    def answer(request: dict[str, Any]) -> Any:
        tool_results = [m for m in request["body"]["messages"] if m.get("role") == "tool"]
        if not tool_results:
            command = f"sleep {sleep}; cp /home/data/sample_submission.csv /home/submission/submission.csv && echo ok"
            return ToolCall("bash", {"command": command})
        return ToolCall("submit", {})

    return answer


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from podium import registry
    from podium.data.prepare import prepare_offline

    root = tmp_path_factory.mktemp("gym-cluster-data")
    prepare_offline([registry.get(COMP)], root)
    return root


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    """A head that plays nothing (no CPUs) and two workers; Ray's files in a folder of the test's own."""
    ray_dir = Path(tempfile.mkdtemp(prefix="podium-ray-"))
    made = None
    with pytest.MonkeyPatch.context() as env:
        env.setenv("RAY_AUTH_MODE", "disabled")
        env.setenv("RAY_TMPDIR", str(ray_dir))
        env.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])))
        env.setenv("PODIUM_NODE_CACHE", str(tmp_path_factory.mktemp("gym-node-cache")))
        env.setenv("OMP_NUM_THREADS", "1")
        try:
            made = ray.cluster_utils.Cluster(
                initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False}
            )
            made.workers = [made.add_node(num_cpus=2), made.add_node(num_cpus=2)]
            made.wait_for_nodes()
            yield made
        finally:
            if made is not None:
                made.shutdown()
            shutil.rmtree(ray_dir, ignore_errors=True)


def _rollout(
    cluster, model: ScriptedLLM, runs: Path, data: Path, *args: str, key: bool = True, **popen: Any
) -> subprocess.Popen:
    """The driver, with a key for the model in its environment (``key=False``: none, which a server on the loopback
    does not need)."""
    command = [sys.executable, "-m", "podium", "rollout", "--model", "policy", "--base-url", model.base_url,
               "--competitions", COMP, "--runs-dir", str(runs), "--run-group", "g", "--data-dir", str(data),
               "--time-limit", "2m", "--max-steps", "5", "--cpus", "1", "--cluster", f"ray:{cluster.address}", *args]  # fmt: skip
    env = {**os.environ, "OPENAI_API_KEY": "sk-scripted-not-a-key-000000", "PODIUM_PROGRESS_SECONDS": "0"}
    if not key:
        del env["OPENAI_API_KEY"]
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **popen)


def _records(runs: Path) -> dict[int, dict]:
    return {int(p.parent.name): json.loads(p.read_text()) for p in (runs / "g" / COMP).glob("*/record.json")}


def _podium(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "podium", *args], capture_output=True, text=True, timeout=300)


def test_episodes_land_graded_here_with_the_nodes_named(cluster, data_dir: Path, tmp_path: Path) -> None:
    from podium.gym.rewards import reward_of

    runs = tmp_path / "runs"
    with ScriptedLLM([_policy(0)] * 8) as model:  # on the loopback: no key needed, none sent to the nodes
        driver = _rollout(cluster, model, runs, data_dir, "--episodes", "2", key=False)
        out, _ = driver.communicate(timeout=600)
    assert driver.returncode == 0, out
    assert "2 episode(s) played" in out and "2 with a valid submission" in out, out
    records = _records(runs)
    assert sorted(records) == [0, 1], out
    workers = {node.node_id[:8] for node in cluster.workers}
    for seed, record in records.items():
        assert record["status"] == "finished" and record["node"].split(":")[-1] in workers
        assert record["cluster"]["attempts"] == [record["node"]] and not record["cluster"]["retried"]
        gym = record["gym"]
        grade = GradeReport.from_dict(record["grade"])  # graded here: the node never had the answers
        assert grade.valid_submission and grade.submission_path == str(
            runs / "g" / COMP / str(seed) / "submission" / "submission.csv"
        )
        assert gym["reward"] == pytest.approx(reward_of("score", grade, 0.0)) and gym["terminated"] is True
        assert gym["steps"] == 2 and gym["model"] == "policy" and record["llm"]["calls"] == 2
        steps = (runs / "g" / COMP / str(seed) / "gym_steps.jsonl").read_text().splitlines()
        assert json.loads(steps[-1])["reward"] == gym["reward"]  # the node's line, given the driver's reward
        assert (runs / "g" / COMP / str(seed) / "llm_transcript.jsonl").is_file()
    graded = _podium("grade-sample", str(runs / "g" / COMP / "0" / "submission" / "submission.csv"), COMP,
                     "--data-dir", str(data_dir))  # fmt: skip
    assert records[0]["grade"]["score"] == pytest.approx(json.loads(graded.stdout)["score"]), graded.stderr
    assert json.loads((runs / "g" / "group.json").read_text())["competitions"] == [COMP]
    report = _podium("report", str(runs / "g"))  # no --pad-missing: the group says what it was asked
    assert report.returncode == 0 and COMP in report.stdout, report.stderr
    exported = _podium("trajectories", "export", str(runs), "--out", str(tmp_path / "t.jsonl"))
    assert exported.returncode == 0, exported.stderr
    rows = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    offered = [{t["function"]["name"] for t in json.loads(row["tools_json"])} for row in rows]  # what the node gave
    assert offered == [{"bash", "write_file", "submit"}] * 2 and len({row["id"] for row in rows}) == 2
    with ScriptedLLM([]) as model:  # the same command again: both landed, nothing is played twice
        again = _rollout(cluster, model, runs, data_dir, "--episodes", "2")
        out, _ = again.communicate(timeout=300)
    assert again.returncode == 0 and "2 of 2 run(s) already finished; running 0" in out, out


def _wait_for(predicate, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


def test_a_node_removed_mid_episode_is_retried_on_another(cluster, data_dir: Path, tmp_path: Path) -> None:
    """The episode asks for a resource only the doomed node has; once it is going there, that node is removed and
    another with the resource joins: Ray runs the task again there, and the record names both."""
    doomed = cluster.add_node(num_cpus=1, resources={"slot": 1})
    cluster.wait_for_nodes()
    runs = tmp_path / "runs"
    with ScriptedLLM([_policy(6)] * 8) as model:
        driver = _rollout(cluster, model, runs, data_dir, "--episodes", "1", "--ray-resource", "slot")
        _wait_for(lambda: any(r["body"]["messages"][-1].get("role") == "user" for r in model.requests))
        time.sleep(1.0)  # the first step (a 6 s sleep in the sandbox) is going on the doomed node
        cluster.remove_node(doomed)
        rescuer = cluster.add_node(num_cpus=1, resources={"slot": 1})
        out, _ = driver.communicate(timeout=600)
    assert driver.returncode == 0, out
    record = _records(runs)[0]
    first, again = record["cluster"]["attempts"]
    assert first.endswith(doomed.node_id[:8]) and again.endswith(rescuer.node_id[:8]) and record["cluster"]["retried"]
    assert record["status"] == "finished" and record["grade"]["valid_submission"] and record["gym"]["steps"] == 2
    assert not list((runs / "g" / COMP).glob(".*.tmp-*")), "no staging folder is left"
    cluster.remove_node(rescuer)


def test_an_episode_whose_second_node_is_lost_too_lands_as_a_harness_error(cluster, data_dir: Path, tmp_path: Path):
    """Two losses: the episode lands as podium's failure (no reward, a rerun plays it again), as a run does."""
    runs = tmp_path / "runs"

    def firsts(model: ScriptedLLM) -> int:  # the episodes' first model calls so far (one per attempt)
        return sum(1 for r in model.requests if r["body"]["messages"][-1].get("role") == "user")

    with ScriptedLLM([_policy(20)] * 8) as model:
        doomed = cluster.add_node(num_cpus=1, resources={"slot": 1})
        driver = _rollout(cluster, model, runs, data_dir, "--episodes", "1", "--ray-resource", "slot")
        for attempt in (1, 2):
            _wait_for(lambda n=attempt: firsts(model) >= n)
            time.sleep(1.0)
            cluster.remove_node(doomed)
            if attempt == 1:
                doomed = cluster.add_node(num_cpus=1, resources={"slot": 1})
        out, _ = driver.communicate(timeout=600)
    assert driver.returncode == 1 and "harness error" in out and "the cluster lost the run" in out, out
    record = _records(runs)[0]
    assert record["status"] == "harness_error" and record["gym"]["reward"] is None and record.get("grade") is None
    assert record["gym"]["model"] == "policy" and record["gym"]["steps"] == 0


def _sleeping(seconds: int) -> list[int]:
    """The pids of `sleep SECONDS` processes on this machine (the policy's, on any node)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "cmdline").read_bytes().split(b"\0")[:2] == [b"sleep", str(seconds).encode()]:
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


#: The policy's sleep, a number tests/test_cluster.py's Ctrl-C test (sleep 97) does not use: each counts its own
#: processes machine-wide, so the two files never count each other's even when run side by side.
SLEEP = 89


def test_ctrl_c_cancels_the_episodes_and_leaves_no_process(cluster, data_dir: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    with ScriptedLLM([_policy(SLEEP)] * 8) as model:
        driver = _rollout(cluster, model, runs, data_dir, "--episodes", "2",
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # fmt: skip
        _wait_for(lambda: len(_sleeping(SLEEP)) >= 2)  # both episodes are in their first step, on the nodes
        driver.send_signal(signal.SIGINT)
        out, _ = driver.communicate(timeout=120)
    assert driver.returncode == 130 and "cancelling 2 run(s)" in out, out
    _wait_for(lambda: not _sleeping(SLEEP), timeout=30)
    assert not _records(runs) and not list((runs / "g" / COMP).glob(".*.tmp-*"))


def test_cluster_flags_refused_in_one_line(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = probe.getsockname()[1]
    for args, said in (
        (["--cluster", f"ray:127.0.0.1:{dead}"], "no Ray cluster answers"),
        (["--ray-resource", "x"], "go with --cluster"),
    ):
        done = _podium("rollout", "--model", "m", "--base-url", "http://127.0.0.1:9", "--competitions", COMP,
                       "--runs-dir", str(tmp_path / "runs"), *args)  # fmt: skip
        assert done.returncode == 2 and said in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not (tmp_path / "runs").exists()
