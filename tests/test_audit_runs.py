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
from podium.data.prepare import prepare_competition
from podium.fixtures import make_raw

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap is not installed (apt-get install bubblewrap)"
)
CID = "spaceship-titanic"


def podium(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "podium", *args], capture_output=True, text=True, timeout=600, env=env)


def test_dummy_and_baseline_raise_no_flag(tmp_path: Path) -> None:
    comp = registry.get(CID)
    data = tmp_path / "data"
    prepare_competition(comp, data, source=make_raw(comp, tmp_path / "raw"))
    runs = tmp_path / "runs"
    for agent in ("dummy", "baseline"):
        result = podium("run", "--agent", agent, "--competitions", CID, "--time-limit", "5m",
                        "--data-dir", str(data), "--runs-dir", str(runs), "--run-group", agent)  # fmt: skip
        assert result.returncode == 0, result.stderr[-3000:]
    record = json.loads((runs / "dummy" / CID / "0" / "record.json").read_text())
    assert record["isolation"]["sandbox"] == "bwrap" and record["isolation"]["isolated"]
    assert str(runs / "dummy" / CID / "0" / "code") in [m["source"] for m in record["isolation"]["mounts"]]
    result = podium("audit", str(runs), "--format", "json", "--data-dir", str(data))
    assert result.returncode == 0, result.stderr[-3000:]
    audits = {Path(a["run_dir"]).parts[-3]: a for a in json.loads(result.stdout)}
    assert set(audits) == {"dummy", "baseline"}
    for agent, audit in audits.items():
        assert audit["verdict"] == "clean", (agent, audit)
        assert not [f for f in audit["flags"] if f["violation"]], audit["flags"]
    reasons = {agent: [f["reason"] for f in a["flags"]] for agent, a in audits.items()}
    assert any(r.startswith("sample submission") for r in reasons["dummy"])
    statement = [r for r in reasons["baseline"] if r.startswith(("answers:", "network:", "validation:", "scaffold:"))]
    assert len(statement) == 4 and "never mounted" in statement[0] and "loopback only (bwrap)" in statement[1]
    again = podium("audit", str(runs), "--format", "json", "--data-dir", str(data))
    assert json.loads(again.stdout) == json.loads(result.stdout)  # cached: the same verdicts


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
    assert audit["verdict"] == "clean", audit
    statement = [f["reason"] for f in audit["flags"]]
    assert any(s.startswith("network: loopback only (docker)") for s in statement), statement
