"""docs/gym.md's two examples run as written, one after the other, in one folder on one day: the API's first
episode, then the training loop against a model server on the loopback, with no key in the environment (issue 41
§4.8: the loop needed ``OPENAI_API_KEY`` for a local server; §4.10: the two collided on the default run group)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from podium.testing import ScriptedLLM, ToolCall

DOC = Path(__file__).resolve().parents[1] / "docs" / "gym.md"
EPISODES = 2  # of the loop's 8, to keep the test short


def _block(after: str) -> str:
    """The first ```python block after the heading ``after``."""
    text = DOC.read_text(encoding="utf-8")
    found = re.search(re.escape(after) + r".*?```python\n(.*?)```", text, re.S)
    assert found is not None, after
    return found.group(1)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")
@pytest.mark.usefixtures("practice_data")
def test_the_docs_examples_run_one_after_the_other_with_no_key_for_a_loopback_server(tmp_path: Path) -> None:
    first = _block("## API")
    loop = _block("## A training loop in 20 lines")
    assert '"http://127.0.0.1:8000"' in loop and "range(8)" in loop
    with ScriptedLLM([ToolCall("submit", {}) for _ in range(EPISODES)]) as model:
        loop = loop.replace('"http://127.0.0.1:8000"', repr(model.base_url)).replace("range(8)", f"range({EPISODES})")
        script = f"{first}\n{loop}\nprint('REWARDS', [reward for _, reward in batch])\n"
        env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
        done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env={**env, "OMP_NUM_THREADS": "1"},
                              capture_output=True, text=True, timeout=600)  # fmt: skip
        asked = list(model.requests)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "REWARDS" in done.stdout and len(asked) == EPISODES
    assert all(request["body"]["model"] == "my-policy" for request in asked)
    records = sorted((tmp_path / "runs").glob("*/practice-titanic/*/record.json"))
    groups = {path.parts[-4] for path in records}
    assert len(records) == 1 + EPISODES and len(groups) == 2 and "rl-step-0" in groups
    calls = [json.loads(path.read_text())["llm"] for path in records if path.parts[-4] == "rl-step-0"]
    assert [c["calls"] for c in calls] == [1] * EPISODES  # each through podium's proxy, metered
