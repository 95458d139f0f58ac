"""``gymnasium.make``'s keyword arguments: every one checked for its name and its type, each wrong one a single
:class:`UsageError` line naming the value and the fix, raised by ``make`` before anything is written (issue 41 §4)."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import gymnasium
import pytest

import podium.gym  # noqa: F401  (registers the ids)
from podium.errors import UsageError

ID = "podium/practice-titanic-v1"
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")


def _refused(tmp_path: Path, **kwargs: object) -> str:
    kwargs.setdefault("runs_dir", str(tmp_path / "runs"))
    with pytest.raises(UsageError) as caught:
        gymnasium.make(ID, **kwargs)
    message = str(caught.value)
    assert "\n" not in message, message
    assert not (tmp_path / "runs").exists()  # nothing written
    return message


def test_an_unknown_keyword_is_refused_with_the_closest_one(tmp_path: Path) -> None:
    said = _refused(tmp_path, max_step=2)
    assert "max_step=2" in said and "did you mean max_steps=" in said
    said = _refused(tmp_path, bogus=1)
    assert "bogus=1" in said and "did you mean" not in said and "max_observation_chars" in said  # the keywords listed
    said = _refused(tmp_path, seed=3)
    assert "seed=3" in said and "env.reset(seed=3)" in said
    said = _refused(tmp_path, max_cost=5)
    assert "max_cost=5" in said and "llm={'model': 'my-policy', 'max_cost': 5}" in said  # a key of llm=
    said = _refused(tmp_path, llm={"modle": "m"})
    assert "'modle'" in said and "did you mean 'model'" in said


@pytest.mark.parametrize(
    ("kwargs", "said"),
    [
        ({"allow_sealed": "yes"}, "allow_sealed='yes'"),
        ({"allow_sealed": 1}, "allow_sealed=1"),
        ({"task": 3}, "task=3"),
        ({"rows": True}, "rows=True"),
        ({"runs_dir": 3}, "runs_dir=3"),
        ({"run_group": 5}, "run_group=5"),
        ({"sandbox": ["bwrap"]}, "sandbox=['bwrap']"),
        ({"time_limit": True}, "time_limit=True"),
        ({"cpus": math.inf}, "cpus=inf"),
        ({"cpus": True}, "cpus=True"),
        ({"memory": True}, "memory=True"),
        ({"memory": 1.5}, "memory=1.5"),
        ({"gpus": 1.0}, "gpus=1.0"),
        ({"max_steps": 2.0}, "max_steps=2.0"),
        ({"max_observation_chars": "16000"}, "max_observation_chars='16000'"),
        ({"reward": 3}, "reward=3"),
        ({"invalid_reward": math.nan}, "invalid_reward=nan"),
        ({"model": 3}, "model=3"),
        ({"model": " "}, "model=' '"),
        ({"data_dir": 3.5}, "data_dir=3.5"),
        ({"render_mode": "human"}, "render_mode='human'"),
        ({"llm": "gpt"}, "llm='gpt'"),
    ],
)
def test_every_keyword_is_type_checked(tmp_path: Path, kwargs: dict, said: str) -> None:
    message = _refused(tmp_path, **kwargs)
    assert said in message and "Fix:" in message, message


@pytest.mark.parametrize(
    ("llm", "said"),
    [
        ({"model": 3}, "'model': 3"),
        ({"model": ""}, "'model': ''"),
        ({}, "'model'"),
        ({"model": "m", "provider": 5}, "'provider': 5"),
        ({"model": "m", "provider": "opnai"}, "did you mean 'openai'"),
        ({"model": "m", "base_url": 8000}, "'base_url': 8000"),
        ({"model": "m", "base_url": "127.0.0.1:8000"}, "'base_url': '127.0.0.1:8000'"),
        ({"model": "m", "max_cost": "5"}, "'max_cost': '5'"),
        ({"model": "m", "max_cost": math.nan}, "'max_cost': nan"),
        ({"model": "m", "max_cost": True}, "'max_cost': True"),
        ({"model": "m", "max_answer_tokens": 1.5}, "'max_answer_tokens': 1.5"),
        ({"model": "m", "api_key_env": 3}, "'api_key_env': 3"),
        ({"model": "m", "api_key_env": "MY KEY"}, "'api_key_env': 'MY KEY'"),
    ],
)
def test_every_key_of_llm_is_type_checked(tmp_path: Path, llm: dict, said: str) -> None:
    message = _refused(tmp_path, llm=llm)
    assert said in message and "Fix:" in message, message


def test_a_negative_gpu_count_suggests_a_count_that_makes_sense(tmp_path: Path) -> None:
    said = _refused(tmp_path, gpus=-1)
    assert "gpus=-1" in said and "gpus=100" not in said and "gpus=1" in said


def test_a_file_named_as_the_runs_folder_is_refused(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    said = _refused(tmp_path, runs_dir=str(blocker))
    assert f"runs_dir={str(blocker)!r} is a file, not a folder" in said and blocker.read_text() == "x"


@needs_bwrap
def test_a_read_only_runs_folder_is_refused_at_make(tmp_path: Path) -> None:
    """Root writes through a chmod: a read-only bind mount holds for everyone."""
    locked = tmp_path / "locked"
    locked.mkdir()
    script = (
        "import gymnasium, podium.gym, sys\n"
        "for runs in sys.argv[1:]:\n"
        "    try:\n"
        f"        gymnasium.make({ID!r}, runs_dir=runs)\n"
        "    except Exception as error:\n"
        "        print(type(error).__name__, error)\n"
    )
    command = ["bwrap", "--dev-bind", "/", "/", "--ro-bind", str(locked), str(locked), sys.executable, "-c", script]
    done = subprocess.run([*command, str(locked), str(locked / "below")], capture_output=True, text=True, timeout=300)
    said = done.stdout.splitlines()
    assert len(said) == 2 and all(line.startswith("UsageError runs_dir=") for line in said), done.stdout + done.stderr
    assert all("cannot write in" in line for line in said) and list(locked.iterdir()) == []


@needs_bwrap
@pytest.mark.usefixtures("practice_data")
def test_a_loopback_server_needs_no_key_and_any_other_names_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("PODIUM_TEST_POLICY_KEY", raising=False)
    for url in ("http://127.0.0.1:8000", "http://localhost:8000/v1", "http://[::1]:8000"):
        gymnasium.make(ID, runs_dir=str(tmp_path / "runs"), llm={"model": "m", "base_url": url}).close()
    said = _refused(tmp_path / "elsewhere", llm={"model": "m", "base_url": "https://example.com"})
    assert "OPENAI_API_KEY" in said and "api_key_env" in said
    said = _refused(tmp_path / "named", llm={"model": "m", "base_url": "http://127.0.0.1:8000",
                                             "api_key_env": "PODIUM_TEST_POLICY_KEY"})  # fmt: skip
    assert "PODIUM_TEST_POLICY_KEY" in said  # a variable named is a key asked for, on the loopback too
    assert "OPENAI_API_KEY" not in os.environ
