"""One run: the agent in its sandbox on one (competition, seed), its submission graded outside.

The prepared public folder goes in read-only, the agent works in /home under its time and memory
limits with a validation endpoint on a Unix socket (and, for an agent with an ``llm:`` section, the
LLM proxy), and what it leaves (submission, code, logs) stays in the run's staging folder
(:class:`podium.paths.RunPaths`). The private answers never enter the sandbox; grading happens
afterwards, here, in a bounded child process. :func:`execute` returns the run's
:class:`~podium.records.RunRecord`; the scheduler (:mod:`podium.run.schedule`) moves the folder into
place and indexes it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket as socket_module
import threading
import traceback
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from podium import __version__, declarations
from podium.competition import Competition
from podium.data.prepare import description_variant
from podium.errors import HarnessError, PodiumError
from podium.grading import grade_isolated
from podium.paths import RunPaths
from podium.records import GradeReport, RunRecord
from podium.run.config import RunConfig
from podium.run.gpus import RunInterrupted
from podium.run.outcome import tail_lines
from podium.run.sandboxed import limits_of, run_in_sandbox, run_services, sandbox_setup
from podium.sandbox import ExecResult, run_compute
from podium.services import model_failure

__all__ = ["discard", "execute", "failed_record", "fill_record", "grade_run", "new_record", "run_agent"]


def new_record(config: RunConfig, competition: Competition, seed: int, gpu_ids: tuple[int, ...]) -> RunRecord:
    """The record of a run about to start: what runs, and under which settings."""
    return RunRecord(
        run_group=config.run_group,
        competition_id=competition.id,
        competition_version=competition.version,
        seed=seed,
        agent=config.agent.name,
        agent_hash=config.agent_hash,
        agent_folder=str(Path(config.agent.folder).resolve()),
        status="finished",
        sandbox=config.sandbox,
        image=config.image,
        environment=config.environment.summary() if config.environment is not None else None,
        podium_version=__version__,
        started_at=_now(),
        limits={
            "time_limit_s": config.time_limit,
            "memory_bytes": config.memory_bytes,
            "cpus": config.cpus,
            "gpus": config.gpus,
            "gpu_ids": list(gpu_ids),
            "disk_bytes": config.disk_bytes,
        },
        description=description_variant(competition, config.data_dir),
        declaration=declaration_of(competition),
    )


def declaration_of(competition: Competition) -> dict[str, str]:
    """What a record names of the declaration that grades it: its folder's digest, and whether it is podium's own."""
    source = declarations.source_of(competition.folder)
    return {
        "sha256": declarations.digest(competition.folder),
        "source": "built-in" if source == declarations.BUILTIN else "user",
    }


def execute(
    config: RunConfig,
    competition: Competition,
    record: RunRecord,
    staging: RunPaths,
    final: RunPaths,
    cancel: threading.Event | None = None,
) -> RunRecord:
    """Run the agent with its files in ``staging`` and grade what it left; the finished ``record``.

    Paths in the grade name the run's ``final`` folder, where the scheduler will move it. Raises
    :class:`RunInterrupted` when ``cancel`` is set and the agent was killed for it (an agent that
    ended on its own is kept), and lets any error of podium, its data or the engine through.
    """
    run_agent(config, competition, record, staging, cancel)
    return grade_run(config, competition, record, staging, final)


def run_agent(
    config: RunConfig,
    competition: Competition,
    record: RunRecord,
    staging: RunPaths,
    cancel: threading.Event | None = None,
) -> RunRecord:
    """The first half of :func:`execute`: the agent in its sandbox, ``record`` filled in but not graded.

    A cluster node runs this half (``podium.cluster``); the driver, which holds the answers, grades. Raises
    :class:`~podium.errors.HarnessError`, the record filled in, when every model call the agent made failed for
    the harness's reasons (the proxy's :func:`~podium.services.model_failure`: the provider unreachable, its key
    refused, its server failing): whatever the agent then left is not its result.
    """
    gpu_ids = tuple(record.limits["gpu_ids"])
    result, calls, llm_summary, started, isolation = _sandboxed(config, competition, record.seed, staging, gpu_ids)
    if cancel is not None and cancel.is_set() and _killed(result):
        raise RunInterrupted
    return fill_record(config, record, staging, result, calls, llm_summary, started, isolation)


def fill_record(
    config: RunConfig,
    record: RunRecord,
    staging: RunPaths,
    result: ExecResult,
    calls: list[Any],
    llm_summary: dict[str, Any] | None,
    started: datetime,
    isolation: dict[str, Any],
) -> RunRecord:
    """``record`` filled in from how its sandbox ended (``result``), its validation calls, its model calls'
    summary and what the sandbox showed it; raises :class:`~podium.errors.HarnessError` when every model call
    failed for the harness's reasons (see :func:`run_agent`)."""
    gpu_ids = tuple(record.limits["gpu_ids"])
    record.started_at = started.isoformat(timespec="seconds")
    record.agent_result = {k: v for k, v in _jsonable(result).items() if k != "network"}
    record.agent_stderr_tail = tail_lines(staging.stderr)
    record.validation_calls = calls
    record.llm = llm_summary
    record.isolation = {**isolation, "network_observed": _observed(result.network, record.node)}
    record.compute = run_compute(limits_of(config, gpu_ids), result)
    if (failure := model_failure(llm_summary)) is not None:  # the agent never had its model: not its result
        raise HarnessError(failure)
    return record


def _observed(network: dict[str, Any] | None, node: str | None) -> dict[str, Any]:
    """The network the sandbox observed at the start, said to be a cluster node's when the run ran on one."""
    if network is None:
        return {"error": "the sandbox did not observe the agent's network"}
    if node is not None and "error" not in network:
        return {**network, "observed_by": f"node {socket_module.gethostname()}"}
    return network


def grade_run(
    config: RunConfig,
    competition: Competition,
    record: RunRecord,
    staging: RunPaths,
    final: RunPaths,
    origin: str | None = None,
) -> RunRecord:
    """The second half of :func:`execute`: grade what the agent left in ``staging``, paths named as in ``final``.

    ``origin`` is the folder the record's isolation paths name when the agent ran elsewhere (a cluster
    node's own staging folder); by default ``staging``.
    """
    record.isolation = _moved(record.isolation, origin or str(staging.root), str(final.root))
    report = grade_isolated(competition, staging.submission, config.data_dir)
    grade = GradeReport.from_dict(_moved(report.to_dict(), str(staging.root), str(final.root)))
    grade.submission_path = str(final.submission_file)
    record.finished_at = _now()
    record.grade = grade
    return record


def failed_record(record: RunRecord, error: BaseException, staging: RunPaths) -> RunRecord:
    """The record of a run that failed because of podium, its data, the Docker engine or the agent's model provider
    (``harness_error``).

    Reports count it apart from the agent's failures, and a plain rerun runs it again. What the agent
    left (its logs, code, submission, its model calls' summary) stays for the diagnosis.
    """
    text = str(error) if isinstance(error, PodiumError) else "".join(traceback.format_exception(error)).strip()
    record.status = "harness_error"
    record.error = f"{type(error).__name__}: {text}"
    record.finished_at = _now()
    record.agent_result = None
    record.agent_stderr_tail = tail_lines(staging.stderr)
    record.grade = None
    return record


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _killed(result: ExecResult) -> bool:
    """Whether a sandbox's result looks like a kill (SIGKILL, directly or as docker's 137, or a limit)."""
    return result.exit_code is None or result.exit_code < 0 or result.exit_code == 128 + signal.SIGKILL


def _moved(value: Any, old: str, new: str) -> Any:
    """``value`` with the path prefix ``old`` replaced by ``new`` in every string (a run's staging folder)."""
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, dict):
        return {k: _moved(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_moved(v, old, new) for v in value]
    return value


def _jsonable(value: Any) -> Any:
    if hasattr(value, "__dataclass_fields__"):
        return _jsonable(asdict(value))
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


def _sandboxed(
    config: RunConfig, competition: Competition, seed: int, run: RunPaths, gpu_ids: tuple[int, ...]
) -> tuple[ExecResult, list[Any], dict[str, Any] | None, datetime, dict[str, Any]]:
    """Run the agent in its sandbox with its files in ``run``: (result, validation calls, LLM summary, start,
    isolation: what the sandbox showed the agent, for the audit)."""
    setup = sandbox_setup(config, competition, seed, run, gpu_ids)
    started = datetime.now(UTC)
    llm_summary = None
    with run_services(config, competition, setup, run) as (server, proxy):
        result = run_in_sandbox(config, setup, run)
        calls = server.calls
        if proxy is not None:
            llm_summary = proxy.summary()
    return result, calls, llm_summary, started, setup.isolation


def discard(staging: RunPaths) -> None:
    """Remove an interrupted run's staging folder, and its competition's folder if that is now empty."""
    shutil.rmtree(staging.root, ignore_errors=True)
    with contextlib.suppress(OSError):
        os.rmdir(staging.root.parent)
