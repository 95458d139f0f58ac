"""One episode as one podium run: staged in the store, its sandbox running the shell server for as long as the
episode goes, graded and landed (:meth:`podium.store.RunStore.land`) when it ends.

The pieces are :mod:`podium.run`'s own: :func:`~podium.run.sandboxed.sandbox_setup` (folders, instructions,
mounts, environment, limits), :func:`~podium.run.sandboxed.run_services` (the validation endpoint and hold-out
scorer), :func:`~podium.run.sandboxed.run_in_sandbox` (the sandbox, which enforces the episode's whole wall time),
:func:`~podium.run.execute.fill_record` and :func:`~podium.run.execute.grade_run`. Only the command differs: the
shell server (``/home/podium_shell.py``), which connects back to a socket of this process and runs the policy's
commands one at a time.

An episode started always ends one of two ways: landed (graded; or as a harness error, which never replaces a
finished run of the same seed: that run stays and the failed one is removed), or discarded at Ctrl-C
(``KeyboardInterrupt``; :meth:`Episode.discard`), which lands nothing and leaves no staging folder. The lines of
``gym_steps.jsonl`` hold the policy's text, so they are written by :func:`json_line`, which any reader takes back.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import shutil
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
from podium.untrusted import RECORD_MAX_BYTES, UntrustedJSONError, read_json

__all__ = ["STEPS_FILE", "Episode", "json_line"]

STEPS_FILE = "gym_steps.jsonl"
#: How long the sandbox may take to start and its shell server to connect.
_START_TIMEOUT_S = 120.0
#: How long the sandbox may take to end once its shell server was told to exit.
_END_TIMEOUT_S = 60.0
_SURROGATES = re.compile("[\ud800-\udfff]")


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
            handle.write(json_line(entry) + "\n")

    def finish(
        self,
        gym: dict[str, Any],
        reward: Callable[[GradeReport | None], float],
        last: dict[str, Any] | None,
        told: Callable[[GradeReport | None, float | None], str] | None = None,
    ) -> RunRecord:
        """End the sandbox (its shell server told to exit), grade what is in place, and land the run with ``gym``
        as its record's ``gym`` (its ``reward`` set from the grade) and ``last`` as the last line of its steps
        (its ``reward`` set too, and its ``observation`` to ``told(grade, reward)`` where given); returns the
        landed record. A harness failure is landed as such and raised."""
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
            gym["reward"] = reward(self.record.grade) if self.grade else None
            self.record.gym = gym
            if last is not None:
                if told is not None:
                    last["observation"] = told(self.record.grade if self.grade else None, gym["reward"])
                self.log_step({**last, "reward": gym["reward"]})
            self.landed = self.store.land(self.staging.root, self.record)
        except BaseException as error:
            self._abort(error, gym, last)
            raise
        return self.record

    def discard(self) -> None:
        """End the episode without landing it (Ctrl-C): the shell's connection is closed, so its server kills the
        command in progress and ends, and with it the sandbox; then the services stop and the staging folder goes."""
        try:
            if self.channel is not None:
                self.channel.close()
            if self._thread is not None:
                self._thread.join(_END_TIMEOUT_S)
        finally:
            with contextlib.suppress(Exception):
                self._stack.close()
            shutil.rmtree(self.staging.root, ignore_errors=True)

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
        """Land the run as a harness error (what the sandbox left stays for the diagnosis), unless a finished run of
        the same seed is in place: that one stays, and this one's folder is removed. Ctrl-C lands nothing."""
        if isinstance(error, KeyboardInterrupt):
            self.discard()
            return
        if self._holds_finished():
            self.discard()
            return
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

    def _holds_finished(self) -> bool:
        """Whether a run of this seed that is not a harness error has landed already (its record is podium's)."""
        try:
            landed = read_json(self.final.root / "record.json", max_bytes=RECORD_MAX_BYTES)
        except UntrustedJSONError:
            return False
        return isinstance(landed, dict) and landed.get("status") not in (None, "harness_error")


def json_line(value: Any) -> str:
    """``value`` as one line of JSON that every reader takes back: a lone surrogate (the policy's ``"\\ud800"``,
    which UTF-8 cannot encode) written as the text ``\\ud800``, a number that is not finite as its text (``inf``),
    an integer too long to print as its size, and anything JSON has no form for as its type's name."""
    return json.dumps(_plain(value), ensure_ascii=False, allow_nan=False)


def _plain(value: Any) -> Any:
    if isinstance(value, str):
        return _SURROGATES.sub(lambda m: f"\\u{ord(m.group()):04x}", value) if _SURROGATES.search(value) else value
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, int):
        return value if value.bit_length() <= 4000 else f"an integer of {value.bit_length()} bits"
    if isinstance(value, dict):
        return {_plain(k if isinstance(k, str) else str(_plain(k))): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return f"<{type(value).__name__}>"
