"""`podium audit` on real runs of the built-in agents under bwrap: `dummy` and `baseline` raise no flag,
and the records back the integrity statement (mounts, network, validation calls)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from podium import registry
from podium.agents import BUILTIN
from podium.data.prepare import prepare_competition
from podium.fixtures import make_raw

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap is not installed (apt-get install bubblewrap)"
)
CID = "spaceship-titanic"


def podium(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "podium", *args], capture_output=True, text=True, timeout=600, env=env)


def _network(record: dict) -> str:
    """The start of the network statement the record backs: loopback only where the sandbox recorded what it
    observed (I2), else not observed (a sandbox that does not record it yet)."""
    return "network: loopback only" if "network_observed" in record["isolation"] else "network: NOT OBSERVED"


def test_dummy_and_baseline_raise_no_flag(tmp_path: Path) -> None:
    comp = registry.get(CID)
    data = tmp_path / "data"
    prepare_competition(comp, data, source=make_raw(comp, tmp_path / "raw"))
    runs = tmp_path / "runs"
    mine = tmp_path / "myagent"  # `podium run --agent ./myagent`: audited without --agent-dir
    shutil.copytree(BUILTIN / "dummy", mine, ignore=shutil.ignore_patterns("__pycache__"))
    for agent in ("dummy", "baseline", str(mine)):
        result = podium("run", "--agent", agent, "--competitions", CID, "--time-limit", "5m",
                        "--data-dir", str(data), "--runs-dir", str(runs), "--run-group", Path(agent).name)  # fmt: skip
        assert result.returncode == 0, result.stderr[-3000:]
    record = json.loads((runs / "dummy" / CID / "0" / "record.json").read_text())
    assert record["isolation"]["sandbox"] == "bwrap" and record["isolation"]["isolated"]
    assert str(runs / "dummy" / CID / "0" / "code") in [m["source"] for m in record["isolation"]["mounts"]]
    assert record["agent_folder"] == str(BUILTIN / "dummy")
    assert json.loads((runs / "myagent" / CID / "0" / "record.json").read_text())["agent_folder"] == str(mine)
    result = podium("audit", str(runs), "--format", "json", "--data-dir", str(data))
    assert result.returncode == 0, result.stderr[-3000:]
    audits = {Path(a["run_dir"]).parts[-3]: a for a in json.loads(result.stdout)}
    assert set(audits) == {"dummy", "baseline", "myagent"}
    network = _network(record)
    for agent, audit in audits.items():
        assert not [f for f in audit["flags"] if f["violation"]], audit["flags"]
        # no judge model named, no notebooks downloaded: never `clean`
        if network.endswith("loopback only"):
            assert audit["verdict"] == "incomplete" and audit["incomplete"] == ["plagiarism", "judge"], (agent, audit)
        else:
            assert audit["verdict"] == "unclear", (agent, audit)
    reasons = {agent: [f["reason"] for f in a["flags"]] for agent, a in audits.items()}
    assert any(r.startswith("sample submission") for r in reasons["dummy"])
    for agent in audits:
        statement = [r for r in reasons[agent] if r.startswith(("answers:", "network:", "validation:", "scaffold:"))]
        assert len(statement) == 4 and "never mounted" in statement[0] and statement[1].startswith(network)
        assert "imports no grader" in statement[3] and "its hash is the record's agent_hash" in statement[3]
    again = podium("audit", str(runs), "--format", "json", "--data-dir", str(data))
    assert json.loads(again.stdout) == json.loads(result.stdout)  # cached: the same verdicts
    # the folder changed after the run: the audit does not take it for the one that ran
    (mine / "run.sh").write_text("#!/bin/sh\ncp /home/data/sample_submission.csv /home/submission/submission.csv\n")
    changed = podium("audit", str(runs / "myagent"), "--format", "json", "--checks", "integrity")
    (audit,) = json.loads(changed.stdout)
    scaffold = next(f["reason"] for f in audit["flags"] if f["reason"].startswith("scaffold:"))
    assert audit["verdict"] == "unclear" and "is not the folder that ran" in scaffold, scaffold


def test_a_docker_run_backs_the_integrity_statement(tmp_path: Path, docker_sandbox: object) -> None:
    comp = registry.get(CID)
    data = tmp_path / "data"
    prepare_competition(comp, data, source=make_raw(comp, tmp_path / "raw"))
    runs = tmp_path / "runs"
    result = podium("run", "--agent", "dummy", "--competitions", CID, "--time-limit", "5m", "--sandbox", "docker",
                    "--data-dir", str(data), "--runs-dir", str(runs), "--run-group", "d")  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    result = podium("audit", str(runs / "d"), "--format", "json", "--data-dir", str(data), "--checks", "integrity")
    assert result.returncode == 0, result.stderr[-3000:]
    ((audit),) = json.loads(result.stdout)
    assert not [f for f in audit["flags"] if f["violation"]] and audit["verdict"] != "clean", audit
    statement = [f["reason"] for f in audit["flags"]]
    record = json.loads((runs / "d" / CID / "0" / "record.json").read_text())
    assert any(s.startswith(f"{_network(record)} (docker") for s in statement), statement
