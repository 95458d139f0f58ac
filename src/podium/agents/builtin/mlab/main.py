"""podium's implementation of the MLAgentBench research-agent design (Huang et al., 2023), written for
podium from the paper's description; not MLAgentBench's code or prompts.

Each step the model answers with a Reflection, a Research Plan and Status, a Fact Check, a Thought,
an Action and its Action Input (JSON); the action runs (:mod:`actions`) and its observation goes
into the next prompt along with the research log (:mod:`research_log`), compressed when long. A
malformed answer is asked for again (``MLAB_RETRIES`` times); when every try fails the agent stops.

Settings (agent.yaml's ``env:``): ``MLAB_STEPS`` (2,000), ``MLAB_RETRIES`` (10), ``MLAB_MAX_TOKENS``
(16,384: an answer's cap), ``MLAB_STEP_TIMEOUT`` (seconds one script may run; else the time left),
``MLAB_LOG_CHARS`` (the research log's size before it is compressed), ``MLAB_MODEL``, ``MLAB_MODEL_RETRIES``
(a failed model call's tries again, with backoff; 6),
``MLAB_FILE_ACTIONS`` (1: offer Read File, Write File and Append File too; see :mod:`actions`); from
podium: ``TIME_LIMIT_SECS``, ``HARDWARE``, ``SEED`` (the model's sampling seed, through
``podium_llm``), the LLM proxy.

The submission: the sample submission is in place in the first seconds. After each script runs,
``submission.csv`` in the working folder and ``/home/submission/submission.csv`` are checked
through the validation endpoint when they changed; the latest valid one is placed (atomically, with
a snapshot) and an invalid one never stays in place. The observation says which.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.append(os.environ.get("PODIUM_HOME", "/home"))  # podium_submission.py, podium_llm.py

from actions import ACTIONS, ActionError, Tools, describe_actions, offered
from answer import Malformed, Step, parse
from podium_llm import BudgetSpent, LLMClient, ModelError
from podium_submission import Submission
from research_log import Entry, ResearchLog

HOME = Path(os.environ.get("MLAB_HOME", "/home"))
DATA, CODE, LOGS = HOME / "data", HOME / "code", HOME / "logs"
PROMPTS = Path(__file__).parent / "prompts"


def _log(message: str) -> None:
    print(f"[mlab {time.strftime('%H:%M:%S')}] {message}", flush=True)


def _fill(prompt: str, **values: object) -> str:
    return (PROMPTS / f"{prompt}.md").read_text(encoding="utf-8").format(**values)


def _duration(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 120 else f"{seconds:.0f} s"


def _packages() -> str:
    from importlib import metadata

    names = sorted({d.metadata["Name"].lower() for d in metadata.distributions() if d.metadata["Name"]})
    return ", ".join(names[:80]) or "the standard library only"


def _fingerprint(path: Path) -> str | None:
    if path.is_symlink() or not path.is_file():
        return None
    return hashlib.sha256(path.read_bytes()).hexdigest()


class Research:
    def __init__(self) -> None:
        self.started = time.monotonic()
        self.limit = float(os.environ.get("TIME_LIMIT_SECS") or 3600)
        self.margin = min(600.0, max(20.0, 0.05 * self.limit))
        self.steps = int(os.environ.get("MLAB_STEPS") or 2000)
        self.retries = int(os.environ.get("MLAB_RETRIES") or 10)
        self.script_limit = float(os.environ.get("MLAB_STEP_TIMEOUT") or self.limit)
        self.hardware = os.environ.get("HARDWARE", "unknown hardware")
        self.log = ResearchLog(LOGS, budget_chars=int(os.environ.get("MLAB_LOG_CHARS") or 20_000))
        self.submission = Submission(HOME / "submission" / "submission.csv", LOGS / "snapshots", self.started)
        self.last_valid = LOGS / "mlab" / "last_valid_submission.csv"
        self.candidates = (CODE / "submission.csv", self.submission.target)
        self.seen: dict[Path, str | None] = {}
        CODE.mkdir(parents=True, exist_ok=True)
        self.task = self._task()
        self.offered = offered(os.environ.get("MLAB_FILE_ACTIONS") == "1")
        self.tools = Tools(CODE, None, self.script_timeout, readable=(HOME,), task=self.task,
                           research_log=self.log.text)  # fmt: skip

    def _task(self) -> str:
        parts = []
        for path in (HOME / "instructions.md", DATA / "description.md"):
            if path.is_file():
                parts.append(path.read_text(encoding="utf-8", errors="replace"))
        return "\n\n".join(parts) or "See the files in /home/data."

    def time_left(self) -> float:
        return self.limit - (time.monotonic() - self.started)

    def script_timeout(self) -> float:
        return max(10.0, min(self.script_limit, self.time_left() - self.margin))

    def run(self) -> int:
        if self.submission.start_with_sample(DATA):
            self._keep_valid(self.submission.target)
            _log("the sample submission is in place")
        self.seen = {p: _fingerprint(p) for p in self.candidates}
        try:
            client = LLMClient.from_environment("MLAB", 16384)
        except ModelError as error:
            _log(f"no model: {error}; the sample submission stays")
            return 0
        self.tools.client = client
        _log(f"model {client.model} ({client.provider}); {_duration(self.limit)} in all, at most {self.steps} steps")
        for number in range(1, self.steps + 1):
            if self.time_left() < self.margin + 30:
                _log("time is nearly up: stopping with the latest valid submission in place")
                break
            try:
                entry = self.step(number, client)
            except BudgetSpent as error:
                _log(f"the model budget is spent ({error}): stopping with the latest valid submission in place")
                break
            except ModelError as error:
                _log(f"the model cannot be reached any more ({error}): stopping")
                break
            if entry.failure is not None and entry.operator == "malformed":
                _log(f"step {number}: {entry.failure}: stopping")
                break
            if entry.operator == "Final Answer":
                _log(f"step {number}: final answer")
                break
        _log(f"{len(self.log.steps)} step(s), {client.calls} model call(s), {client.retried} retried, "
             f"{client.input_tokens} + {client.output_tokens} tokens, {self.log.compressions} log compression(s); "
             f"submission from {self.submission.placed_from}")  # fmt: skip
        return 0

    def step(self, number: int, client: LLMClient) -> Entry:
        tokens = (client.input_tokens, client.output_tokens)
        began = time.monotonic()
        entry = Entry(number, number - 1 if number > 1 else None, "malformed", round(began - self.started, 2))
        parsed, answer = self._ask(client, entry)
        if parsed is None:
            entry.failure = f"no usable answer in {self.retries + 1} tries: {entry.failure}"
            entry.is_bug = True
        else:
            entry.operator, entry.action_input = parsed.action, parsed.action_input
            entry.reflection, entry.plan, entry.fact_check, entry.thought = (
                parsed.reflection, parsed.plan, parsed.fact_check, parsed.thought)  # fmt: skip
            entry.answer, entry.failure = answer, None
            self._act(entry)
        entry.seconds = round(time.monotonic() - began, 2)
        entry.input_tokens, entry.output_tokens = client.input_tokens - tokens[0], client.output_tokens - tokens[1]
        self.log.add(entry)
        if self.log.compress(lambda text, words: self._summarise(client, text, words)):
            _log(f"the research log is compressed ({self.log.compressions} time(s))")
        self.log.save()
        _log(f"step {number}: {entry.operator} ({entry.seconds:.1f} s){' [error]' if entry.is_bug else ''}")
        return entry

    def _ask(self, client: LLMClient, entry: Entry) -> tuple[Step | None, str]:
        prompt = _fill(
            "step", task=self.task, workspace=CODE, packages=_packages(), hardware=self.hardware,
            time_left=_duration(self.time_left()), step_minutes=f"{self.script_timeout() / 60:.0f}",
            actions=describe_actions(self.offered), research_log=self.log.text(),
            recent_steps=self.log.recent_steps(),
        )  # fmt: skip
        system = (PROMPTS / "system.md").read_text(encoding="utf-8")
        asked = prompt
        inputs = {name: action.inputs for name, action in ACTIONS.items()}
        for attempt in range(self.retries + 1):
            text = client.complete(system, asked).text
            try:
                return parse(text, inputs), text
            except Malformed as error:
                entry.retries, entry.failure, entry.answer = attempt + 1, str(error), text
                repair = _fill("repair", problem=error, names=", ".join(self.offered))
                asked = f"{prompt}\n\nYour previous answer was:\n{text[:4000]}\n\n{repair}"
        return None, entry.answer

    def _act(self, entry: Entry) -> None:
        action = ACTIONS[entry.operator]
        named = entry.action_input.get("script_name") or entry.action_input.get("file_name")
        if isinstance(named, str) and named.endswith(".py"):
            entry.code_file = str(CODE / named) if not named.startswith("/") else named
        self.tools.completions = []
        try:
            entry.output_tail = action.run(self.tools, entry.action_input)
        except ActionError as error:
            entry.output_tail, entry.is_bug = f"Error: {error}", True
        except OSError as error:
            entry.output_tail, entry.is_bug = f"Error: {error.strerror or error}", True
        if entry.operator == "Execute Script":
            entry.is_bug = "(exit code 0)" not in entry.output_tail.split("\n", 1)[0]
        if entry.operator in ("Execute Script", "Final Answer", "Write File", "Copy File"):
            said = self._check_submission(entry)
            if said:
                entry.output_tail += "\n\n" + said

    def _check_submission(self, entry: Entry) -> str:
        """Validate and place a changed submission.csv; what the model should be told."""
        notes = []
        for path in self.candidates:
            now = _fingerprint(path)
            if now is None or now == self.seen.get(path):
                continue
            valid, said = self.submission.validate(path)
            entry.validation = said[-500:]
            if valid:
                self.submission.place(path, f"step{entry.id:04d}")
                self._keep_valid(path)
                entry.valid = True
                notes.append(f"{path} passed the validation endpoint and is now the submission.")
            else:
                notes.append(f"{path} was NOT accepted by the validation endpoint: {said[-500:]}")
                if path == self.submission.target and self.last_valid.is_file():
                    self.submission.place(self.last_valid, "restored")
                    notes[-1] += " The last valid submission is back in its place."
            self.seen = {p: _fingerprint(p) for p in self.candidates}
        return "\n".join(notes)

    def _keep_valid(self, path: Path) -> None:
        self.last_valid.parent.mkdir(parents=True, exist_ok=True)
        partial = self.last_valid.with_suffix(".partial")
        shutil.copyfile(path, partial)
        partial.replace(self.last_valid)

    def _summarise(self, client: LLMClient, text: str, words: int) -> str | None:
        system = (PROMPTS / "system.md").read_text(encoding="utf-8")
        try:
            return client.complete(system, _fill("compress", log=text, words=words)).text
        except BudgetSpent:
            raise
        except ModelError:
            return None


def main() -> int:
    try:
        return Research().run()
    except Exception:  # the agent itself failed: what is in place stays the submission
        traceback.print_exc()
        return 1


if __name__ == "__main__":
    sys.exit(main())
