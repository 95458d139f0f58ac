"""`podium run --cluster ray` on a real Ray cluster on this machine: a head and worker nodes as separate
processes (``ray.cluster_utils.Cluster``), each with its own CPUs, logical GPUs and custom resources,
and a Ray Client server on the head (the ``ray://`` form).

The driver is `podium run` in a subprocess, as a user runs it, so it can be killed with -9. Ray's
session folders go to a folder of the test's own, removed afterwards: nothing is left in /tmp/ray.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from podium.agents import BUILTIN
from podium.serve import RunsIndex, create_app
from podium.testing import Reply, ScriptedLLM, ToolCall

ROOT = Path(__file__).resolve().parents[1]
COMPETITIONS = "practice-wine,practice-breast-cancer"

if os.environ.get("PODIUM_REQUIRE_RAY") != "1":  # CI installs ray (the dev extra) and requires these tests
    pytest.importorskip("ray")
import ray.cluster_utils  # noqa: E402

pytestmark = pytest.mark.cluster

# An agent that takes a few seconds, so that a node can be removed or the driver killed mid-run.
SLOW_AGENT = """name: slow
command: [sh, -c, "sleep 6; cp /home/data/sample_submission.csv /home/submission/submission.csv"]
resources: {cpus: 1, memory: 256M}
"""


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two practice competitions, prepared offline."""
    from podium import registry
    from podium.data.prepare import prepare_offline

    root = tmp_path_factory.mktemp("cluster-data")
    prepare_offline([registry.get(cid) for cid in COMPETITIONS.split(",")], root)
    return root


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, aide_env_dir: Path):
    """A head that runs no run (no CPUs) with a Ray Client server, and two workers; ``gpu`` declares one
    logical GPU. Ray's files (sessions, sockets, the address file) go to a short folder of the test's own
    (``RAY_TMPDIR``, which the drivers inherit too), removed afterwards."""
    ray_dir = Path(tempfile.mkdtemp(prefix="podium-ray-"))
    made = None
    with pytest.MonkeyPatch.context() as env:  # the nodes' processes inherit these; the rest of the session does not
        env.setenv("RAY_AUTH_MODE", "disabled")
        env.setenv("RAY_TMPDIR", str(ray_dir))
        env.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])))
        env.setenv("PODIUM_NODE_CACHE", str(tmp_path_factory.mktemp("node-cache")))
        env.setenv("PODIUM_ENV_DIR", str(aide_env_dir))  # the environments the driver builds, found on the nodes
        try:
            client_port = _free_port()
            made = ray.cluster_utils.Cluster(
                initialize_head=True,
                head_node_args={"num_cpus": 0, "include_dashboard": False, "ray_client_server_port": client_port},
            )
            made.client_port = client_port
            made.workers = {
                "plain": made.add_node(num_cpus=2, resources={"pool": 2}),
                "gpu": made.add_node(num_cpus=2, num_gpus=1, resources={"pool": 2, "accel": 1}),
            }
            made.wait_for_nodes()
            session = made.head_node.session_name
            yield made
        finally:
            if made is not None:
                made.shutdown()
            shutil.rmtree(ray_dir, ignore_errors=True)
    default = Path(tempfile.gettempdir()) / "ray" / session
    assert not default.exists(), f"the Ray tests left {default} behind (issue 29 §10)"


def _podium(cluster, *args: str, runs: Path, data: Path, **popen) -> subprocess.Popen:
    command = [sys.executable, "-m", "podium", "run", "--competitions", COMPETITIONS, "--time-limit", "2m"]
    command += ["--data-dir", str(data), "--runs-dir", str(runs), *args]
    if cluster is not None:
        command += ["--cluster", f"ray:{cluster.address}"]
    env = {**os.environ, "PODIUM_PROGRESS_SECONDS": "0"}
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **popen)


def _run(cluster, *args: str, runs: Path, data: Path) -> str:
    process = _podium(cluster, *args, runs=runs, data=data)
    out, _ = process.communicate(timeout=300)
    assert process.returncode == 0, out
    return out


def _rows(runs: Path, group: str = "default") -> list[tuple]:
    with sqlite3.connect(runs / "podium.db") as db:
        return db.execute(
            "SELECT competition_id, seed, status, score, valid_submission, any_medal, above_median FROM runs "
            "WHERE run_group=? ORDER BY competition_id, seed",
            (group,),
        ).fetchall()


def _records(runs: Path, group: str = "default") -> dict[tuple[str, int], dict]:
    return {
        (path.parent.parent.name, int(path.parent.name)): json.loads(path.read_text())
        for path in (runs / group).glob("*/*/record.json")
    }


def _per_run_table(runs: Path, group: str = "default") -> str:
    text = (runs / group / "report.md").read_text()
    return text[text.index("## Per run") :]


def _slow_agent(tmp_path: Path, seconds: int = 6) -> Path:
    folder = tmp_path / "slow-agent"
    folder.mkdir()
    (folder / "agent.yaml").write_text(SLOW_AGENT.replace("sleep 6", f"sleep {seconds}"))
    return folder


@pytest.mark.parametrize(("agent", "seeds"), [("dummy", 2), ("baseline", 1)])
def test_same_records_and_report_as_local(cluster, data_dir: Path, tmp_path: Path, agent: str, seeds: int) -> None:
    local, remote = tmp_path / "local", tmp_path / "cluster"
    _run(None, "--agent", agent, "--seeds", str(seeds), "--workers", "2", runs=local, data=data_dir)
    out = _run(cluster, "--agent", agent, "--seeds", str(seeds), runs=remote, data=data_dir)
    runs = 2 * seeds
    assert f"running {runs}" in out
    assert _rows(remote) == _rows(local) and len(_rows(remote)) == runs
    assert _per_run_table(remote) == _per_run_table(local)
    records = _records(remote)
    workers = {f"{node.node_id[:8]}" for node in cluster.workers.values()}
    for (cid, seed), record in records.items():
        here = _records(local)[(cid, seed)]
        assert record["node"].split(":")[-1] in workers  # ran on a worker, never on the head (no CPUs)
        assert record["cluster"]["attempts"] == [record["node"]] and not record["cluster"]["retried"]
        assert record["grade"]["submission_path"] == str(
            remote / "default" / cid / str(seed) / "submission" / "submission.csv"
        )
        for key in ("status", "agent_hash", "limits", "description", "agent_stderr_tail"):
            assert record[key] == here[key], key
        assert "node" not in here and "cluster" not in here  # a local record is as it always was
    if agent == "dummy":  # the same command again: everything is done, nothing runs twice
        again = _run(cluster, "--agent", agent, "--seeds", str(seeds), runs=remote, data=data_dir)
        assert f"{runs} of {runs} run(s) already finished; running 0" in again


def test_gpu_runs_land_on_the_node_that_declares_gpus(cluster, data_dir: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    process = _podium(cluster, "--agent", "dummy", "--gpus", "1", "--sandbox", "local", runs=runs, data=data_dir)
    out, _ = process.communicate(timeout=300)
    gpu_node = cluster.workers["gpu"].node_id[:8]
    records = _records(runs)
    assert len(records) == 2, out
    for record in records.values():
        assert record["node"].endswith(gpu_node), out
        assert record["limits"]["gpus"] == 1 and record["limits"]["gpu_ids"] == [0]


def test_a_custom_resource_pins_runs_and_an_impossible_one_is_refused(cluster, data_dir: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    _run(cluster, "--agent", "dummy", "--ray-resource", "accel", runs=runs, data=data_dir)
    gpu_node = cluster.workers["gpu"].node_id[:8]
    assert all(r["node"].endswith(gpu_node) for r in _records(runs).values())
    process = _podium(cluster, "--agent", "dummy", "--ray-resource", "tpu=4", runs=tmp_path / "other", data=data_dir)
    out, _ = process.communicate(timeout=120)
    assert process.returncode == 2 and "no node of the Ray cluster has" in out and "tpu=4" in out


def _wait_for(predicate, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


def test_driver_killed_mid_batch_then_rerun_loses_and_doubles_nothing(cluster, data_dir: Path, tmp_path: Path) -> None:
    runs, agent = tmp_path / "runs", _slow_agent(tmp_path)
    args = ("--agent", str(agent), "--seeds", "3")
    driver = _podium(cluster, *args, runs=runs, data=data_dir, start_new_session=True)
    _wait_for(lambda: len(_records(runs)) >= 1)  # one run landed, others still going on the nodes
    landed = _records(runs)
    os.kill(driver.pid, signal.SIGKILL)
    driver.communicate(timeout=60)
    assert len(landed) < 6
    out = _run(cluster, *args, runs=runs, data=data_dir)
    assert f"{len(landed)} of 6 run(s) already finished; running {6 - len(landed)}" in out
    records = _records(runs)
    assert len(records) == 6 and len(_rows(runs)) == 6
    for key, record in landed.items():  # landed before the kill: kept, not run again
        assert records[key]["started_at"] == record["started_at"]
    assert not list(runs.glob("default/*/.*.tmp-*")), "no staging folder is left"


def test_a_node_removed_mid_batch_is_retried_once_elsewhere(cluster, data_dir: Path, tmp_path: Path) -> None:
    doomed = cluster.add_node(num_cpus=2, resources={"pool": 2})
    cluster.wait_for_nodes()
    runs, agent = tmp_path / "runs", _slow_agent(tmp_path)
    driver = _podium(cluster, "--agent", str(agent), "--seeds", "2", runs=runs, data=data_dir)

    def on_doomed() -> bool:
        return any(doomed.node_id[:8] in p.read_text() for p in runs.glob("default/*/.*.tmp-*/node.txt"))

    _wait_for(on_doomed)
    live = {r.node for r in RunsIndex(runs).live()}  # what `podium serve` lists: the node of each run going
    assert any(node and node.endswith(doomed.node_id[:8]) for node in live), live
    cluster.remove_node(doomed)
    out, _ = driver.communicate(timeout=300)
    assert driver.returncode == 0, out
    records = _records(runs)
    assert len(records) == 4 and len(_rows(runs)) == 4
    retried = [r for r in records.values() if r["cluster"]["retried"]]
    assert retried, out
    for record in retried:
        first, again = record["cluster"]["attempts"]
        assert first.endswith(doomed.node_id[:8]) and record["node"] == again != first
        assert record["status"] == "finished" and record["grade"]["valid_submission"]
    with TestClient(create_app(runs)) as client:  # the run's page names its node and the retry
        record = retried[0]
        page = client.get(f"/run/default/{record['competition_id']}/{record['seed']}").text
        assert f"{record['node']} (retried; took it: {first}, {again})" in page


def _ctrl_c() -> None:
    """SIGINT handled as a terminal gives it, even under a runner that started the tests in the background."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _sleeping(seconds: int) -> list[int]:
    """The pids of `sleep SECONDS` processes on this machine (the slow agent's, on any node)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "cmdline").read_bytes().split(b"\0")[:2] == [b"sleep", str(seconds).encode()]:
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_ctrl_c_cancels_the_runs_and_leaves_no_process_on_any_node(cluster, data_dir: Path, tmp_path: Path) -> None:
    runs, agent = tmp_path / "runs", _slow_agent(tmp_path, seconds=97)
    driver = _podium(cluster, "--agent", str(agent), "--seeds", "2", runs=runs, data=data_dir, preexec_fn=_ctrl_c)
    _wait_for(lambda: len(_sleeping(97)) >= 2)  # agents are running on the nodes
    driver.send_signal(signal.SIGINT)
    out, _ = driver.communicate(timeout=120)
    assert driver.returncode == 130, out
    assert "cancelling" in out
    _wait_for(lambda: not _sleeping(97), timeout=30)
    assert not list(runs.glob("default/*/.*.tmp-*")) and not _records(runs)


def test_a_users_own_competition_is_shipped_to_the_nodes_with_its_declaration(cluster, tmp_path: Path) -> None:
    """Issue 42 §1: a competition of the user's own folder (--competitions-dir), which no node has, runs on them: its
    declaration travels with the batch, checked by its digest on the node, and the record names it."""
    from podium import declarations, registry
    from podium.data.prepare import prepare_offline

    mine = tmp_path / "mine"
    folder = shutil.copytree(registry.COMPETITIONS_DIR / "practice-wine", mine / "my-wine",
                             ignore=shutil.ignore_patterns("checksums.json", "__pycache__"))  # fmt: skip
    text = (folder / "competition.yaml").read_text()
    (folder / "competition.yaml").write_text(text.replace("id: practice-wine\n", "id: my-wine\n", 1))
    data, runs = tmp_path / "data", tmp_path / "runs"
    with pytest.MonkeyPatch.context() as env:
        env.setenv(declarations.PATH_VARIABLE, str(mine))
        prepare_offline([registry.get("my-wine")], data)
    command = [sys.executable, "-m", "podium", "run", "--agent", "dummy", "--competitions", "my-wine", "--time-limit",
               "2m", "--data-dir", str(data), "--runs-dir", str(runs), "--competitions-dir", str(mine),
               "--cluster", f"ray:{cluster.address}"]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "PODIUM_PROGRESS_SECONDS": "0"})  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    record = _records(runs)[("my-wine", 0)]
    assert record["status"] == "finished" and record["grade"]["valid_submission"], record.get("error")
    assert record["node"] and record["declaration"] == {"sha256": declarations.digest(folder), "source": "user"}


def test_nodes_read_a_shared_data_dir_checked_against_the_checksums(cluster, data_dir: Path, tmp_path: Path) -> None:
    """--node-data-dir: nothing is shipped; each node checks the shared public folder and remembers it."""
    runs = tmp_path / "runs"
    _run(cluster, "--agent", "dummy", "--node-data-dir", str(data_dir), runs=runs, data=data_dir)
    records = _records(runs)
    assert len(records) == 2 and all(r["grade"]["valid_submission"] for r in records.values())
    verified = Path(os.environ["PODIUM_NODE_CACHE"]) / "verified"
    assert len(list(verified.iterdir())) >= 2  # one mark per competition (and node that ran it)


# -- what a run's folder may hold: AIDE's links, and an agent's sparse files, hard links and FIFOs ---------

AIDE_CODE = """\
import pandas as pd
sample = pd.read_csv("./input/sample_submission.csv")
print("Validation accuracy:", 0.7)
sample["Transported"] = False
sample.to_csv("./working/submission.csv", index=False)
"""


def _aide_answer(request: dict[str, Any]) -> Any:
    """AIDE's drafts and reviews, as the scripted model answers them."""
    if request["body"].get("tools"):
        return ToolCall("submit_review", {"is_bug": False, "summary": "ran", "metric": 0.7, "lower_is_better": False})
    return Reply("A baseline.\n```python\n" + AIDE_CODE + "```")


def test_aide_lands_every_run_with_its_links_to_the_data_kept_as_links(
    cluster, spaceship_data_dir: Path, aide_env_dir: Path, tmp_path: Path
) -> None:
    """Issue 28 §1: AIDE leaves code/aide/*/input/* -> /home/data/* (absolute links); the old tar filter refused
    them, every `--agent aide` run on a cluster was a harness error, and every rerun repeated it."""
    one_step = (BUILTIN / "aide" / "agent.yaml").read_text().replace('"2"}', '"1", STEP_LIMIT: "1"}')
    agent = shutil.copytree(BUILTIN / "aide", tmp_path / "aide")
    (agent / "agent.yaml").write_text(one_step)
    runs = tmp_path / "runs"
    command = [
        sys.executable,
        "-m",
        "podium",
        "run",
        "--agent",
        str(agent),
        "--competitions",
        "spaceship-titanic",
        "--seeds",
        "2",
        "--time-limit",
        "3m",
        "--memory",
        "3G",
        "--model",
        "scripted-1",
        "--data-dir",
        str(spaceship_data_dir),
        "--runs-dir",
        str(runs),
        "--cluster",
        f"ray:{cluster.address}",
    ]
    env = {**os.environ, "PODIUM_ENV_DIR": str(aide_env_dir), "OPENAI_API_KEY": "sk-test", "OMP_NUM_THREADS": "1"}
    with ScriptedLLM([_aide_answer] * 20) as model:
        result = subprocess.run([*command, "--base-url", model.base_url], capture_output=True, text=True, env=env,
                                timeout=900)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    records = _records(runs)
    assert sorted(records) == [("spaceship-titanic", 0), ("spaceship-titanic", 1)], result.stderr[-3000:]
    for (_, seed), record in records.items():
        assert record["status"] == "finished" and record["grade"]["valid_submission"], record.get("error")
        assert record["llm"]["models"] == {"aide-code": "scripted-1"} and "withheld" not in record["cluster"]
        links = [p for p in (runs / "default" / "spaceship-titanic" / str(seed) / "code").rglob("*") if p.is_symlink()]
        assert any(os.readlink(link).startswith("/home/data/") for link in links), links
    assert len(_rows(runs)) == 2


HOSTILE_AGENT = """name: hostile
command: [sh, -c, "cd /home/code && truncate -s 1T sparse && echo hi > a && ln a b && mkfifo pipe && \\
  ln -s /etc/passwd passwd && head -c 1600000 /dev/urandom > big && truncate -s 2500000 big && \\
  cp /home/data/sample_submission.csv /home/submission/submission.csv"]
resources: {cpus: 1, memory: 256M}
"""


def test_a_sparse_terabyte_and_hard_links_are_withheld_and_named_and_the_run_lands(
    cluster, data_dir: Path, tmp_path: Path
) -> None:
    """Issue 28 §1: `truncate -s 1T` passed --disk (no blocks) and made the node build a 1 TiB tar in memory."""
    agent = tmp_path / "hostile"
    agent.mkdir()
    (agent / "agent.yaml").write_text(HOSTILE_AGENT)
    runs = tmp_path / "runs"
    out = _run(cluster, "--agent", str(agent), "--disk", "2M", runs=runs, data=data_dir)
    records = _records(runs)
    assert len(records) == 2, out
    for (cid, seed), record in records.items():
        assert record["status"] == "finished" and record["grade"]["valid_submission"], out
        assert record["cluster"]["withheld"] == [
            "'code/a': a hard link (2 names for one file, which may lie outside the folder); not sent",
            "'code/b': a hard link (2 names for one file, which may lie outside the folder); not sent",
            f"'code/big': 2,500,000 bytes would take the folder's files past their cap of {2 << 20:,} bytes (the "
            "run's --disk, counted in apparent bytes); not sent",
            f"'code/sparse': a sparse file ({1 << 40:,} bytes apparent, 0 allocated); not sent",
        ]
        code = runs / "default" / cid / str(seed) / "code"  # the sandbox hand-back already dropped the FIFO
        assert sorted(os.listdir(code)) == ["passwd"] and os.readlink(code / "passwd") == "/etc/passwd"
    assert not list(runs.glob("default/*/.*.tmp-*")), "no staging folder is left"


def test_the_ray_client_form_runs_the_batch(cluster, data_dir: Path, tmp_path: Path) -> None:
    """Issue 29 §3: `--cluster ray://HOST:PORT` works after `pip install 'podium[cluster]'` (ray[client])."""
    process = _podium(None, "--agent", "dummy", "--cluster", f"ray://127.0.0.1:{cluster.client_port}",
                      runs=tmp_path / "runs", data=data_dir)  # fmt: skip
    out, _ = process.communicate(timeout=300)
    assert process.returncode == 0, out
    records = _records(tmp_path / "runs")
    assert len(records) == 2 and all(r["grade"]["valid_submission"] for r in records.values()), out
    assert {r["cluster"]["address"] for r in records.values()} == {f"ray://127.0.0.1:{cluster.client_port}"}
