"""The run-overhead benchmark's instruments (see ``run_overhead.py``): percentiles and Markdown tables, timers
wrapped at runtime around the functions a run calls (removed after), and the wrapper that times each run
``run_all`` makes.

Imported by ``run_overhead.py`` after it has put podium's ``src/`` first on ``sys.path``."""

from __future__ import annotations

import contextlib
import functools
import inspect
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import podium.data.verify
import podium.run.execute
import podium.run.schedule
import podium.sandbox
import podium.sandbox._bwrap
from podium.competition import Competition
from podium.records import RunRecord
from podium.run import RunConfig
from podium.sandbox._cgroup import RunCgroup
from podium.services import ValidationServer
from podium.store import RunStore

# --------------------------------------------------------------------------------------------
# Statistics and formatting


def pct(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100), linear interpolation between closest ranks."""
    xs = sorted(values)
    if len(xs) == 1:
        return xs[0]
    k = (len(xs) - 1) * q / 100
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.1f} ms"


def table(header: Sequence[str], rows: Sequence[Sequence[Any]], align: str = "") -> str:
    """A Markdown table; ``align`` has one letter per column (l or r), default: first left, the rest right."""
    align = align or "l" + "r" * (len(header) - 1)
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" if a == "l" else "---:" for a in align) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Runtime timers (no edits to src/: wrappers are installed on module and class attributes here)


class Timers:
    def __init__(self) -> None:
        self.seconds: dict[str, list[float]] = defaultdict(list)
        self._lock = threading.Lock()

    def add(self, name: str, seconds: float) -> None:
        with self._lock:
            self.seconds[name].append(seconds)

    def total(self, name: str) -> float:
        return sum(self.seconds.get(name, []))

    def clear(self) -> None:
        self.seconds.clear()


@contextlib.contextmanager
def wrapped(owner: Any, attribute: str, name: str, timers: Timers) -> Iterator[None]:
    """Time every call of ``owner.attribute`` (a function, method or classmethod) under ``name``."""
    static = inspect.getattr_static(owner, attribute)
    original = getattr(owner, attribute)

    def timed(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def inner(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                timers.add(name, time.perf_counter() - t0)

        return inner

    if isinstance(static, classmethod):
        replacement: Any = classmethod(timed(static.__func__))
    elif isinstance(static, staticmethod):
        replacement = staticmethod(timed(static.__func__))
    else:
        replacement = timed(static if inspect.isclass(owner) else original)
    setattr(owner, attribute, replacement)
    try:
        yield
    finally:
        setattr(owner, attribute, static)


# Top-level steps of run_one, then the steps inside BwrapSandbox.run (indented in the table).
RUN_ONE_STEPS = [
    (podium.data.verify, "verify", "verify prepared data (checksums of the public+private files)"),
    (ValidationServer, "start", "validation server start (bind socket, thread)"),
    (podium.sandbox, "get_sandbox", "get_sandbox('bwrap') (which bwrap; probe cached)"),
    (podium.sandbox._bwrap.BwrapSandbox, "run", "sandbox.run, total"),
    (ValidationServer, "stop", "validation server stop (shutdown, join)"),
    (podium.run.execute, "grade_isolated", "grade (a child process: read answers + submission, score, medals)"),
    (RunStore, "land", "land the run (record, fsync, rename, SQLite index)"),
]
SANDBOX_STEPS = [
    (podium.sandbox._bwrap.BwrapSandbox, "options", "bwrap options"),
    (RunCgroup, "create", "cgroup create (4 controllers, caps)"),
    (podium.sandbox._bwrap, "spawn_gated", "spawn gated /bin/sh (fork+exec)"),
    (RunCgroup, "enter", "cgroup enter (move pid)"),
    (podium.sandbox._bwrap, "watch", "watch = agent_result.seconds (bwrap setup, python3, dummy, exit)"),
    (RunCgroup, "kill_all", "cgroup kill_all"),
    (RunCgroup, "remove", "cgroup remove (rmdir x4)"),
]


@contextlib.contextmanager
def instrumented(timers: Timers) -> Iterator[None]:
    with contextlib.ExitStack() as stack:
        for owner, attribute, name in RUN_ONE_STEPS + SANDBOX_STEPS:
            stack.enter_context(wrapped(owner, attribute, name, timers))
        yield


class RunTimes:
    """A wrapper around ``podium.run.schedule.run_one`` that `run_all` picks up (it looks the name up per call)."""

    def __init__(self) -> None:
        self.rows: list[dict[str, float]] = []
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        original = podium.run.schedule.run_one

        def timed_run_one(
            config: RunConfig, competition: Competition, seed: int, store: RunStore, *more: Any
        ) -> RunRecord:  # more: run_all's GPU pool and Ctrl-C handler
            t0 = time.perf_counter()
            record = original(config, competition, seed, store, *more)
            t1 = time.perf_counter()
            with self._lock:
                self.rows.append(
                    {"seed": seed, "start": t0, "end": t1, "wall": t1 - t0, "agent": record.agent_result["seconds"]}
                )
            return record

        podium.run.schedule.run_one = timed_run_one
        try:
            yield
        finally:
            podium.run.schedule.run_one = original
