"""Episodes are runs for every stage above them (issue 36 §1): `podium bundle create` bundles them, `podium bundle
verify` re-grades them against its own data and finds them equal, and `podium serve` shows them, with the
episode's gym facts, as it shows any run."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import gymnasium
import pytest
from starlette.testclient import TestClient

from podium.serve import create_app
from test_gym_env import DATA, PODIUM, _play, needs_bwrap, needs_data


@needs_bwrap
@needs_data
def test_episodes_bundle_verify_and_show_like_any_run(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    env = gymnasium.make("podium/practice-wine-v1", runs_dir=str(runs), run_group="ep", time_limit="10m",
                         data_dir=str(DATA))  # fmt: skip
    try:
        _, reward, info = _play(env, 3)
    finally:
        env.close()
    record = json.loads(Path(info["record"]).read_text())
    audited = subprocess.run([*PODIUM, "audit", str(runs / "ep"), "--data-dir", str(DATA), "--checks",
                              "submission,answers,external,oracle,integrity"], capture_output=True, text=True)  # fmt: skip
    assert audited.returncode == 0, audited.stderr
    bundle = tmp_path / "episodes.tar.gz"
    made = subprocess.run([*PODIUM, "bundle", "create", "-o", str(bundle), "--data-dir", str(DATA), str(runs / "ep")],
                          capture_output=True, text=True)  # fmt: skip
    assert made.returncode == 0, made.stderr
    checked = subprocess.run([*PODIUM, "bundle", "verify", "--data-dir", str(DATA), "--work-dir", str(tmp_path / "w"),
                              str(bundle)], capture_output=True, text=True)  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.startswith("verified: 1 runs, ") and ", no difference; manifest sha256 " in checked.stdout
    with TestClient(create_app(runs)) as client:
        group = client.get("/group/ep")
        page = client.get("/run/ep/practice-wine/3")
    assert group.status_code == 200 and 'href="/run/ep/practice-wine/3"' in group.text
    assert page.status_code == 200 and f"{record['grade']['score']:.5g}" in page.text
    signed = -record["grade"]["score"] if record["grade"]["is_lower_better"] else record["grade"]["score"]
    assert signed == pytest.approx(reward)


@needs_bwrap
@needs_data
def test_a_holdout_episode_verifies_with_a_note_that_it_was_not_graded_again(tmp_path: Path) -> None:
    """Its answers are podium's re-split of the public train, which verify does not rebuild: graded again against
    the sealed answers it gave 9 false differences (issue 41 §2)."""
    runs = tmp_path / "runs"
    env = gymnasium.make("podium/practice-wine-v1", task="holdout", runs_dir=str(runs), run_group="ho",
                         time_limit="10m", data_dir=str(DATA))  # fmt: skip
    try:
        env.reset(seed=3)
        env.step({"tool": "bash", "command": "cp /home/data/sample_submission.csv /home/submission/submission.csv"})
        *_, info = env.step({"tool": "submit"})
    finally:
        env.close()
    assert json.loads(Path(info["record"]).read_text())["gym"]["task"] == "holdout"
    bundle = tmp_path / "holdout.tar.gz"
    made = subprocess.run([*PODIUM, "bundle", "create", "-o", str(bundle), "--data-dir", str(DATA), str(runs / "ho")],
                          capture_output=True, text=True)  # fmt: skip
    assert made.returncode == 0, made.stderr
    checked = subprocess.run([*PODIUM, "bundle", "verify", "--data-dir", str(DATA), str(bundle)], capture_output=True,
                             text=True)  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.startswith("verified: 1 runs, ")
    assert "note: not graded again: 1 holdout episode(s), graded against podium's re-split" in checked.stderr
