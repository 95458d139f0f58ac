"""Claude Code and Codex CLI as podium agents (issue 31 §1, §2): the `coding-agents` root filesystem (Debian 13,
Node, the pinned npm packages), their wrappers' journals, and `podium run --agent claude-code` / `--agent codex`
end to end on two practice competitions against the scripted model server through podium's real proxy
(streaming: Anthropic Messages, OpenAI's Responses): a crash debugged, the hold-out scorer reached, a valid
graded submission, tokens counted, journals drawn by `podium serve`, transcripts read by the judge; a run past
--max-cost ended mid-stream and cleanly; a hostile session that gets nothing out of the sandbox.

The environment takes minutes to build (scripts/coding_agents_env.sh; CI starts it in the background and the
end-to-end tests run last and wait for its status line). Without it they are skipped, and under
PODIUM_REQUIRE_CODING_AGENTS=1 (CI) they fail instead. The profile and journal tests need no build.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from podium.agents import BUILTIN, load_agent_folder
from podium.environments import find, load_profile
from podium.errors import UsageError
from podium.paths import RunPaths
from podium.serve.journal import load_journal
from podium.services import sandbox_file
from podium.testing import Expect, Reply, ScriptedLLM, Shell, ToolCall
from podium.testing.scripted_llm import last_tool_output

ENV_DIR = os.environ.get("PODIUM_CODING_AGENTS_ENV_DIR")
REQUIRE = os.environ.get("PODIUM_REQUIRE_CODING_AGENTS") == "1"
WAIT_S = float(os.environ.get("PODIUM_CODING_AGENTS_WAIT_S", "2400"))
COMPS = ("practice-wine", "practice-titanic")
AGENTS = {"claude-code": "claude_code", "codex": "codex"}


def test_the_coding_agents_profile_pins_node_packages_on_debian_13(tmp_path: Path) -> None:
    profile = load_profile("coding-agents")
    spec = profile.rootfs
    assert spec is not None and spec.suite == "trixie" and {"nodejs", "npm"} <= set(spec.debian_packages)
    assert spec.npm_packages == ("@anthropic-ai/claude-code@2.1.332", "@openai/codex@0.171.0")
    assert spec.agent_venv is None and spec.code_requirements == load_profile("minimal").requirements
    assert profile.folder_name.startswith("coding-agents-") and profile.digest == load_profile("coding-agents").digest
    for name, folder in AGENTS.items():
        agent = load_agent_folder(name)
        assert agent.name == name and agent.folder == BUILTIN / folder and agent.environment == "coding-agents"
        assert agent.llm is not None and agent.llm.bridge
    mine = tmp_path / "mine.yaml"
    mine.write_text("suite: trixie\npython: python3.13\ndebian_packages: [npm]\nnpm_prefix: /opt/x\n"
                    "npm_packages: ['@openai/codex@^0.171']\n")  # fmt: skip
    with pytest.raises(UsageError, match="is not pinned"):
        load_profile(str(mine))
    mine.write_text("suite: trixie\npython: python3.13\ndebian_packages: [npm]\n")
    with pytest.raises(UsageError, match="name the agent's packages"):
        load_profile(str(mine))


def test_a_profile_without_node_packages_keeps_its_digest() -> None:
    """Adding npm_prefix and npm_packages to the rootfs spec must not rebuild openhands' cached environment."""
    import hashlib
    import platform
    from dataclasses import asdict

    spec = load_profile("openhands").rootfs
    assert spec is not None
    before = {k: v for k, v in asdict(spec).items() if k not in ("npm_prefix", "npm_packages")}
    key = json.dumps({**before, "machine": platform.machine(), "format": 1}, sort_keys=True)
    assert load_profile("openhands").digest == hashlib.sha256(key.encode()).hexdigest()[:16]


def _runner(folder: str, script: str, monkeypatch: pytest.MonkeyPatch, home: Path) -> ModuleType:
    """An agent's wrapper imported here, with the sandbox files it imports from /home found beside podium's."""
    monkeypatch.syspath_prepend(str(sandbox_file("podium_journal.py").parent))
    monkeypatch.setenv("PODIUM_HOME", str(home))
    spec = importlib.util.spec_from_file_location(f"runner_{folder}", BUILTIN / folder / script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _journal(path: Path) -> list[dict[str, Any]]:
    nodes: dict[int, dict[str, Any]] = {}
    for line in path.read_text().splitlines():
        node = json.loads(line)
        nodes[node["id"]] = node  # a node's last line counts
    return [nodes[i] for i in sorted(nodes)]


def test_claude_codes_events_become_journal_nodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runner = _runner("claude_code", "run_claude_code.py", monkeypatch, tmp_path)
    events = runner.Events(runner.Journal(tmp_path / "journal.jsonl", time.monotonic()))
    write = {"type": "tool_use", "id": "t1", "name": "Write", "input": {"file_path": "/home/code/train.py"}}
    run = {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "python /home/code/train.py"}}
    events({"type": "assistant", "message": {"content": [{"type": "text", "text": "I will train."}, write]}})
    events({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}})
    events({"type": "assistant", "message": {"content": [run]}})
    crash = [{"type": "text", "text": "Traceback\nNameError: x"}]
    events({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t2", "content": crash,
                                                     "is_error": True}]}})  # fmt: skip
    events({"type": "result", "subtype": "success", "num_turns": 3})
    nodes = _journal(tmp_path / "journal.jsonl")
    assert [(n["operator"], n["is_bug"], n["code_file"]) for n in nodes] == [
        ("Write", False, "/home/code/train.py"), ("Bash", True, "/home/code/train.py")]  # fmt: skip
    assert nodes[0]["plan"] == "I will train." and "NameError" in nodes[1]["output_tail"] and nodes[1]["parent"] == 0
    assert events.result["num_turns"] == 3
    line = runner.command("m-1", 7, "Bash, Read,WebFetch")
    assert line[line.index("--tools") + 1] == "Bash,Read" and line[line.index("--max-turns") + 1] == "7"
    assert line[line.index("--disallowedTools") + 1] == "WebFetch,WebSearch" and "-p" in line


def test_codexs_events_become_journal_nodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runner = _runner("codex", "run_codex.py", monkeypatch, tmp_path)
    events = runner.Events(runner.Journal(tmp_path / "journal.jsonl", time.monotonic()))
    shell = {"id": "item_1", "type": "command_execution", "command": "bash -lc 'python /home/code/a.py'"}
    events({"type": "item.completed", "item": {"id": "item_0", "type": "reasoning", "text": "Run it first."}})
    events({"type": "item.started", "item": {**shell, "status": "in_progress"}})
    events({"type": "item.completed", "item": {**shell, "aggregated_output": "NameError", "exit_code": 1}})
    change = {"id": "item_2", "type": "file_change", "changes": [{"path": "/home/code/a.py", "kind": "update"}]}
    events({"type": "item.completed", "item": {**change, "status": "completed"}})
    events({"type": "turn.completed", "usage": {"input_tokens": 10, "output_tokens": 2}})
    events({"type": "turn.failed", "error": {"message": "budget spent"}})
    nodes = _journal(tmp_path / "journal.jsonl")
    assert [(n["operator"], n["is_bug"], n["code_file"]) for n in nodes] == [
        ("shell", True, "/home/code/a.py"), ("apply_patch", False, "/home/code/a.py")]  # fmt: skip
    assert nodes[0]["plan"] == "Run it first." and nodes[0]["output_tail"] == "NameError"
    assert events.usage == {"input_tokens": 10, "output_tokens": 2} and events.errors == ["budget spent"]
    config = runner.config("gpt-x", "http://127.0.0.1:8399/v1", "low", ["apps", "memories"])
    assert 'wire_api = "responses"' in config and 'approval_policy = "never"' in config
    assert "web_search = false" in config and "apps = false" in config and 'exporter = "none"' in config


def test_an_agent_past_its_time_is_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runner = _runner("codex", "run_codex.py", monkeypatch, tmp_path)
    seen: list[dict[str, Any]] = []
    script = "import json, time; print(json.dumps({'type': 'hello'}), flush=True); time.sleep(60)"
    code = runner.run_events("t", [sys.executable, "-c", script], dict(os.environ), tmp_path / "ev.jsonl", seen.append,
                             1.0, cwd=str(tmp_path))  # fmt: skip
    assert code is None and seen == [{"type": "hello"}]
    assert json.loads((tmp_path / "ev.jsonl").read_text()) == {"type": "hello"}


# -- end to end: needs the built environment --------------------------------------------------------


def _env_dir() -> Path:
    """The folder holding the built coding-agents environment, waiting while scripts/coding_agents_env.sh builds it."""
    base = Path(ENV_DIR) if ENV_DIR else None
    if base is not None:
        status = base / ".coding-agents-status"
        deadline = time.monotonic() + WAIT_S
        while True:
            lines = status.read_text().split() if status.exists() else []
            if not lines or lines[-1] != "building" or time.monotonic() > deadline:
                break
            time.sleep(10)
    found = find(load_profile("coding-agents"), base)
    if found is None:
        reason = "the coding-agents environment is not built (scripts/coding_agents_env.sh DIR; " \
                 "PODIUM_CODING_AGENTS_ENV_DIR=DIR)"  # fmt: skip
        if REQUIRE:
            pytest.fail(f"PODIUM_REQUIRE_CODING_AGENTS=1 but {reason}")
        pytest.skip(reason)
    return found.path.parent


@pytest.fixture(scope="module")
def practice(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from podium import registry
    from podium.data.prepare import prepare_competition

    data = tmp_path_factory.mktemp("coding-agents") / "data"
    for comp in COMPS:
        prepare_competition(registry.get(comp), data)
    return data


def _agent(tmp_path: Path, name: str) -> Path:
    """The built-in agent's folder, copied, with Claude Code's retries cut to one (the refused calls of a spent
    budget are retried ten times by default, minutes of backing off)."""
    folder = tmp_path / "agents" / AGENTS[name]
    shutil.copytree(BUILTIN / AGENTS[name], folder)
    text = (folder / "agent.yaml").read_text()
    (folder / "agent.yaml").write_text(
        text.replace('  OMP_NUM_THREADS: "2"', '  OMP_NUM_THREADS: "2"\n  CLAUDE_CODE_MAX_RETRIES: "1"')
    )
    return folder


def _run(agent: Path, model: ScriptedLLM, data: Path, runs: Path, env_dir: Path, *more: str,
         name: str = "scripted-1") -> subprocess.CompletedProcess[str]:  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "podium", "run", "--agent", str(agent), "--competitions", ",".join(COMPS),
         "--time-limit", "4m", "--memory", "3G", "--model", name, "--base-url", model.base_url, "--data-dir",
         str(data), "--runs-dir", str(runs), *more],
        capture_output=True, text=True, timeout=1200,
        env={**os.environ, "PODIUM_ENV_DIR": str(env_dir), "OPENAI_API_KEY": "sk-podium-secret-1",
             "ANTHROPIC_API_KEY": "sk-podium-secret-1", "OMP_NUM_THREADS": "1"},
    )  # fmt: skip


BROKEN = "import pandas as pd\ntrain = pd.read_csv('/home/data/train.csv')\nprint(train['no_such_column'])\n"
FIXED = (
    "import pandas as pd\nsample = pd.read_csv('/home/data/sample_submission.csv')\n"
    "sample.to_csv('/home/submission/submission.csv', index=False)\nprint('written', len(sample))\n"
)


def _write(text: str) -> str:
    return f"mkdir -p /home/code && cat > /home/code/train.py <<'EOF'\n{text}EOF\ncd /home/code && python train.py"


class Session:
    """Per competition (told apart by the task): look around (which Python, the login shell's PATH), write a script
    that crashes, run it; seeing the crash, fix it, run it, score a hold-out with /home/score_holdout.py and
    validate; then say it is done."""

    def __init__(self) -> None:
        self.steps: dict[str, list[Any]] = {}

    def __call__(self, request: dict[str, Any]) -> Any:
        text = json.dumps(request["body"])[:200_000]
        comp = "wine" if "Wine Cultivars" in text else "titanic"
        steps = self.steps.setdefault(comp, [
            Shell("which python; python --version; bash -lc 'which python'; ls /home/data"),
            Expect(r"(?s)/opt/podium/env/bin/python\s+Python 3\.13.*/opt/podium/env/bin/python", Shell(_write(BROKEN))),
            Expect("no_such_column", Shell(_write(FIXED) + " && python /home/score_holdout.py "
                   "/home/data/sample_submission.csv /home/data/sample_submission.csv; /home/validate_submission.sh")),
            Expect(r"(?s)written.*score: .*Submission is valid", Reply("Done: the fixed script wrote the submission.")),
        ])  # fmt: skip
        step = steps.pop(0) if steps else Reply("Done.")
        return step(request) if callable(step) else step


@pytest.mark.rootfs
def test_the_environments_lock_names_every_node_package_with_its_version() -> None:
    """The lock (podium-env.json) lists each npm package the build installed, the platform binaries too, as
    NAME@VERSION under the prefix, and nothing else there (the prefix's own root once came out as `lib@`)."""
    found = find(load_profile("coding-agents"), _env_dir())
    assert found is not None
    lock = json.loads((found.path / "podium-env.json").read_text())["lock"]
    node = [line.split(" ", 1)[1] for line in lock if line.startswith("/opt/coding-agents ")]
    assert "@anthropic-ai/claude-code@2.1.332" in node and "@openai/codex@0.171.0" in node, node
    assert any(re.fullmatch(r"@openai/codex-linux-[a-z0-9]+@npm:@openai/codex@0\.171\.0-linux-\w+", p) for p in node)
    assert all(re.fullmatch(r"@?[\w./-]+@(npm:@?[\w./-]+@)?\d+\.\d+\.\d+[\w.-]*", p) for p in node), node


@pytest.mark.rootfs
@pytest.mark.parametrize("name", sorted(AGENTS))
def test_the_agent_debugs_a_crash_to_a_graded_submission(
    name: str, tmp_path: Path, practice: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env_dir = _env_dir()
    with ScriptedLLM([Session()] * 40) as model:
        result = _run(_agent(tmp_path, name), model, practice, tmp_path / "runs", env_dir)
        asked = list(model.requests)
    assert result.returncode == 0, result.stderr[-3000:]
    api = "/v1/messages" if name == "claude-code" else "/v1/responses"
    assert asked and all(r["path"] == api and r["body"].get("stream") for r in asked)
    calls = 0
    for comp in COMPS:
        run = tmp_path / "runs" / "default" / comp / "0"
        out = (run / "logs" / "agent.stdout.log").read_text()
        steps = _journal(run / "logs" / "journal.jsonl")
        assert len(steps) == 3 and all(s["operator"] in ("Bash", "shell") for s in steps), out[-3000:]
        assert "no_such_column" in steps[1]["output_tail"] and steps[1]["is_bug"]  # the crash, seen by the agent
        assert "written" in steps[2]["output_tail"] and not steps[2]["is_bug"], steps[2]["output_tail"]
        assert "the submission in place is valid" in out
        shown = load_journal(RunPaths(run))  # what podium serve draws
        assert shown is not None and len(shown.nodes) == 3 and FIXED in str(shown.nodes[2].code)
        assert (run / "logs" / f"{name}.events.jsonl").stat().st_size > 0 and any((run / "logs" / name).rglob("*"))
        holdout = [json.loads(line) for line in (run / "holdout_calls.jsonl").read_text().splitlines()]
        assert [c["verdict"] for c in holdout] == ["scored"]
        record = json.loads((run / "record.json").read_text())
        assert record["grade"]["valid_submission"] and record["environment"]["name"] == "coding-agents"
        llm = record["llm"]
        assert llm["input_tokens"] > 0 and llm["output_tokens"] > 0 and llm["calls"] >= 4
        transcript = [json.loads(line) for line in (run / "llm_transcript.jsonl").read_text().splitlines()]
        assert len(transcript) == llm["calls"] and all(t["stream"] and t["response"] for t in transcript)
        assert "sk-podium-secret-1" not in (run / "llm_transcript.jsonl").read_text()
        calls += llm["calls"]
    assert calls == len(asked)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-judge")
    _judge_reads_the_transcript(tmp_path / "runs" / "default" / COMPS[1] / "0", practice)


def _judge_reads_the_transcript(run: Path, data: Path) -> None:
    """`podium audit --checks judge` against the scripted server: the judge's questions carry what the agent saw
    in the transcript (its crash), not only its logs."""
    from podium.audit import audit_run
    from podium.testing import ByContent

    with ScriptedLLM([ByContent({}, "Nothing bears on this.\nVERDICT: no")] * 80) as judge:
        options = {"model": "judge-1", "base_url": judge.base_url, "data_dir": str(data)}
        result = audit_run(run, ["judge"], options).result("judge")
        asked = "\n".join(json.dumps(r["body"]) for r in judge.requests)
    assert result.verdict == "clean", result
    assert "no_such_column" in asked


@pytest.mark.rootfs
@pytest.mark.parametrize(("name", "model_name"), [("claude-code", "claude-sonnet-4-5"), ("codex", "gpt-5-codex")])
def test_a_run_past_its_cost_budget_ends_mid_stream_and_cleanly(
    name: str, model_name: str, tmp_path: Path, practice: Path
) -> None:
    env_dir = _env_dir()
    endless = " ".join(f"word{i}" for i in range(200_000))  # a server that ignores the answer's cap
    with ScriptedLLM([Reply(endless)] + [Reply("short")] * 30, caps=False) as model:
        result = _run(_agent(tmp_path, name), model, practice, tmp_path / "runs", env_dir, "--max-cost", "1",
                      "--competitions", COMPS[0], name=model_name)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    run = tmp_path / "runs" / "default" / COMPS[0] / "0"
    record = json.loads((run / "record.json").read_text())
    llm = record["llm"]
    assert record["status"] == "finished" and record["grade"]["valid_submission"]  # the sample, placed first
    assert llm["cut_streams"] == 1 and 0.5 < llm["cost_usd"] <= 1.001, llm  # the chunk that crossed it counts
    assert "the submission in place is valid" in (run / "logs" / "agent.stdout.log").read_text()


class Hostile:
    """A model that tells the agent to fetch the web (a script, and for Claude Code its WebFetch tool, which the
    wrapper does not offer), read /proc/1/environ and the keys in its environment, and reach the proxy's upstream
    (the model server's own port) directly; ``results`` keeps what each tool call gave back."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.port = 0
        self.results: list[str] = []

    def __call__(self, request: dict[str, Any]) -> Any:
        plan: list[Any] = [
            Shell("python -c \"import urllib.request as u; print(u.urlopen('https://example.com', timeout=5).read())\""),
            Shell("cat /proc/1/environ | tr '\\0' '\\n'; echo; env | grep -i key"),
            Shell(f"python -c \"import socket; socket.create_connection(('127.0.0.1', {self.port}), timeout=5); "
                  "print('UPSTREAM', 'OPEN')\""),
        ]  # fmt: skip
        if self.name == "claude-code":
            plan.append(ToolCall("WebFetch", {"url": "https://example.com", "prompt": "What does it say?"}))
        turn = len(self.results) + (1 if last_tool_output(request["body"]) is not None else 0)
        if turn > len(self.results):
            self.results.append(last_tool_output(request["body"]) or "")
        step = plan[turn] if turn < len(plan) else Reply("Done.")
        return step(request) if callable(step) else step


@pytest.mark.rootfs
@pytest.mark.parametrize("name", sorted(AGENTS))
def test_a_hostile_session_gets_nothing_out(name: str, tmp_path: Path, practice: Path) -> None:
    env_dir = _env_dir()
    hostile = Hostile(name)
    with ScriptedLLM([hostile] * 20) as model:
        hostile.port = int(model.base_url.rsplit(":", 1)[1])
        result = _run(_agent(tmp_path, name), model, practice, tmp_path / "runs", env_dir, "--competitions", COMPS[0])
    assert result.returncode == 0, result.stderr[-3000:]
    assert len(hostile.results) == (4 if name == "claude-code" else 3), hostile.results
    web, environ, upstream = hostile.results[:3]
    assert "Example Domain" not in web and re.search(r"URLError|Errno|unreachable|resolution", web), web
    assert "sk-podium-secret-1" not in environ, environ  # the proxy holds the key; the agent's is a placeholder
    assert "UPSTREAM OPEN" not in upstream and re.search(r"refused|Errno|timed out", upstream), upstream
    if name == "claude-code":
        assert "Example Domain" not in hostile.results[3] and "WebFetch" in hostile.results[3], hostile.results[3]
    run = tmp_path / "runs" / "default" / COMPS[0] / "0"
    for path in run.rglob("*"):
        if path.is_file() and not path.is_symlink() and path.stat().st_size < 50 << 20:
            assert b"sk-podium-secret-1" not in path.read_bytes(), path
