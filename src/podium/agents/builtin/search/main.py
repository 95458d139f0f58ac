"""podium's search agent: a solution-tree search with a model writing the code (see README.md here).

Runs inside podium's sandbox. Settings come from the environment (agent.yaml's ``env:``):
``SEARCH_POLICY`` (greedy, evolutionary), ``SEARCH_DRAFTS``, ``SEARCH_DEBUG_PROB``,
``SEARCH_MAX_DEBUG_DEPTH``, ``SEARCH_STEPS``, ``SEARCH_STEP_TIMEOUT`` (seconds one node's code may
run), ``SEARCH_MAX_TOKENS`` (an answer's cap), ``SEARCH_MODEL`` (else the first of ``PODIUM_LLM_MODELS``); and from podium: ``TIME_LIMIT_SECS``,
``HARDWARE``, the LLM proxy.
"""

from __future__ import annotations

import os
import re
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.append(os.environ.get("PODIUM_HOME", "/home"))  # podium_submission.py, shipped by podium

from journal import Journal, Node
from operators import Context, Unusable, review, write_code
from podium_llm import BudgetSpent, LLMClient, ModelError
from podium_submission import Submission
from policies import POLICIES
from runner import run_code

HOME = Path(os.environ.get("SEARCH_HOME", "/home"))
DATA, CODE, LOGS = HOME / "data", HOME / "code", HOME / "logs"


def _log(message: str) -> None:
    print(f"[search {time.strftime('%H:%M:%S')}] {message}", flush=True)


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 120 else f"{seconds:.0f} s"


def _memory_cap(hardware: str) -> int | None:
    """Three quarters of the run's memory, as HARDWARE states it: room for the agent itself."""
    match = re.search(r"(\d+(?:\.\d+)?) GiB memory", hardware)
    return int(float(match.group(1)) * 2**30 * 0.75) if match else None


def _data_files() -> str:
    lines = []
    for path in sorted(DATA.rglob("*"))[:200]:
        if path.is_file():
            lines.append(f"- {path.relative_to(DATA)} ({path.stat().st_size:,} bytes)")
    return "\n".join(lines)


def _packages() -> str:
    from importlib import metadata

    names = sorted({d.metadata["Name"].lower() for d in metadata.distributions() if d.metadata["Name"]})
    return ", ".join(names[:80]) or "the standard library only"


class Search:
    def __init__(self) -> None:
        self.started = time.monotonic()
        self.limit = float(os.environ.get("TIME_LIMIT_SECS") or 3600)
        self.margin = min(600.0, max(20.0, 0.05 * self.limit))
        self.step_timeout = float(os.environ.get("SEARCH_STEP_TIMEOUT") or max(60.0, self.limit / 4))
        self.steps = int(os.environ.get("SEARCH_STEPS") or 500)
        hardware = os.environ.get("HARDWARE", "unknown hardware")
        self.memory_cap = _memory_cap(hardware)
        policy = POLICIES[os.environ.get("SEARCH_POLICY", "greedy")]
        self.policy = policy(
            drafts=int(os.environ.get("SEARCH_DRAFTS") or 5),
            debug_prob=float(os.environ.get("SEARCH_DEBUG_PROB") or 1.0),
            max_debug_depth=int(os.environ.get("SEARCH_MAX_DEBUG_DEPTH") or 3),
            seed=int(os.environ.get("SEED") or 0),
        )
        description = DATA / "description.md"
        task = description.read_text(encoding="utf-8") if description.is_file() else "See the files in /home/data."
        self.context = Context(task=task, data_files=_data_files(), hardware=hardware, packages=_packages())
        self.journal = Journal(LOGS / "journal.jsonl")
        self.submission = Submission(HOME / "submission" / "submission.csv", LOGS / "snapshots", self.started)
        self.best: Node | None = None

    def time_left(self) -> float:
        return self.limit - (time.monotonic() - self.started)

    def run(self) -> int:
        if self.submission.start_with_sample(DATA):
            _log("the sample submission is in place")
        try:
            client = LLMClient.from_environment()
        except ModelError as error:
            _log(f"no model: {error}; the sample submission stays")
            return 0
        _log(
            f"model {client.model} ({client.provider}); {_minutes(self.limit)} in all, policy {type(self.policy).__name__}"
        )
        for _ in range(self.steps):
            if self.time_left() < self.margin + 30:
                _log("time is nearly up: stopping with the best submission in place")
                break
            try:
                self.step(client)
            except BudgetSpent as error:
                _log(f"the model budget is spent ({error}): stopping with the best submission in place")
                break
            except ModelError as error:
                _log(f"the model cannot be reached any more ({error}): stopping")
                break
        _log(f"{len(self.journal.nodes)} node(s), {client.calls} model call(s), {client.retried} retried, "
             f"{client.input_tokens} + {client.output_tokens} tokens; submission from {self.submission.placed_from}")  # fmt: skip
        return 0

    def step(self, client: LLMClient) -> None:
        operator, parent = self.policy.next(self.journal)
        node = self.journal.new(operator, parent, time.monotonic() - self.started)
        folder = CODE / "nodes" / f"{node.id:04d}"
        folder.mkdir(parents=True, exist_ok=True)
        timeout = max(10.0, min(self.step_timeout, self.time_left() - self.margin))
        values = {"step_minutes": f"{timeout / 60:.0f}", "time_left": _minutes(self.time_left())}
        if operator == "improve":
            values["memory"] = self.journal.memory()
        try:
            code = write_code(client, self.context, node, parent, **values)
        except Unusable as error:
            node.failure = str(error)
            self.journal.write(node)
            return
        path = folder / "solution.py"
        path.write_text(code, encoding="utf-8")
        node.code_file = str(path)
        _log(f"node {node.id} ({operator}{f' of {parent.id}' if parent else ''}): running for at most {timeout:.0f} s")
        result = run_code(path, folder, timeout_s=timeout, memory_bytes=self.memory_cap)
        node.seconds, node.exit_code, node.killed_for = round(result.seconds, 2), result.exit_code, result.killed_for
        node.output_tail = result.output_tail
        produced = folder / "submission.csv"
        said = "yes" if produced.is_file() else "no"
        try:
            verdict = review(client, self.context, node, code, said)
        except Unusable as error:
            node.failure = str(error)
            self.journal.write(node)
            return
        node.is_bug = bool(verdict["is_bug"]) or result.exit_code != 0 or not produced.is_file()
        node.summary, node.lower_is_better = str(verdict["summary"]), bool(verdict["lower_is_better"])
        node.metric = None if verdict["metric"] is None else float(verdict["metric"])
        if not node.is_bug and node.metric is not None:
            node.valid, node.validation = self.submission.validate(produced)
        if self.journal.better(node, self.best):
            self.best = node
            self.submission.place(produced, f"node{node.id:04d}", node.metric)
            _log(f"node {node.id} is the best so far (metric {node.metric:.6g}); its submission is in place")
        self.journal.write(node)


def main() -> int:
    try:
        return Search().run()
    except Exception:  # the search itself failed: what is in place stays the submission
        traceback.print_exc()
        return 1


if __name__ == "__main__":
    sys.exit(main())
