"""Agent environments (issue 11 §1): built from a pinned profile into a cached, content-addressed
venv, mounted read-only at /opt/podium/env inside bwrap and docker, first on PATH, apart from podium's
own packages, and named in the run record."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from podium.environments import ENV_MOUNT, build, find, list_environments, load_profile, remove
from podium.errors import PodiumError, UsageError

COMP = "spaceship-titanic"
#: A one-package profile that installs in seconds from the package index (pure Python).
TINY = "threadpoolctl==3.7.0\n"


@pytest.fixture(scope="module")
def env_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("envs")


@pytest.fixture(scope="module")
def tiny(env_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    profile = tmp_path_factory.mktemp("profiles") / "tiny.txt"
    profile.write_text("# a tiny profile for the tests\n" + TINY)
    build(load_profile(str(profile)), env_dir)
    return profile


def test_a_built_environment_is_content_addressed_locked_and_relocated(tiny: Path, env_dir: Path) -> None:
    profile = load_profile(str(tiny))
    env = find(profile, env_dir)
    assert env is not None and env.name == "tiny" and env.path.name == profile.folder_name
    assert env.requirements == ("threadpoolctl==3.7.0",) and "threadpoolctl==3.7.0" in env.lock
    assert build(profile, env_dir) == env  # built once
    other = load_profile(str(tiny), extra=["six==1.17.0"])
    assert other.digest != profile.digest and find(other, env_dir) is None
    scripts = [p for p in (env.path / "bin").iterdir() if p.is_file() and not p.is_symlink()]
    assert not any(str(env.path).encode() in p.read_bytes() for p in scripts)  # they name the mount point
    assert [e.digest for e in list_environments(env_dir)] == [env.digest]
    out = subprocess.run(
        [env.python_path, "-c", "import threadpoolctl, sys; print(sys.prefix)"], capture_output=True, text=True
    )
    assert out.returncode == 0 and out.stdout.strip() == str(env.path)


def test_the_callers_python_path_does_not_reach_the_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """podium run from a checkout with PYTHONPATH=src: the environment's interpreter saw podium's egg-info through
    it, and pip's check failed the build ("podium 0.1.0 requires pyyaml, which is not installed")."""
    visible = tmp_path / "on-the-path"
    info = visible / "caller_only-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: caller-only\nVersion: 1.0\nRequires-Dist: absent-dep\n"
    )
    (info / "RECORD").write_text("")
    monkeypatch.setenv("PYTHONPATH", str(visible))
    profile = tmp_path / "tiny.txt"
    profile.write_text(TINY)
    env = build(load_profile(str(profile)), tmp_path / "envs")
    assert "caller-only" not in env.lock and "caller_only" not in env.lock


def test_a_failed_build_leaves_nothing_that_looks_ready(env_dir: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken.txt"
    broken.write_text("podium-no-such-package-anywhere==0.0.1\n")
    profile = load_profile(str(broken))
    with pytest.raises(PodiumError, match="pip failed"):
        build(profile, env_dir)
    assert find(profile, env_dir) is None
    assert not [p for p in env_dir.iterdir() if p.name.startswith(f".{profile.folder_name}")]


def test_profiles_and_bad_input() -> None:
    minimal = load_profile("minimal")
    assert any(r.startswith("scikit-learn==") for r in minimal.requirements)
    assert all("==" in r for r in load_profile("standard").requirements), "every shipped pin is exact"
    assert load_profile("standard", gpu=True).gpu
    with pytest.raises(UsageError, match="no GPU variant"):
        load_profile("minimal", gpu=True)
    with pytest.raises(UsageError, match="the profiles are minimal, standard"):
        load_profile("minimall")
    with pytest.raises(UsageError, match="no environment"):
        remove("nothing-like-it")


def test_cli_env_list_and_rm(tiny: Path, env_dir: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PODIUM_ENV_DIR": str(env_dir)}
    listed = subprocess.run(
        [sys.executable, "-m", "podium", "env", "list", "--json"], capture_output=True, text=True, env=env
    )
    assert listed.returncode == 0 and [e["name"] for e in json.loads(listed.stdout)] == ["tiny"]
    wrong = subprocess.run(
        [sys.executable, "-m", "podium", "env", "rm", "nope"], capture_output=True, text=True, env=env
    )
    assert wrong.returncode == 2 and "no environment 'nope'" in wrong.stderr


PROBE = """\
import json, shutil, subprocess, sys
out = {"prefix": sys.prefix, "python3": shutil.which("python3")}
try:
    import threadpoolctl
    out["tiny"] = True
except ImportError:
    out["tiny"] = False
try:
    import numpy
    out["numpy"] = True  # podium's own packages must not leak in
except ImportError:
    out["numpy"] = False
shutil.copyfile("/home/data/sample_submission.csv", "/home/submission/submission.csv")
json.dump(out, open("/home/logs/env.json", "w"))
"""


@pytest.mark.parametrize("sandbox", ["bwrap", "docker"])
def test_the_agent_code_runs_with_its_environment_inside_the_sandbox(
    sandbox: str, tiny: Path, env_dir: Path, spaceship_data_dir: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if sandbox == "docker":
        request.getfixturevalue("docker_sandbox")
    agent = tmp_path / "envy"
    agent.mkdir()
    (agent / "tiny.txt").write_text(TINY)
    (agent / "agent.yaml").write_text("name: envy\nenvironment: tiny.txt\ncommand: [python3, /home/agent/main.py]\n")
    (agent / "main.py").write_text(PROBE)
    runs = tmp_path / "runs"
    result = subprocess.run(
        [sys.executable, "-m", "podium", "run", "--agent", str(agent), "--competitions", COMP, "--time-limit", "2m",
         "--data-dir", str(spaceship_data_dir), "--runs-dir", str(runs), "--sandbox", sandbox],
        capture_output=True, text=True, timeout=600, env={**os.environ, "PODIUM_ENV_DIR": str(env_dir)},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    seen = json.loads((runs / "default" / COMP / "0" / "logs" / "env.json").read_text())
    assert seen == {"prefix": ENV_MOUNT, "python3": f"{ENV_MOUNT}/bin/python3", "tiny": True, "numpy": False}
    record = json.loads((runs / "default" / COMP / "0" / "record.json").read_text())
    assert record["environment"]["name"] == "tiny" and record["grade"]["valid_submission"]
    group = json.loads((runs / "default" / "group.json").read_text())
    assert group["settings"]["environment"] == record["environment"]["digest"]


TORCH = """\
import shutil, torch
torch.manual_seed(0)
x = torch.randn(64, 3)
y = x @ torch.tensor([1.0, -2.0, 0.5]) + 0.1
model = torch.nn.Linear(3, 1)
optimiser = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(200):
    optimiser.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x).squeeze(1), y)
    loss.backward()
    optimiser.step()
open("/home/logs/torch.txt", "w").write(f"{torch.__version__} {loss.item():.6f}")
shutil.copyfile("/home/data/sample_submission.csv", "/home/submission/submission.csv")
"""


def test_torch_imports_and_trains_a_tiny_model_inside_the_sandbox(
    env_dir: Path, spaceship_data_dir: Path, tmp_path: Path
) -> None:
    """The CPU build of torch (what the machine's package files hold) in an environment of its own."""
    agent = tmp_path / "torchy"
    agent.mkdir()
    (agent / "torch.txt").write_text("torch==2.13.0\nnumpy==2.4.6\n")
    (agent / "agent.yaml").write_text("name: torchy\nenvironment: torch.txt\ncommand: [python3, /home/agent/main.py]\n")
    (agent / "main.py").write_text(TORCH)
    runs = tmp_path / "runs"
    result = subprocess.run(
        [sys.executable, "-m", "podium", "run", "--agent", str(agent), "--competitions", COMP, "--time-limit", "5m",
         "--data-dir", str(spaceship_data_dir), "--runs-dir", str(runs)],
        capture_output=True, text=True, timeout=1200,
        env={**os.environ, "PODIUM_ENV_DIR": str(env_dir), "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    version, loss = (runs / "default" / COMP / "0" / "logs" / "torch.txt").read_text().split()
    assert version.startswith("2.13.0") and float(loss) < 0.01


BUILD_ONE = """
import sys, time
from pathlib import Path
from podium.environments import build, load_profile
env = build(load_profile(sys.argv[1]), Path(sys.argv[2]))
print(env.created_at, env.path, time.monotonic(), flush=True)
"""


def test_two_builds_of_one_environment_at_once_build_it_once(tmp_path: Path) -> None:
    """Two `podium run`s (or two test workers) needing the same environment at the same time: the second waits for
    the first and takes its build. Before, both built it, and the later one removed the earlier one's folder while
    runs could be using it."""
    profile = tmp_path / "tiny.txt"
    profile.write_text(TINY)
    root = tmp_path / "envs"
    staging = f".{load_profile(str(profile)).folder_name}.tmp-"
    first = subprocess.Popen(
        [sys.executable, "-c", BUILD_ONE, str(profile), str(root)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not (root.is_dir() and any(p.name.startswith(staging) for p in root.iterdir())):
        assert first.poll() is None and time.monotonic() < deadline, first.communicate()
        time.sleep(0.02)
    second = subprocess.run(
        [sys.executable, "-c", BUILD_ONE, str(profile), str(root)], capture_output=True, text=True, timeout=300
    )
    out, err = first.communicate(timeout=300)
    assert first.returncode == 0 and second.returncode == 0, (err, second.stderr)
    assert "waiting for another build of environment tiny" in second.stderr
    assert "building environment" in err and "building environment" not in second.stderr
    assert out.split()[:2] == second.stdout.split()[:2]  # the same build, at the same path
    assert [p.name for p in root.iterdir() if not p.name.startswith(".")] == [Path(out.split()[1]).name]


def test_a_link_planted_at_the_build_lock_is_refused_in_one_line(tmp_path: Path) -> None:
    profile = tmp_path / "tiny.txt"
    profile.write_text(TINY)
    root = tmp_path / "envs"
    root.mkdir()
    target = tmp_path / "elsewhere"
    (root / f".lock-{load_profile(str(profile)).folder_name}").symlink_to(target)
    with pytest.raises(PodiumError, match=r"cannot build environment tiny .* Fix: remove what is at that path"):
        build(load_profile(str(profile)), root)
    assert not target.exists()  # the link was not followed
