"""`podium run` end to end under bwrap (and docker where marked): agents, validation, grading outside,
resume after kill -9."""

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

import pytest

from podium import competition as registry
from podium import owner
from podium.data.prepare import prepare_competition
from podium.fixtures import make_raw
from podium.store import RunStore

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap is not installed (apt-get install bubblewrap)"
)

COMPS = ("spaceship-titanic", "tweet-sentiment-extraction")


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("run-data")
    for cid in COMPS:
        comp = registry.get(cid)
        prepare_competition(comp, root / "data", source=make_raw(comp, root / "raw" / cid))
    return root / "data"


def _agent(folder: Path, script: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "agent.yaml").write_text("name: " + folder.name + "\ncommand: [python3, /home/agent/main.py]\n")
    (folder / "main.py").write_text(script)
    return folder


def podium(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "podium", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "OMP_NUM_THREADS": "1", **(env or {})},
    )


@pytest.fixture(params=["bwrap", "docker"])
def sandbox(request: pytest.FixtureRequest) -> str:
    """The isolating sandboxes in turn (docker: the engine DOCKER_HOST names, see conftest.py)."""
    if request.param == "docker":
        request.getfixturevalue("docker_sandbox")
    return str(request.param)


def _records(runs: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(runs.glob("*/*/*/record.json"))]


def test_baseline_and_dummy_runs_are_graded_and_reported(tmp_path: Path, data_dir: Path) -> None:
    for agent in ("dummy", "baseline"):
        result = podium(
            "run", "--agent", agent, "--competitions", ",".join(COMPS), "--time-limit", "5m",
            "--data-dir", str(data_dir), "--runs-dir", str(tmp_path / "runs"), "--run-group", agent,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr[-3000:]
        assert "made submission" in result.stdout and "| " + agent + " |" in result.stdout
    records = _records(tmp_path / "runs")
    assert len(records) == 4
    for record in records:
        grade = record["grade"]
        assert grade["submission_exists"] and grade["valid_submission"], grade
        assert record["competition_version"] == registry.get(record["competition_id"]).version
        assert record["podium_version"] and record["limits"]["time_limit_s"] == 300
    baseline = {r["competition_id"]: r for r in records if r["agent"] == "baseline"}
    dummy = {r["competition_id"]: r for r in records if r["agent"] == "dummy"}
    assert (
        "holdout score"
        in (tmp_path / "runs" / "baseline" / "spaceship-titanic" / "0" / "logs" / "agent.stdout.log").read_text()
    )
    assert (
        baseline["spaceship-titanic"]["grade"]["score"] is not None
        and dummy["spaceship-titanic"]["grade"]["score"] is not None
    )
    assert (tmp_path / "runs" / "baseline" / "report.md").is_file()


def test_agent_sees_task_files_and_can_validate(tmp_path: Path, data_dir: Path, sandbox: str) -> None:
    agent = _agent(
        tmp_path / "validator",
        "import os, shutil, subprocess, json\n"
        "seen = {p: os.path.exists(p) for p in ['/home/data/description.md', '/home/instructions.md', '/home/validate_submission.sh']}\n"
        "env = {k: os.environ.get(k) for k in ['COMPETITION_ID', 'TIME_LIMIT_SECS', 'HARDWARE']}\n"
        "bad = subprocess.run(['/home/validate_submission.sh', '/home/data/train.csv'], capture_output=True, text=True)\n"
        "import time; time.sleep(1.2)\n"
        "shutil.copyfile('/home/data/sample_submission.csv', '/home/submission/submission.csv')\n"
        "good = subprocess.run(['/home/validate_submission.sh'], capture_output=True, text=True)\n"
        "json.dump({'seen': seen, 'env': env, 'bad': bad.returncode, 'good': good.returncode, 'out': good.stdout}, open('/home/logs/probe.json', 'w'))\n",
    )
    result = podium(
        "run",
        "--agent",
        str(agent),
        "--competitions",
        COMPS[0],
        "--time-limit",
        "2m",
        "--data-dir",
        str(data_dir),
        "--runs-dir",
        str(tmp_path / "runs"),
        "--sandbox",
        sandbox,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    (record,) = _records(tmp_path / "runs")
    assert record["sandbox"] == sandbox
    probe = json.loads((tmp_path / "runs" / "default" / COMPS[0] / "0" / "logs" / "probe.json").read_text())
    assert all(probe["seen"].values()), probe
    assert probe["env"]["COMPETITION_ID"] == COMPS[0] and probe["env"]["TIME_LIMIT_SECS"] == "120"
    assert probe["bad"] == 1 and probe["good"] == 0, probe
    assert "score" not in probe["out"].lower()
    verdicts = [c.get("verdict") for c in record["validation_calls"]]
    assert verdicts.count("invalid") == 1 and verdicts.count("valid") == 1, record["validation_calls"]
    assert record["grade"]["valid_submission"]


def test_escape_attempts_fail_and_the_run_is_still_graded(tmp_path: Path, data_dir: Path, sandbox: str) -> None:
    answers = data_dir / COMPS[0] / "prepared" / "private" / registry.get(COMPS[0]).answers
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    agent = _agent(
        tmp_path / "escaper",
        "import json, os, shutil, socket\n"
        "tries = {}\n"
        f"for path in [{str(answers)!r}, '/proc/1/root' + {str(answers)!r}, '/work', '/root/.cache']:\n"
        "    try:\n"
        "        tries[path] = 'read' if os.path.isfile(path) and open(path).read(1) is not None else ('listed' if os.listdir(path) else 'empty')\n"
        "    except Exception as e:\n"
        "        tries[path] = type(e).__name__\n"
        "tries['env'] = os.environ.get('PODIUM_TEST_SECRET')\n"
        "try:\n"
        f"    socket.create_connection(('127.0.0.1', {port}), timeout=2); tries['net'] = 'connected'\n"
        "except Exception as e:\n"
        "    tries['net'] = type(e).__name__\n"
        "try:\n"
        "    open('/home/data/planted.txt', 'w').write('x'); tries['write_data'] = 'wrote'\n"
        "except Exception as e:\n"
        "    tries['write_data'] = type(e).__name__\n"
        "json.dump(tries, open('/home/logs/tries.json', 'w'))\n"
        "shutil.copyfile('/home/data/sample_submission.csv', '/home/submission/submission.csv')\n",
    )
    try:
        result = podium(
            "run", "--agent", str(agent), "--competitions", COMPS[0], "--time-limit", "2m", "--data-dir", str(data_dir),
            "--runs-dir", str(tmp_path / "runs"), "--sandbox", sandbox, env={"PODIUM_TEST_SECRET": "hunter2"},
        )  # fmt: skip
    finally:
        listener.close()
    assert result.returncode == 0, result.stderr[-3000:]
    tries = json.loads((tmp_path / "runs" / "default" / COMPS[0] / "0" / "logs" / "tries.json").read_text())
    assert tries.pop("env") is None
    assert tries.pop("net") != "connected"
    assert (
        tries.pop("write_data") != "wrote"
        and not (data_dir / COMPS[0] / "prepared" / "public" / "planted.txt").exists()
    )
    assert all(v not in ("read", "listed") for v in tries.values()), tries
    (record,) = _records(tmp_path / "runs")
    assert record["grade"]["valid_submission"]


def test_time_limit_kills_the_agent_and_the_run_is_recorded(tmp_path: Path, data_dir: Path) -> None:
    """Also: while a run goes on, a progress line names it and its elapsed time."""
    agent = _agent(tmp_path / "sleeper", "import time\ntime.sleep(120)\n")
    started = time.monotonic()
    result = podium(
        "run",
        "--agent",
        str(agent),
        "--competitions",
        COMPS[0],
        "--time-limit",
        "3s",
        "--data-dir",
        str(data_dir),
        "--runs-dir",
        str(tmp_path / "runs"),
        env={"PODIUM_PROGRESS_SECONDS": "1"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert time.monotonic() - started < 90
    (record,) = _records(tmp_path / "runs")
    assert record["agent_result"]["killed_for"] == "time"
    assert f"[0/1 done] running: {COMPS[0]}@" in result.stderr and "seed 0 (0m0" in result.stderr
    assert not record["grade"]["submission_exists"] and not record["grade"]["valid_submission"]


def _leftovers(token: str) -> list[Path]:
    """Per-run resources on this host that name ``token`` as their owner: temporary folders and cgroups."""
    found = [p for p in Path(tempfile.gettempdir()).glob(f"podium-*-{token}-*")]
    return found + [p for p in Path("/sys/fs/cgroup").glob(f"*/podium/{token}-*")]


def test_kill_9_of_podium_then_rerun_loses_nothing_and_counts_nothing_twice(
    tmp_path: Path, data_dir: Path, sandbox: str
) -> None:
    """Also: the killed podium's temporary folders, cgroups and staging folders carry its owner token, and the
    rerun removes them at once (before: cgroups stayed for 10 minutes and /tmp folders for ever)."""
    agent = _agent(
        tmp_path / "slow",
        "import shutil, time\nshutil.copyfile('/home/data/sample_submission.csv', '/home/submission/submission.csv')\ntime.sleep(3)\n",
    )
    runs = tmp_path / "runs"
    args = ["run", "--agent", str(agent), "--competitions", ",".join(COMPS), "--seeds", "2", "--time-limit", "2m",
            "--data-dir", str(data_dir), "--runs-dir", str(runs), "--sandbox", sandbox]  # fmt: skip
    child = subprocess.Popen(
        [sys.executable, "-m", "podium", *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    token = owner.token_of(child.pid)
    assert token is not None
    with_cgroups = Path("/sys/fs/cgroup/memory/cgroup.procs").is_file() and sandbox == "bwrap"

    def run_going() -> bool:  # a run in flight: its socket folder in /tmp and (bwrap, as root) its cgroups
        left = _leftovers(token)
        groups = [p for p in left if p.parent.name == "podium"]
        return any(p.name.startswith("podium-v-") for p in left) and (bool(groups) or not with_cgroups)

    deadline = time.monotonic() + 120
    while not (list(runs.glob("*/*/*/record.json")) and run_going()) and time.monotonic() < deadline:
        time.sleep(0.2)
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    assert run_going(), f"killed while a run was going: its folders and groups name their owner {token}"
    assert list(runs.glob(f"*/*/.*.tmp-{token}-*")), "the killed run's staging folder names its owner"
    first = {(r["competition_id"], r["seed"]): r["started_at"] for r in _records(runs)}
    assert 1 <= len(first) < 4
    result = podium(*args)
    assert result.returncode == 0, result.stderr[-3000:]
    records = _records(runs)
    assert len(records) == 4 and len({(r["competition_id"], r["seed"]) for r in records}) == 4
    for record in records:  # finished runs were not run again
        key = (record["competition_id"], record["seed"])
        if key in first:
            assert record["started_at"] == first[key]
    assert len(RunStore(runs).rows("default")) == 4
    assert not list(runs.glob("*/*/.*.tmp-*")), "the killed run's staging folders are cleaned up"
    assert not _leftovers(token), "the killed podium's temporary folders and cgroups are removed by the rerun"
    assert not (runs / ".owners" / f"{token}.lock").exists()
    if sandbox == "docker":  # the killed podium's container was removed by the rerun
        import docker

        from podium.sandbox._docker import HARNESS_LABEL

        labels = [c.labels[HARNESS_LABEL] for c in docker.from_env().containers.list(all=True)
                  if HARNESS_LABEL in c.labels]  # fmt: skip
        assert not [label for label in labels if label.endswith(f":{child.pid}")]


def test_a_run_group_belongs_to_one_agent(tmp_path: Path, data_dir: Path) -> None:
    common = [
        "--competitions",
        COMPS[0],
        "--time-limit",
        "2m",
        "--data-dir",
        str(data_dir),
        "--runs-dir",
        str(tmp_path / "runs"),
    ]
    assert podium("run", "--agent", "dummy", *common).returncode == 0
    clash = podium("run", "--agent", "baseline", *common)
    assert clash.returncode == 2 and "another --run-group" in clash.stderr
    (record,) = _records(tmp_path / "runs")
    assert record["agent"] == "dummy"


def test_an_agent_image_built_locally_runs_under_docker(
    tmp_path: Path, data_dir: Path, docker_sandbox: object, busybox_image: str
) -> None:
    """An MLE-bench-style agent: its own image (FROM a local base, never pulled), its code inside it."""
    agent = tmp_path / "imaged"
    agent.mkdir()
    (agent / "image").mkdir()
    (agent / "image" / "start.sh").write_text(
        "#!/bin/sh\nls /home > /home/logs/home.txt\ncp /home/data/sample_submission.csv /home/submission/submission.csv\n"
    )
    (agent / "image" / "Dockerfile").write_text(
        f'FROM {busybox_image}\nCOPY start.sh /home/agent/start.sh\nRUN ["/bin/chmod", "755", "/home/agent/start.sh"]\n'
    )
    (agent / "agent.yaml").write_text("name: imaged\nbuild: image\ncommand: [/home/agent/start.sh]\n")
    common = ["--agent", str(agent), "--competitions", COMPS[0], "--time-limit", "2m", "--data-dir", str(data_dir)]
    wrong = podium("run", *common, "--runs-dir", str(tmp_path / "runs"))
    assert wrong.returncode == 2 and "needs --sandbox docker" in wrong.stderr
    result = podium("run", *common, "--runs-dir", str(tmp_path / "runs"), "--sandbox", "docker")
    assert result.returncode == 0, result.stderr[-3000:]
    (record,) = _records(tmp_path / "runs")
    assert record["image"].startswith("podium-agent-imaged:") and record["grade"]["valid_submission"]
    listed = (tmp_path / "runs" / "default" / COMPS[0] / "0" / "logs" / "home.txt").read_text().split()
    assert "agent" in listed and "data" in listed and "validate.sock" in listed


def test_builtin_agents_also_run_under_the_local_sandbox(tmp_path: Path, data_dir: Path) -> None:
    """No isolation (debugging only): the inside paths in the command are rewritten to the run's root."""
    result = podium(
        "run", "--agent", "dummy", "--competitions", COMPS[0], "--sandbox", "local", "--data-dir", str(data_dir),
        "--runs-dir", str(tmp_path / "runs"),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert "NO ISOLATION" in result.stderr
    (record,) = _records(tmp_path / "runs")
    assert record["grade"]["valid_submission"] and record["agent_result"]["exit_code"] == 0


@pytest.fixture(scope="module")
def practice_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One practice competition prepared offline (the data ships with a package)."""
    pytest.importorskip("sklearn", reason="the practice extra (pip install 'podium[practice]') ships the data")
    root = tmp_path_factory.mktemp("practice-data")
    prepare_competition(registry.get("practice-wine"), root)
    return root


def test_podium_run_from_a_venv_under_home_or_tmp(tmp_path: Path, practice_data: Path, sandbox: str) -> None:
    """The first run from any install: podium in a venv under /home/<user> (bwrap) or /tmp (docker), an
    agent that needs numpy from that venv, end to end through `podium run`."""
    from test_sandbox import venv_under

    agent = _agent(
        tmp_path / "numpy-agent",
        "import shutil, numpy\n"
        "shutil.copyfile('/home/data/sample_submission.csv', '/home/submission/submission.csv')\n"
        "print('numpy', numpy.__version__)\n",
    )
    with venv_under("/home" if sandbox == "bwrap" else "/tmp") as venv:
        result = subprocess.run(
            [str(venv / "bin" / "python"), "-m", "podium", "run", "--agent", str(agent), "--competitions",
             "practice-wine", "--time-limit", "2m", "--data-dir", str(practice_data), "--runs-dir",
             str(tmp_path / "runs"), "--sandbox", sandbox],
            capture_output=True, text=True, timeout=600,
            env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")},
        )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    (record,) = _records(tmp_path / "runs")
    logs = tmp_path / "runs" / "default" / "practice-wine" / "0" / "logs"
    assert record["agent_result"]["exit_code"] == 0, (logs / "agent.stderr.log").read_text()
    assert record["grade"]["valid_submission"] and "numpy" in (logs / "agent.stdout.log").read_text()
