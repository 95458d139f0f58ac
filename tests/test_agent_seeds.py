"""Every built-in agent's randomness follows the run's seed (issue 29 item 8: `baseline` ignored it, so
`--seeds 3` gave three identical scores and an SEM of 0 that read as a measured zero variance).

The baseline on a table large enough for its trees' early stopping (where the seed picks the validation
rows); the model client of `search` and `mlab` sending the seed; AIDE's launcher seeding `random`
before AIDE starts. OpenHands' seed is checked end to end in tests/test_openhands_agent.py, `search`'s
policy in tests/test_search_agent.py; `dummy` draws nothing at random.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from podium.agents import BUILTIN
from podium.services import sandbox_file
from podium.testing import Fail, Reply, ScriptedLLM

sys.path.insert(0, str(sandbox_file("podium_llm.py").parent))

from podium_llm import LLMClient, ModelError


def _baseline_home(tmp_path: Path, rows: int = 12_500) -> Path:
    """A run's /home for the baseline outside a sandbox: agent/main.py, data/ (a regression table of ``rows``
    rows, 2,000 of them the test's), submission/ and code/."""
    home = tmp_path / "home"
    for folder in ("agent", "data", "submission", "code"):
        (home / folder).mkdir(parents=True)
    shutil.copyfile(BUILTIN / "baseline" / "main.py", home / "agent" / "main.py")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(rows, 4))
    table = pd.DataFrame(x, columns=["a", "b", "c", "d"]).assign(id=range(rows))
    table["y"] = x[:, 0] * 2 + np.sin(x[:, 1] * 3) + rng.normal(scale=0.5, size=rows)
    cut = rows - 2_000
    table.iloc[:cut].to_csv(home / "data" / "train.csv", index=False)
    table.iloc[cut:].drop(columns="y").to_csv(home / "data" / "test.csv", index=False)
    table.iloc[cut:][["id"]].assign(y=0.0).to_csv(home / "data" / "sample_submission.csv", index=False)
    return home


def _baseline(home: Path, seed: int | None) -> tuple[pd.Series, str]:
    env = {k: v for k, v in os.environ.items() if k != "SEED"} | {"OMP_NUM_THREADS": "1"}
    if seed is not None:
        env["SEED"] = str(seed)
    result = subprocess.run(
        [sys.executable, str(home / "agent" / "main.py")], env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    predictions = pd.read_csv(home / "submission" / "submission.csv")["y"]
    return predictions, (home / "code" / "notes.md").read_text()


def test_the_baseline_follows_the_runs_seed(tmp_path: Path) -> None:
    home = _baseline_home(tmp_path)
    first, notes = _baseline(home, 1)
    again, _ = _baseline(home, 1)
    other, other_notes = _baseline(home, 2)
    assert "random_state=1" in notes and "random_state=2" in other_notes and "seed 1" in notes
    assert first.equals(again), "one seed, one answer"
    assert not np.allclose(first, other), "another seed draws another holdout and other early-stopping rows"
    unset, unset_notes = _baseline(home, None)
    assert "seed 0" in unset_notes and "random_state=0" in unset_notes and len(unset) == len(first)


def test_the_baseline_seeds_differ_on_a_small_table(tmp_path: Path) -> None:
    """Below 10,000 rows scikit-learn's trees stop early only when asked: the baseline asks, so the seed draws the
    validation rows and each seed is its own fit (three seeds gave one answer and an SEM of 0 before), and one
    seed still gives one answer."""
    home = _baseline_home(tmp_path, rows=2_800)
    answers = [_baseline(home, seed)[0] for seed in (0, 1, 2)]
    assert answers[0].equals(_baseline(home, 0)[0])
    assert not np.allclose(answers[0], answers[1]) and not np.allclose(answers[1], answers[2])


def test_the_model_client_sends_the_runs_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    """`search` and `mlab` call their model through podium_llm: an OpenAI-format call carries the run's seed."""
    monkeypatch.setenv("SEED", "7")
    monkeypatch.setenv("PODIUM_LLM_MODELS", "m")
    monkeypatch.delenv("PODIUM_LLM_SOCKET", raising=False)
    with ScriptedLLM([Reply("one"), Reply("two")]) as server:
        monkeypatch.setenv("PODIUM_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("PODIUM_LLM_PROVIDER", "openai")
        assert LLMClient.from_environment().complete("s", "p").text == "one"
        monkeypatch.setenv("PODIUM_LLM_PROVIDER", "anthropic")
        LLMClient.from_environment().complete("s", "p")
        openai, anthropic = (request["body"] for request in server.requests)
    assert openai["seed"] == 7 and "seed" not in anthropic  # Anthropic's messages API has no seed


def test_a_server_that_refuses_the_seed_gets_the_call_without_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEED", "3")
    monkeypatch.setenv("PODIUM_LLM_MODELS", "m")
    monkeypatch.setenv("PODIUM_LLM_PROVIDER", "openai")
    monkeypatch.delenv("PODIUM_LLM_SOCKET", raising=False)
    script = [Fail(400, "Unrecognized request argument supplied: seed"), Reply("fine"), Reply("again"), Fail(400)]
    with ScriptedLLM(script) as server:
        monkeypatch.setenv("PODIUM_LLM_BASE_URL", server.base_url)
        client = LLMClient.from_environment()
        assert client.complete("s", "p").text == "fine" and client.complete("s", "p").text == "again"
        with pytest.raises(ModelError, match="HTTP 400"):  # another 400 is no refusal of the seed
            client.complete("s", "p")
        seeds = [request["body"].get("seed") for request in server.requests]
    assert seeds == [3, None, None, None]


_FAKE_AIDE_RUN = """\
import random
def run():
    # what AIDE 0.2.2's search policy and prompt draw: random.random() and random.shuffle()
    packages = ["numpy", "pandas", "scikit-learn", "xgboost", "lightGBM", "torch"]
    random.shuffle(packages)
    print("DRAWN", random.random(), ",".join(packages))
"""


def test_aides_launcher_seeds_random_from_the_run_before_aide_starts(tmp_path: Path) -> None:
    """AIDE draws from Python's random (debug or not, which buggy node, the package order in its prompt).
    The launcher is run as run_aide.py runs it, with an `aide` package that draws as AIDE does."""
    (tmp_path / "aide").mkdir()
    (tmp_path / "aide" / "__init__.py").write_text("")
    (tmp_path / "aide" / "agent.py").write_text("def query(*args, **kwargs):\n    return None\n")
    (tmp_path / "aide" / "run.py").write_text(_FAKE_AIDE_RUN)

    def drawn(seed: str) -> str:
        env = {**os.environ, "PYTHONPATH": str(tmp_path), "SEED": seed}
        result = subprocess.run(
            [sys.executable, str(BUILTIN / "aide" / "launch_aide.py")], env=env, capture_output=True, text=True
        )
        assert result.returncode == 0, result.stderr
        assert f"random seeded with the run's seed, {seed}" in result.stdout
        return next(line for line in result.stdout.splitlines() if line.startswith("DRAWN"))

    assert drawn("5") == drawn("5") != drawn("6")
