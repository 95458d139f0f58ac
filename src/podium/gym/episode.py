"""One episode as one podium run: staged in the store, its sandbox running the shell server for as long as the
episode goes, graded and landed (:meth:`podium.store.RunStore.land`) when it ends.

The pieces are :mod:`podium.run`'s own: :func:`~podium.run.sandboxed.sandbox_setup` (folders, instructions,
mounts, environment, limits), :func:`~podium.run.sandboxed.run_services` (the validation endpoint and hold-out
scorer), :func:`~podium.run.sandboxed.run_in_sandbox` (the sandbox, which enforces the episode's whole wall time),
:func:`~podium.run.execute.fill_record` and :func:`~podium.run.execute.grade_run`. Only the command differs: the
shell server (``/home/podium_shell.py``), which connects back to a socket of this process and runs the policy's
commands one at a time.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from podium.agents import LLMConfig
from podium.competition import Competition
from podium.errors import PodiumError
from podium.gym.policy_llm import PolicyModel
from podium.gym.shell import ShellChannel, ShellGone
from podium.paths import RunPaths
from podium.records import GradeReport, RunRecord
from podium.run.config import RunConfig
from podium.run.execute import failed_record, fill_record, grade_run, new_record
from podium.run.sandboxed import SandboxSetup, run_in_sandbox, run_services, sandbox_setup
from podium.sandbox import ExecResult, Mount
from podium.services import sandbox_file
from podium.store import RunStore

__all__ = ["STEPS_FILE", "Episode"]

STEPS_FILE = "gym_steps.jsonl"
#: How long the sandbox may take to start and its shell server to connect.
_START_TIMEOUT_S = 120.0
#: How long the sandbox may take to end once its shell server was told to exit.
_END_TIMEOUT_S = 60.0


class Episode:
    """A running episode of ``competition`` with ``seed``: its run staged in ``store`` under ``config``."""

    #: What the task changes in the grade before the run lands (a holdout grade has no leaderboard placement).
    adjust_grade: Callable[[GradeReport], None] | None = None

    def __init__(
        self,
        config: RunConfig,
        competition: Competition,
        seed: int,
        store: RunStore,
        llm: LLMConfig | None = None,
        grade: bool = True,
    ) -> None:
        self.config, self.competition, self.seed, self.store = config, competition, seed, store
        self.grade = grade  # False on a cluster node: the driver, which holds the answers, grades (podium.gym.remote)
        self.llm = llm  # the policy's model (podium.gym.policy_llm), or None
        self.policy: PolicyModel | None = None
        self.final = RunPaths(store.run_dir(config.run_group, competition.id, seed))
        self.staging = RunPaths(store.stage(config.run_group, competition.id, seed))
        self.record = new_record(config, competition, seed, ())
        self.result: ExecResult | None = None
        self.error: BaseException | None = None
        self.landed: Path | None = None
        self._stack = contextlib.ExitStack()
        self._thread: threading.Thread | None = None
        self.started = datetime.now(UTC)
        self._t0 = time.monotonic()
        self.setup: SandboxSetup | None = None
        self.server: Any = None
        self.proxy: Any = None
        self.channel: ShellChannel | None = None

    def start(self) -> None:
        """Start the sandbox and wait for its shell server; a failure lands the run as a harness error and raises."""
        try:
            setup = self.setup = sandbox_setup(self.config, self.competition, self.seed, self.staging, ())
            self.channel = ShellChannel(setup.socket_dir / "shell.sock")
            setup.mounts += [
                Mount(setup.socket_dir / "shell.sock", "/home/podium_shell.sock"),
                Mount(sandbox_file("podium_shell.py"), "/home/podium_shell.py"),
            ]
            self.server, self.proxy = self._stack.enter_context(
                run_services(self.config, self.competition, setup, self.staging)
            )
            self._stack.callback(self.channel.close)
            if self.llm is not None:  # the policy's model: on the host only, never mounted into the sandbox
                self.policy = PolicyModel(self.llm, setup.socket_dir / "policy-llm.sock", self.staging.root).start()
                self._stack.callback(self.policy.stop)
            self.started = datetime.now(UTC)
            self._t0 = time.monotonic()
            self._thread = threading.Thread(target=self._sandbox, name=f"podium-gym-{self.seed}", daemon=True)
            self._thread.start()
            self.channel.accept(_START_TIMEOUT_S, self._thread.is_alive)
        except BaseException as error:
            self._abort(error)
            raise

    def _sandbox(self) -> None:
        assert self.setup is not None
        try:
            self.result = run_in_sandbox(self.config, self.setup, self.staging)
        except BaseException as error:  # handed to the thread that lands the run
            self.error = error

    def elapsed(self) -> float:
        return time.monotonic() - self._t0

    def time_left(self) -> float:
        return self.config.time_limit - self.elapsed()

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def request(self, message: dict[str, Any], timeout: float, max_bytes: int) -> dict[str, Any]:
        """One request to the shell server (raises :class:`ShellGone` when it is gone or does not answer)."""
        assert self.channel is not None
        return self.channel.request(message, timeout, max_bytes)

    def log_step(self, entry: dict[str, Any]) -> None:
        """One line of ``gym_steps.jsonl`` in the run's folder."""
        with open(self.staging.root / STEPS_FILE, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry, ensure_ascii=False) + "\n")

    def finish(
        self, gym: dict[str, Any], reward: Callable[[GradeReport | None], float], last: dict[str, Any] | None
    ) -> RunRecord:
        """End the sandbox (its shell server told to exit), grade what is in place, and land the run with ``gym``
        as its record's ``gym`` (its ``reward`` set from the grade) and ``last`` as the last line of its steps
        (its ``reward`` set too); returns the landed record. A harness failure is landed as such and raised."""
        self._stop_sandbox()
        try:
            self._stack.close()
            if self.error is not None:
                raise self.error
            if self.result is None:
                raise ShellGone("the sandbox did not end")
            assert self.setup is not None and self.server is not None
            proxy = self.policy or self.proxy
            llm = proxy.summary() if proxy is not None else None
            fill_record(
                self.config,
                self.record,
                self.staging,
                self.result,
                self.server.calls,
                llm,
                self.started,
                self.setup.isolation,
            )
            if self.grade:
                grade_run(self.config, self.competition, self.record, self.staging, self.final)
                if self.adjust_grade is not None and self.record.grade is not None:
                    self.adjust_grade(self.record.grade)
        except BaseException as error:
            self._abort(error, gym, last)
            raise
        gym["reward"] = reward(self.record.grade) if self.grade else None
        self.record.gym = gym
        if last is not None:
            self.log_step({**last, "reward": gym["reward"]})
        self.landed = self.store.land(self.staging.root, self.record)
        return self.record

    def _stop_sandbox(self) -> None:
        if self.channel is not None and self.alive:
            with contextlib.suppress(PodiumError, OSError):
                self.request({"op": "exit"}, 5.0, 1024)
            self.channel.close()
        if self._thread is not None:
            self._thread.join(_END_TIMEOUT_S)
            if self._thread.is_alive():
                self.error = ShellGone(f"the sandbox did not end within {_END_TIMEOUT_S:.0f} s of its shell's exit")

    def _abort(
        self, error: BaseException, gym: dict[str, Any] | None = None, last: dict[str, Any] | None = None
    ) -> None:
        """Land the run as a harness error (what the sandbox left stays for the diagnosis)."""
        with contextlib.suppress(BaseException):
            self._stop_sandbox()
        with contextlib.suppress(BaseException):
            self._stack.close()
        record = failed_record(self.record, error, self.staging)
        record.gym = gym
        if last is not None:
            with contextlib.suppress(OSError):
                self.log_step({**last, "error": f"harness error: {error}"})
        with contextlib.suppress(Exception):
            self.landed = self.store.land(self.staging.root, record)
