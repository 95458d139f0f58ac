"""`podium run` end to end under bwrap (and docker where marked): agents, validation, grading outside,
resume after kill -9."""

from __future__ import annotations

import contextlib
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

from podium import owner, registry
from podium.agents import BUILTIN
from podium.data.prepare import prepare_competition
from podium.fixtures import make_raw
from podium.store import RunStore

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap is not installed (apt-get install bubblewrap)"
)

COMPS = ("spaceship-titanic", "tweet-sentiment-extraction")
TESTS = Path(__file__).resolve().parent


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
        assert Path(grade["submission_path"]).is_file() and ".tmp-" not in grade["submission_path"]
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


def test_the_baseline_models_small_images_and_leaves_its_code(tmp_path: Path) -> None:
    """practice-digits (8x8 PNGs): the baseline kept the sample submission there (0.075, below chance); now the
    images' pixels are its features, and /home/code holds the script it ran and what it chose (issue 19, section 5)."""
    pytest.importorskip("sklearn", reason="the practice extra (pip install 'podium[practice]') ships the data")
    competition = registry.get("practice-digits")
    prepare_competition(competition, tmp_path / "data")
    result = podium(
        "run", "--agent", "baseline", "--competitions", competition.id, "--time-limit", "10m",
        "--data-dir", str(tmp_path / "data"), "--runs-dir", str(tmp_path / "runs"),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    (record,) = _records(tmp_path / "runs")
    assert competition.sample_submission_score is not None
    assert record["grade"]["score"] > 0.5 > 0.1 > competition.sample_submission_score, record["grade"]  # chance: 0.1
    code = tmp_path / "runs" / "default" / competition.id / "0" / "code"
    assert (code / "main.py").read_bytes() == (BUILTIN / "baseline" / "main.py").read_bytes()
    notes = (code / "notes.md").read_text()
    assert "features: the gray pixels of the images named by 'id', 8x8" in notes, notes
    assert "model for 'label': HistGradientBoostingClassifier" in notes and "wrote 360 predictions" in notes


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
        "run", "--agent", str(agent), "--competitions", COMPS[0], "--time-limit", "2m", "--data-dir", str(data_dir),
        "--runs-dir", str(tmp_path / "runs"), "--sandbox", sandbox,
    )  # fmt: skip
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
        # the checkout's own files: only a folder of Python's own path (an editable install's src) may show
        f"for path in [{str(answers)!r}, '/proc/1/root' + {str(answers)!r}, {str(TESTS)!r}, '/root/.cache']:\n"
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
    assert result.returncode == 1, result.stderr[-3000:]  # no run made a submission
    assert time.monotonic() - started < 90
    assert "no submission; the agent was stopped at its time limit after 3" in result.stderr
    assert "podium: error: no run made a submission" in result.stderr
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
    from venvs import venv_under

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


def _run_args(agent: Path | str, data_dir: Path, runs: Path, *more: str) -> list[str]:
    return ["run", "--agent", str(agent), "--competitions", ",".join(COMPS), "--data-dir", str(data_dir),
            "--runs-dir", str(runs), *more]  # fmt: skip


def test_a_crashing_agent_is_visible_at_once(tmp_path: Path, data_dir: Path) -> None:
    agent = _agent(tmp_path / "crasher", "import sys\nprint('loading the model', file=sys.stderr)\nimport numpyy\n")
    runs = tmp_path / "runs"
    result = podium(*_run_args(agent, data_dir, runs, "--time-limit", "2m"))
    assert result.returncode == 1, result.stderr[-3000:]
    assert ".tmp-" not in result.stderr + result.stdout, "a run line shows a temporary path"
    assert f"{COMPS[0]}@1 seed 0: no submission; the agent exited with status 1 after " in result.stderr
    assert "    ModuleNotFoundError: No module named 'numpyy'" in result.stderr
    assert "podium: error: no run made a submission (2 run(s))" in result.stderr
    assert "2 run(s) ended with: ModuleNotFoundError: No module named 'numpyy'" in result.stderr
    report = (runs / "default" / "report.md").read_text()
    assert "## Runs whose agent failed (2)" in report and "exited with status 1 after" in report
    assert "ModuleNotFoundError: No module named 'numpyy'" in report and "loading the model" in report
    failures = json.loads((runs / "default" / "report.json").read_text())["agent_failures"]
    assert {f["exit_code"] for f in failures} == {1} and all(f["seconds"] > 0 for f in failures)
    for record in _records(runs):
        final = runs / "default" / record["competition_id"] / "0"
        assert record["grade"]["submission_path"] == str(final / "submission" / "submission.csv")
        assert record["agent_stderr_tail"][-1] == "ModuleNotFoundError: No module named 'numpyy'"


def _hanging_agent(folder: Path) -> tuple[Path, str]:
    """An agent that hangs while its folder holds ``.hang`` (hidden: not part of the agent's hash), else
    copies the sample submission; its command line carries a token to find its processes by."""
    token = f"podium-test-{os.getpid()}-{time.monotonic_ns()}"
    folder.mkdir(parents=True)
    (folder / "agent.yaml").write_text(f"name: hanger\ncommand: [python3, /home/agent/main.py, {token}]\n")
    (folder / "main.py").write_text(
        "import os, shutil, time\n"
        "while os.path.exists('/home/agent/.hang'):\n"
        "    time.sleep(0.2)\n"
        "shutil.copyfile('/home/data/sample_submission.csv', '/home/submission/submission.csv')\n"
    )
    (folder / ".hang").write_text("")
    return folder, token


def _alive_with(token: str) -> list[str]:
    """The pids of processes whose command line holds ``token``."""
    cmdlines = {}
    for path in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            cmdlines[path.parent.name] = path.read_bytes()
    return [pid for pid, cmdline in cmdlines.items() if token.encode() in cmdline]


def _interrupt(
    args: list[str], runs: Path, signals: int, sig: signal.Signals = signal.SIGINT
) -> tuple[subprocess.CompletedProcess[str], float, int]:
    """Start `podium run`, send ``sig`` to its process group ``signals`` times once a run has started;
    (what it did, seconds from the first signal to its exit, its pid)."""
    child = subprocess.Popen(
        [sys.executable, "-m", "podium", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"}, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not list(runs.glob("*/*/.*.tmp-*")) and time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.1)
    time.sleep(1.0)  # the sandbox is up
    sent = time.monotonic()
    for _ in range(signals):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, sig)
        time.sleep(0.05)
    stdout, stderr = child.communicate(timeout=120)
    return subprocess.CompletedProcess(child.args, child.returncode, stdout, stderr), time.monotonic() - sent, child.pid


def test_ctrl_c_stops_the_batch_writes_the_report_and_a_rerun_resumes(
    tmp_path: Path, data_dir: Path, sandbox: str
) -> None:
    agent, token = _hanging_agent(tmp_path / "hanger")
    runs = tmp_path / "runs"
    args = _run_args(agent, data_dir, runs, "--seeds", "3", "--time-limit", "5m", "--sandbox", sandbox)
    result, took, pid = _interrupt(args, runs, signals=1)
    assert result.returncode == 130, result.stderr[-3000:]
    assert took < 30, f"stopping took {took:.0f}s"
    assert "Traceback" not in result.stderr
    assert result.stderr.rstrip().endswith("interrupted; rerun the same command to resume")
    assert "stopping: no new runs" in result.stderr
    assert "# Run group `default`" in result.stdout and (runs / "default" / "report.md").is_file()
    assert not list(runs.glob("*/*/.*.tmp-*")), "staging folders left behind"
    assert not _alive_with(token), "the agent outlived the Ctrl-C"
    if sandbox == "docker":  # its container was killed and removed
        import docker

        from podium.sandbox._docker import HARNESS_LABEL

        labels = [c.labels[HARNESS_LABEL] for c in docker.from_env().containers.list(all=True)
                  if HARNESS_LABEL in c.labels]  # fmt: skip
        assert not [label for label in labels if label.endswith(f":{pid}")]
    assert _records(runs) == []  # the interrupted run left nothing; the queued ones never started
    (agent / ".hang").unlink()
    rerun = podium(*args)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert "0 of 6 run(s) already finished; running 6" in rerun.stderr
    assert len(_records(runs)) == 6 and len(RunStore(runs).rows("default")) == 6


def test_a_second_ctrl_c_quits_at_once_without_leaving_staging_folders(tmp_path: Path, data_dir: Path) -> None:
    agent, token = _hanging_agent(tmp_path / "hanger")
    runs = tmp_path / "runs"
    result, took, _ = _interrupt(_run_args(agent, data_dir, runs, "--workers", "2", "--time-limit", "5m"), runs, 2)
    assert result.returncode == 130 and took < 30, result.stderr[-3000:]
    assert "Traceback" not in result.stderr and "rerun the same command to resume" in result.stderr
    assert not list(runs.glob("*/*/.*.tmp-*")), "staging folders left behind"
    assert not _alive_with(token)
    assert RunStore(runs).rows("default") == []


def test_sigterm_stops_the_batch_as_ctrl_c_does(tmp_path: Path, data_dir: Path, sandbox: str) -> None:
    """SIGTERM (kill, a scheduler's cancel, docker stop) sent to podium alone: killed by it, podium left the docker
    run's container running past its time limit until a later podium swept it. Now it stops the batch as Ctrl-C
    does, the report written, nothing left behind (no agent, no container, no staging folder), exit 143."""
    agent, token = _hanging_agent(tmp_path / "hanger")
    runs = tmp_path / "runs"
    args = _run_args(agent, data_dir, runs, "--time-limit", "5m", "--sandbox", sandbox)
    child = subprocess.Popen(
        [sys.executable, "-m", "podium", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"}, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not _alive_with(token) and time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.1)
    assert _alive_with(token), "the agent never started"
    child.send_signal(signal.SIGTERM)  # to podium only, as kill PID does
    try:
        stdout, stderr = child.communicate(timeout=120)
    except subprocess.TimeoutExpired:  # say what podium's signals were and what it said (seen under xdist only)
        masks = [line for line in Path(f"/proc/{child.pid}/status").read_text().splitlines() if line.startswith("Sig")]
        child.kill()
        stdout, stderr = child.communicate()
        pytest.fail(f"podium did not stop within 120 s of SIGTERM; {masks}; its stderr ended: {stderr[-2000:]}")
    assert child.returncode == 143, stderr[-3000:]
    assert "stopping (SIGTERM): no new runs" in stderr and "Traceback" not in stderr
    assert stderr.rstrip().endswith("interrupted; rerun the same command to resume")
    assert "# Run group `default`" in stdout
    assert not list(runs.glob("*/*/.*.tmp-*")) and _records(runs) == []
    assert not _alive_with(token), "the agent outlived SIGTERM"
    if sandbox == "docker":
        import docker

        from podium.sandbox._docker import HARNESS_LABEL

        labels = [c.labels[HARNESS_LABEL] for c in docker.from_env().containers.list(all=True)
                  if HARNESS_LABEL in c.labels]  # fmt: skip
        assert not [label for label in labels if label.endswith(f":{child.pid}")], "its container outlived it"


def test_a_rerun_with_other_settings_is_refused_and_redo_all_replaces_the_runs(tmp_path: Path, data_dir: Path) -> None:
    runs = tmp_path / "runs"
    first = podium(*_run_args("dummy", data_dir, runs, "--time-limit", "3s"))
    assert first.returncode == 0, first.stderr[-3000:]
    before = {(r["competition_id"], r["seed"]): r["started_at"] for r in _records(runs)}
    refused = podium(*_run_args("dummy", data_dir, runs, "--time-limit", "10h", "--sandbox", "docker"))
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "sandbox bwrap (now docker); time limit 3s (now 10h)" in refused.stderr
    assert "--run-group NAME" in refused.stderr and "--redo all" in refused.stderr
    time.sleep(1.1)  # records keep whole seconds
    redone = podium(*_run_args("dummy", data_dir, runs, "--time-limit", "10h", "--redo", "all"))
    assert redone.returncode == 0, redone.stderr[-3000:]
    assert "2 of 2 run(s) already finished; running 2 (2 of them again)" in redone.stderr
    records = _records(runs)
    assert len(records) == 2 and all(r["limits"]["time_limit_s"] == 36000 for r in records)
    assert all(r["started_at"] != before[(r["competition_id"], r["seed"])] for r in records)
    assert len(RunStore(runs).rows("default")) == 2 and not list(runs.glob("*/*/.*"))
    settings = json.loads((runs / "default" / "group.json").read_text())["settings"]
    assert settings["time_limit_s"] == 36000 and settings["sandbox"] == "bwrap"
    # the report covers the whole group, not only this command's competitions
    one = podium("run", "--agent", "dummy", "--competitions", COMPS[0], "--time-limit", "10h",
                 "--data-dir", str(data_dir), "--runs-dir", str(runs))  # fmt: skip
    assert one.returncode == 0 and "1 of 1 run(s) already finished; running 0" in one.stderr
    assert all(f"| {cid}@1 | dummy | 0 |" in one.stdout for cid in COMPS)


def test_redo_failed_reruns_runs_that_failed_because_of_the_environment(tmp_path: Path, data_dir: Path) -> None:
    agent = _agent(
        tmp_path / "picky",
        "import os, shutil, sys\n"
        "if not os.path.exists('/home/agent/.ready'):\n"
        "    sys.exit('the environment is not ready')\n"
        "shutil.copyfile('/home/data/sample_submission.csv', '/home/submission/submission.csv')\n",
    )
    runs = tmp_path / "runs"
    args = _run_args(agent, data_dir, runs, "--time-limit", "2m")
    failed = podium(*args)
    assert failed.returncode == 1 and "1 run(s) ended with: the environment is not ready" not in failed.stderr
    assert "2 run(s) ended with: the environment is not ready" in failed.stderr
    (agent / ".ready").write_text("")  # the environment is fixed; the agent is the same
    again = podium(*args)
    assert again.returncode == 1 and "2 of 2 run(s) already finished; running 0" in again.stderr
    redone = podium(*args, "--redo", "failed")
    assert redone.returncode == 0, redone.stderr[-3000:]
    assert "running 2 (2 of them again)" in redone.stderr
    rows = RunStore(runs).rows("default")
    assert len(rows) == 2 and all(r["valid_submission"] for r in rows)
    assert all(r["grade"]["valid_submission"] for r in _records(runs))


def test_a_harness_failure_is_recorded_as_such_and_a_rerun_runs_it_again(
    tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When podium itself fails after the agent ran (here: grading), the run is kept as status harness_error,
    never as the agent's failure; reports count it apart, and a plain rerun runs it again."""
    from podium import run as run_module
    from podium.agents import load_agent
    from podium.errors import BrokenAnswersError
    from podium.report import write_report

    def broken(*args: object, **kwargs: object) -> None:
        raise BrokenAnswersError("the answers file is unreadable (a test)")

    config = run_module.RunConfig(
        agent=load_agent("dummy"), seeds=1, time_limit=60, sandbox="bwrap", cpus=None, memory_bytes=None, gpus=0,
        run_group="g", data_dir=data_dir, runs_dir=tmp_path / "runs",
    )  # fmt: skip
    comp = registry.get(COMPS[0])
    monkeypatch.setattr("podium.run.execute.grade_isolated", broken)
    batch = run_module.run_batch(config, [comp])
    assert batch.records == [] and batch.not_run == [f"{comp.ref} seed 0"]
    (record,) = _records(tmp_path / "runs")
    assert record["status"] == "harness_error" and "BrokenAnswersError" in record["error"]
    assert record["grade"] is None and (tmp_path / "runs" / "g" / comp.id / "0" / "logs").is_dir()
    rows = RunStore(tmp_path / "runs").rows("g")
    assert [r["status"] for r in rows] == ["harness_error"]
    assert run_module.agent_failures(rows) == [], "the harness's failure is not the agent's"
    monkeypatch.undo()
    again = run_module.run_batch(config, [comp])  # the same command: the failed run is not a result
    assert [r.status for r in again.records] == ["finished"] and again.records[0].grade.valid_submission
    (row,) = RunStore(tmp_path / "runs").rows("g")
    assert row["status"] == "finished"
    write_report(tmp_path / "runs" / "g", "g", [row], {})
