"""The six scaffolds side by side (issue 22, issue 31 §4, performance): each one's own time and tokens per
step, outside the model call, and its environment's build time and size.

    OMP_NUM_THREADS=1 python benchmarks/scaffolds.py [--steps 8] [--agent NAME ...] [--out benchmarks/scaffolds.md]

One command runs them all (or the ``--agent``s named), the way a researcher would (``podium run --agent aide
--agent mlab --agent openhands --agent search --agent claude-code --agent codex --model scripted-1``, bwrap,
practice-wine; ``PODIUM_ENV_DIR`` must hold, or will build, every environment they name), against the
scripted model server
(:class:`podium.testing.ScriptedLLM`), whose answers are immediate; each scaffold's steps run a trivial
script (it copies the sample submission). Per scaffold, from its run's record, ``llm_calls.jsonl`` and
journal:

- *startup*: from the sandbox's start to the first model call (imports, reading the task);
- *per step*: (the agent's wall time - startup - the model calls' own seconds) / steps: what the
  scaffold spends per step around the model, running the trivial script included;
- *tokens per step*: input and output tokens the scaffold sends and gets per step (its prompts' size);
- the environment's build time and size, from its ``podium-env.json`` (``PODIUM_ENV_DIR``; a missing
  environment is built by the run, and its build counted).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from podium.testing import Reply, ScriptedLLM, Shell, ToolCall, research_step  # noqa: E402

AGENTS = ("aide", "mlab", "openhands", "search", "claude-code", "codex")
#: The shell tool that tells a coding agent apart: Claude Code's, Codex's.
SHELLS = {"Bash": "claude-code", "exec_command": "codex", "shell": "codex", "shell_command": "codex"}
COMP = "practice-wine"
CODE = """\
import os, shutil
source = "/home/data/sample_submission.csv"
if not os.path.exists(source):
    source = "./input/sample_submission.csv"
os.makedirs("working", exist_ok=True)
shutil.copy(source, "submission.csv")
shutil.copy(source, "working/submission.csv")
print("holdout metric: 0.5")
print("Validation accuracy: 0.5")
"""


class Model:
    """Answers every scaffold with immediate, trivial steps, telling them apart by what they ask."""

    def __init__(self, steps: int) -> None:
        self.steps = steps
        self.turns: dict[str, int] = {}

    def _turn(self, who: str) -> int:
        self.turns[who] = self.turns.get(who, 0) + 1
        return self.turns[who]

    def __call__(self, request: dict[str, Any]) -> Any:
        body = request["body"]
        tools = [t.get("function", t).get("name") for t in body.get("tools") or []]
        prompt = str((body.get("messages") or body.get("input") or [{}])[-1].get("content"))
        coding = next((SHELLS[t] for t in tools if t in SHELLS), None)
        if coding is not None:  # Claude Code, Codex: one command a turn through their shell tool
            turn = self._turn(coding)
            if turn == 1:
                return Shell(f"mkdir -p /home/code && cat > /home/code/s.py <<'EOF'\n{CODE}EOF")(request)
            if turn <= self.steps:
                return Shell(
                    f"cd /home/code && python s.py && cp submission.csv /home/submission/ && echo turn {turn}"
                )(request)
            return Reply("done")
        if "terminal" in tools:  # OpenHands
            turn = self._turn("openhands")
            if turn == 1:
                return ToolCall("file_editor", {"command": "create", "path": "/home/code/s.py", "file_text": CODE})
            if turn <= self.steps:
                # a different command each turn: OpenHands stops a conversation that repeats itself
                command = f"cd /home/code && python s.py && cp submission.csv /home/submission/ && echo turn {turn}"
                return ToolCall("terminal", {"command": command})
            return ToolCall("finish", {"message": "done"})
        if tools:  # a review (AIDE, search)
            return ToolCall(
                "submit_review", {"is_bug": False, "summary": "ran", "metric": 0.5, "lower_is_better": False}
            )
        if "Research Plan and Status" in prompt and "Action Input" in prompt:  # mlab
            turn = self._turn("mlab")
            if turn == 1:
                return Reply(research_step("Write File", {"file_name": "s.py", "content": CODE}))
            if turn <= self.steps:
                return Reply(research_step("Execute Script", {"script_name": "s.py"}))
            return Reply(research_step("Final Answer", {"final_answer": "done"}))
        return Reply("A trivial baseline.\n```python\n" + CODE + "```")  # a draft (AIDE, search)


def _seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp).timestamp()


def _journal_steps(logs: Path) -> int:
    podium = logs / "journal.jsonl"
    if podium.is_file():
        return len({json.loads(line)["id"] for line in podium.read_text().splitlines() if line.strip()})
    aide = sorted(logs.glob("aide/*/journal.json"))
    return len(json.loads(aide[-1].read_text())["nodes"]) if aide else 0


def _environment(name: str | None, env_dir: Path) -> tuple[str, str]:
    for record in env_dir.glob("*/podium-env.json"):
        data = json.loads(record.read_text())
        if data.get("name") == name or (name and record.parent.name.startswith(f"{name}-")):
            built = data.get("build_seconds")
            return (f"{built:.0f}" if built else "-", f"{data['size_bytes'] / 2**20:.0f}")
    return "-", "-"


def _with_step_limit(agent: str, steps: int, base: Path) -> Path:
    """A copy of the built-in agent whose step limit is ``steps`` (AIDE's and search's are settings; mlab and
    OpenHands end when the scripted model gives their final answer)."""
    import shutil

    import yaml

    from podium.agents import BUILTIN

    folder = base / agent
    shutil.copytree(BUILTIN / agent.replace("-", "_"), folder)
    spec = yaml.safe_load((folder / "agent.yaml").read_text())
    spec["env"] = {**(spec.get("env") or {}), "STEP_LIMIT": str(steps), "SEARCH_STEPS": str(steps),
                   "SEARCH_DRAFTS": "1", "OMP_NUM_THREADS": "1"}  # fmt: skip
    (folder / "agent.yaml").write_text(yaml.safe_dump(spec))
    return folder


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--agent", action="append", choices=AGENTS, help="measure these (default: all six)")
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/podium-bench-practice"))
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "scaffolds.md")
    args = parser.parse_args()
    env_dir = Path(os.environ.get("PODIUM_ENV_DIR") or Path.home() / ".cache" / "podium" / "envs")
    runs = Path(f"/tmp/podium-bench-scaffolds-{os.getpid()}")
    if not (args.data_dir / COMP).is_dir():
        from podium import registry
        from podium.data.prepare import prepare_competition

        prepare_competition(registry.get(COMP), args.data_dir)
    env = {**os.environ, "OPENAI_API_KEY": "sk-bench", "ANTHROPIC_API_KEY": "sk-bench", "PYTHONPATH": str(ROOT / "src")}
    agents = tuple(args.agent or AGENTS)
    folders = [_with_step_limit(agent, args.steps, runs.with_name(runs.name + "-agents")) for agent in agents]
    with ScriptedLLM([Model(args.steps)] * 400) as model:
        command = [sys.executable, "-m", "podium", "run", *[a for folder in folders for a in ("--agent", str(folder))],
                   "--competitions", COMP, "--model", "scripted-1", "--base-url", model.base_url,
                   "--time-limit", "15m", "--data-dir", str(args.data_dir), "--runs-dir", str(runs)]  # fmt: skip
        started = time.monotonic()
        result = subprocess.run(command, capture_output=True, text=True, env=env)
        took = time.monotonic() - started
    if result.returncode != 0:
        print(result.stdout[-3000:], result.stderr[-3000:], file=sys.stderr)
    rows = []
    for agent in agents:
        run = runs / f"default-{agent}" / COMP / "0"
        record = json.loads((run / "record.json").read_text())
        calls = [json.loads(line) for line in (run / "llm_calls.jsonl").read_text().splitlines() if line.strip()]
        wall = record["agent_result"]["seconds"]
        begun = _seconds(record["finished_at"]) - wall
        startup = _seconds(calls[0]["time"]) - begun - calls[0]["seconds"] if calls else float("nan")
        model_s = sum(c["seconds"] for c in calls)
        n = max(1, _journal_steps(run / "logs"))
        tokens_in = sum(c["input_tokens"] for c in calls) / n
        tokens_out = sum(c["output_tokens"] for c in calls) / n
        built, size = _environment((record.get("environment") or {}).get("name"), env_dir)
        rows.append(
            f"| {agent} | {n} | {len(calls)} | {wall:.1f} | {startup:.1f} | {(wall - startup - model_s) / n:.2f} | "
            f"{tokens_in:.0f} | {tokens_out:.0f} | {(record.get('environment') or {}).get('name', 'host')} | "
            f"{built} | {size} | {'yes' if record['grade']['valid_submission'] else 'no'} |"
        )
    named = "".join(f" --agent {a}" for a in agents) if args.agent else ""
    text = (
        f"# The scaffolds side by side\n\n`OMP_NUM_THREADS=1 python benchmarks/scaffolds.py --steps {args.steps}{named}` "
        f"(one `podium run` with {len(agents)} `--agent`s, bwrap, {COMP}, the scripted model answering at once; "
        f"{took:.0f} s in all)\n\n"
        "| scaffold | steps | model calls | agent wall s | startup s | own s per step | input tokens per step | "
        "output tokens per step | environment | env build s | env MiB | valid |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n"
    )
    # the table a researcher gets from that one command: `podium report` across the four groups
    table = result.stdout[result.stdout.rfind("# ") :] if "# " in result.stdout else result.stdout[-4000:]
    text += "\n## What the command printed at the end (the report across the groups)\n\n```\n" + table.strip()
    text += "\n```\n"
    args.out.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
