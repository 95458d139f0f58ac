"""`podium run`'s batch: which runs to do, on how many workers, and each one landed in the store.

:func:`run_batch` checks the group's settings (:mod:`podium.run.group`), sweeps what killed podiums
left, and runs what the group still lacks on ``workers`` threads; each run is staged, executed
(:func:`podium.run.execute.execute`) and landed in the store, which only the scheduler writes. A
progress line names the running runs every ``PODIUM_PROGRESS_SECONDS``; Ctrl-C stops the batch
cleanly (:mod:`podium.run.interrupt`).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from typing import Any

from podium import owner
from podium.agents import folder_digest
from podium.competition import Competition
from podium.environments import ensure as ensure_environment
from podium.errors import HarnessError, PodiumError
from podium.paths import RunPaths
from podium.records import RunRecord
from podium.run import group as run_group
from podium.run.config import RunConfig, environment_profile
from podium.run.execute import discard, execute, failed_record, new_record
from podium.run.gpus import GpuPool, RunInterrupted
from podium.run.images import resolve_image
from podium.run.interrupt import Stop
from podium.run.outcome import outcome
from podium.store import RunStore
from podium.units import duration

__all__ = ["Batch", "begin_batch", "run_all", "run_batch", "run_one", "settle", "sweep_leftovers"]


def run_one(
    config: RunConfig,
    competition: Competition,
    seed: int,
    store: RunStore,
    gpus: GpuPool | None = None,
    stop: Stop | None = None,
) -> RunRecord:
    """Run the agent once on one competition; returns the finished run's record, landed in the store.

    With ``stop`` (a batch's Ctrl-C), a run that is interrupted leaves nothing behind and raises
    :class:`RunInterrupted`; a finished run that replaces an earlier one (``--redo``) swaps places
    with it, so one of the two is always in place. A run that fails because of podium, its data or
    the engine is landed as ``status: harness_error`` and the error raised.
    """
    if stop is not None and stop.event.is_set():
        raise RunInterrupted
    if config.gpus and gpus is None:
        gpus = GpuPool.for_config(config)
    cancel = stop.event if stop is not None else None
    with gpus.take(cancel) if gpus is not None else contextlib.nullcontext(()) as gpu_ids:
        return _run_one(config, competition, seed, store, gpu_ids, stop)


def _run_one(
    config: RunConfig, competition: Competition, seed: int, store: RunStore, gpu_ids: tuple[int, ...], stop: Stop | None
) -> RunRecord:
    from podium.data.verify import verify

    check = verify(competition, config.data_dir)
    if check.status != "ok":
        raise HarnessError(f"{competition.id}: prepared data failed verification: {'; '.join(check.problems)}")
    if stop is not None and stop.event.is_set():
        raise RunInterrupted
    final = RunPaths(store.run_dir(config.run_group, competition.id, seed))
    staging = RunPaths(store.stage(config.run_group, competition.id, seed))
    record = new_record(config, competition, seed, gpu_ids)
    landing = stop.landing if stop is not None else contextlib.nullcontext()
    try:
        execute(config, competition, record, staging, final, stop.event if stop is not None else None)
    except BaseException as error:
        if isinstance(error, RunInterrupted) or (stop is not None and stop.event.is_set()):
            discard(staging)  # killed by the Ctrl-C: nothing of it is kept
            raise RunInterrupted from None
        if isinstance(
            error, Exception
        ):  # podium, its data or the engine failed: recorded as such, never as the agent's
            with contextlib.suppress(Exception), landing:
                store.land(staging.root, failed_record(record, error, staging))
        raise
    with landing:
        store.land(staging.root, record)  # durably: record, rename (replacing a redone run), index; see podium.store
    return record


def sweep_leftovers(store: RunStore) -> None:
    """What podium processes killed mid-run left behind (never a live one's): staging folders, temporary
    folders and cgroups, told apart by their owner's token, not by age."""
    from podium.sandbox import sweep_abandoned

    store.sweep()
    owner.sweep_temp()
    sweep_abandoned()


class _Progress:
    """Every ``PODIUM_PROGRESS_SECONDS`` (default 60), a line saying which runs are going and for how long."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.finished = 0
        self.running: dict[str, float] = {}
        self.interval = float(os.environ.get("PODIUM_PROGRESS_SECONDS") or 60)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._report, name="podium-progress", daemon=True)

    def track(self, fn: Callable[..., Any], config: RunConfig, competition: Competition, seed: int, *args: Any) -> Any:
        key = f"{competition.ref} seed {seed}"
        with self._lock:
            self.running[key] = time.monotonic()
        try:
            return fn(config, competition, seed, *args)
        finally:
            with self._lock:
                self.running.pop(key, None)

    def _report(self) -> None:
        while not self._stop.wait(self.interval):
            with self._lock:
                now = time.monotonic()
                going = ", ".join(f"{key} ({duration(now - t0)})" for key, t0 in sorted(self.running.items()))
            if going:
                print(f"[{self.finished}/{self.total} done] running: {going}", file=sys.stderr, flush=True)

    def __enter__(self) -> _Progress:
        if self.interval > 0:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()


@dataclass
class Batch:
    """What one `podium run` command did."""

    pairs: list[tuple[Competition, int]]  # every (competition, seed) it named
    records: list[RunRecord] = field(default_factory=list)  # the runs it finished
    not_run: list[str] = field(default_factory=list)  # runs that could not run (an error of podium or its data)
    interrupted: bool = False  # stopped by Ctrl-C or SIGTERM
    exit_status: int = 130  # once interrupted: 128 + the signal (130 Ctrl-C, 143 SIGTERM)


def run_all(config: RunConfig, competitions: list[Competition]) -> list[RunRecord]:
    """Every (competition, seed) pair not finished yet; finished ones are skipped, not rerun."""
    return run_batch(config, competitions).records


def begin_batch(
    config: RunConfig, competitions: list[Competition], redo: run_group.Redo | None = None
) -> tuple[RunConfig, run_group.Plan, RunStore]:
    """What every batch does before its first run, wherever its runs go (threads here, or a cluster).

    Sweeps what killed podiums left, repairs the index, checks the group's settings
    (:func:`podium.run.group.plan`) and writes them, and readies the agent (its LLM key, image and
    environment) when there is something to run; returns the completed config, the plan and the store.
    """
    store = RunStore(config.runs_dir)
    sweep_leftovers(store)
    recovered = store.reconcile(config.run_group)
    if recovered:
        print(f"indexed {recovered} finished run(s) left unindexed by an interrupted session", file=sys.stderr)
    if config.agent_hash is None:
        config = replace(config, agent_hash=folder_digest(config.agent.folder, skip=[config.runs_dir]))
    profile = environment_profile(config)
    config = replace(config, env_digest=profile.digest if profile is not None else None)
    plan = run_group.plan(config, competitions, store, redo)
    for note in plan.notes:
        print(note, file=sys.stderr)
    todo = plan.todo
    redone = f" ({plan.redoing} of them again)" if plan.redoing else ""
    done_before = len(plan.pairs) - len(todo) + plan.redoing
    print(f"{done_before} of {len(plan.pairs)} run(s) already finished; running {len(todo)}{redone}", file=sys.stderr)
    if todo:
        if config.agent.llm is not None:
            config.agent.llm.check_prices()  # a cost budget needs every model's price
            config.agent.llm.api_key()  # a missing key stops the batch here, before any run starts
        config = resolve_image(config)
        if profile is not None:  # built here if missing, so no run needs the package index
            config = replace(config, environment=ensure_environment(profile))
    run_group.write(config.runs_dir / config.run_group, plan.document)
    return config, plan, store


def settle(
    batch: Batch,
    plan: run_group.Plan,
    config: RunConfig,
    position: str,
    pair: tuple[Competition, int],
    result: Callable[[], RunRecord],
) -> None:
    """One run of a batch is over: ``result()`` gives its landed record or raises why it did not land;
    the batch and the console hear of it (an interrupted run is not a result), and an unfinished
    ``--redo all`` strikes it off."""
    comp, seed = pair
    try:
        record = result()
    except RunInterrupted:
        return
    except PodiumError as exc:
        batch.not_run.append(f"{comp.ref} seed {seed}")
        print(
            f"{position} {comp.ref} seed {seed}: harness error (not the agent's; a rerun runs it again): {exc}",
            file=sys.stderr,
        )
        return
    except Exception:
        batch.not_run.append(f"{comp.ref} seed {seed}")
        print(f"{position} {comp.ref} seed {seed}: harness error:\n{traceback.format_exc()}", file=sys.stderr)
        return
    print(f"{position} {comp.ref} seed {seed}: {outcome(record)}", file=sys.stderr, flush=True)
    batch.records.append(record)
    if "pending_redo" in plan.document:
        run_group.landed(config.runs_dir / config.run_group, (comp.id, seed))


def run_batch(config: RunConfig, competitions: list[Competition], redo: run_group.Redo | None = None) -> Batch:
    """Run what the group still lacks of ``competitions`` x seeds (and what ``redo`` names again).

    The group is held for the whole batch (:func:`podium.run.group.batch_lock`: a second batch on it is refused),
    its settings are checked first (:func:`begin_batch`); Ctrl-C stops the batch cleanly
    (:class:`~podium.run.interrupt.Stop`) and the result says so.
    """
    gpus = GpuPool.for_config(config)  # a machine without the GPUs asked for is refused before anything is written
    with run_group.batch_lock(config.runs_dir / config.run_group):
        return _run_batch(config, competitions, redo, gpus)


def _completed(futures: Iterable[Future[Any]]) -> Iterator[Future[Any]]:
    """The futures as they complete, the main thread never blocked for more than a moment: the kernel may hand
    SIGINT or SIGTERM to any of the process's threads, and Python runs its handler only when the main thread runs
    again, so a main thread asleep in a lock until a run ends heard a SIGTERM minutes late (seen under load)."""
    pending = set(futures)
    while pending:
        finished, pending = wait(pending, timeout=0.25, return_when=FIRST_COMPLETED)
        yield from finished


def _run_batch(
    config: RunConfig, competitions: list[Competition], redo: run_group.Redo | None, gpus: GpuPool | None
) -> Batch:
    config, plan, store = begin_batch(config, competitions, redo)
    todo = plan.todo
    batch = Batch(plan.pairs)
    if not todo:
        return batch
    if gpus is not None and config.workers * config.gpus > len(gpus.free):
        print(
            f"{len(gpus.free)} GPU(s) for {config.workers} worker(s) x {config.gpus} GPU(s): runs wait for free GPUs",
            file=sys.stderr,
        )
    progress = _Progress(len(todo))
    stop = Stop(config, lambda: len(progress.running))
    pool = ThreadPoolExecutor(max_workers=max(1, config.workers))
    try:
        with stop.installed(), progress:
            futures = {pool.submit(progress.track, run_one, config, c, s, store, gpus, stop): (c, s) for c, s in todo}
            for done, future in enumerate(_completed(futures), start=1):
                progress.finished = done
                comp, seed = futures[future]
                settle(batch, plan, config, f"[{done}/{len(todo)}]", (comp, seed), future.result)
    except BaseException:  # podium itself fails (or its output is a closed pipe): stop the runs, do not wait
        stop.event.set()
        stop.kill_running()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    batch.interrupted, batch.exit_status = stop.event.is_set(), stop.exit_status
    return batch
