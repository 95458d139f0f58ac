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

from podium import __version__, owner
from podium.agents import LLMConfig, instructions
from podium.competition import Competition
from podium.data.prepare import description_variant
from podium.environments import ENV_MOUNT
from podium.errors import HarnessError, PodiumError
from podium.grading import grade_isolated
from podium.paths import CompetitionPaths, RunPaths
from podium.records import GradeReport, RunRecord
from podium.run.config import RunConfig, hardware
from podium.run.gpus import RunInterrupted
from podium.run.outcome import tail_lines
from podium.sandbox import ROOTFS_PATH, ExecResult, Limits, Mount, default_env, get_sandbox, run_compute
from podium.services import BRIDGE_PORT, LLMProxy, ValidationServer, model_failure, sandbox_file
from podium.units import duration

__all__ = ["discard", "execute", "failed_record", "grade_run", "new_record", "run_agent"]


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
    )


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
    record.started_at = started.isoformat(timespec="seconds")
    record.agent_result = {k: v for k, v in _jsonable(result).items() if k != "network"}
    record.agent_stderr_tail = tail_lines(staging.stderr)
    record.validation_calls = calls
    record.llm = llm_summary
    record.isolation = {**isolation, "network_observed": _observed(result.network, record.node)}
    record.compute = run_compute(_limits(config, gpu_ids), result)
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


def _limits(config: RunConfig, gpu_ids: tuple[int, ...]) -> Limits:
    """What one run of ``config`` with the GPUs ``gpu_ids`` may use."""
    return Limits(
        wall_seconds=config.time_limit,
        memory_bytes=config.memory_bytes,
        cpus=config.cpus,
        gpus=gpu_ids,
        disk_bytes=config.disk_bytes,
    )


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
    paths = CompetitionPaths(config.data_dir, competition.id)
    for folder in run.folders().values():
        folder.mkdir(parents=True)
    sample = paths.prepared / competition.sample_submission
    env = {
        **config.agent.env,
        "COMPETITION_ID": competition.id,
        "TIME_LIMIT_SECS": str(int(config.time_limit)),
        "HARDWARE": hardware(config, gpu_ids),
        "SEED": str(seed),
        "PODIUM_VALIDATION_SOCKET": "/home/validate.sock",
    }
    run.instructions.write_text(
        instructions(
            time_limit=duration(config.time_limit), time_limit_secs=int(config.time_limit), hardware=env["HARDWARE"]
        ),
        encoding="utf-8",
    )
    socket_dir = owner.mkdtemp("v")  # short path: Unix sockets allow ~100 bytes
    socket = socket_dir / "validate.sock"
    mounts = [
        Mount(paths.public, "/home/data"),
        Mount(run.submission, "/home/submission", writable=True),
        Mount(run.code, "/home/code", writable=True),
        Mount(run.logs, "/home/logs", writable=True),
        Mount(run.instructions, "/home/instructions.md"),
        Mount(sandbox_file("validate_submission.py"), "/home/validate_submission.py"),
        Mount(sandbox_file("validate_submission.sh"), "/home/validate_submission.sh"),
        Mount(sandbox_file("podium_submission.py"), "/home/podium_submission.py"),
        Mount(socket, "/home/validate.sock", loopback_port=5000 if config.agent.mlebench else None),
    ]
    if config.agent.mlebench:  # MLE-bench's agents read the task from instructions.txt
        mounts += [
            Mount(run.instructions, "/home/instructions.txt"),
            Mount(run.instructions, "/home/instructions_obfuscated.txt"),
        ]
    if config.image is None:  # an agent image carries the agent itself (MLE-bench images keep it in /home/agent)
        mounts.append(Mount(config.agent.folder, "/home/agent"))
    root = config.environment.root if config.environment is not None else None
    if config.environment is not None:  # the agent's code runs with its own environment, first on PATH
        if root is None:
            mounts.append(Mount(config.environment.path, ENV_MOUNT))
        system_path = ROOTFS_PATH if root is not None else default_env()["PATH"]  # a root filesystem holds it
        env = {"PATH": f"{ENV_MOUNT}/bin:{system_path}", "PODIUM_ENV": ENV_MOUNT, **env}
    limits = _limits(config, gpu_ids)
    command = list(config.agent.command)
    llm = config.agent.llm
    started = datetime.now(UTC)
    llm_summary = None
    try:
        with contextlib.ExitStack() as stack:
            server = stack.enter_context(ValidationServer(competition, sample, socket, run.validation_log))
            proxy = None
            if llm is not None:
                proxy = stack.enter_context(
                    LLMProxy(llm, socket_dir / "llm.sock", run.llm_log, transcript_path=run.transcript)
                )
                relayed = BRIDGE_PORT if config.agent.mlebench else None  # on the container's loopback
                mounts.append(Mount(socket_dir / "llm.sock", "/home/llm.sock", loopback_port=relayed))
                mounts.append(Mount(sandbox_file("podium_llm.py"), "/home/podium_llm.py"))
                env.update(_llm_env(llm, config.sandbox, tcp=llm.bridge or config.agent.mlebench))
                if llm.bridge:
                    mounts.append(Mount(sandbox_file("llm_bridge.py"), "/home/llm_bridge.py"))
                    listen = env["PODIUM_LLM_LISTEN"]
                    command = ["python3", "/home/llm_bridge.py", "--listen", listen, "--socket", "/home/llm.sock", "--"]
                    command += list(config.agent.command)
            sandbox = get_sandbox(config.sandbox, image=config.image, root=root)
            isolation = _isolation(sandbox.name, sandbox.isolated, mounts, paths.private)
            result = sandbox.run(
                command,
                mounts=mounts,
                env=env,
                limits=limits,
                workdir="/home",
                stdout=run.stdout,
                stderr=run.stderr,
                samples_file=run.resources,
                hidden=(config.data_dir, config.runs_dir),
            )
            calls = server.calls
            if proxy is not None:
                llm_summary = proxy.summary()
    finally:
        shutil.rmtree(socket_dir, ignore_errors=True)
    return result, calls, llm_summary, started, isolation


def _isolation(sandbox: str, isolated: bool, mounts: list[Mount], answers: Path) -> dict[str, Any]:
    """What the agent could reach, as the record keeps it: the sandbox, its network and every mount (the
    audit's integrity check reads it)."""
    return {
        "sandbox": sandbox,
        "isolated": isolated,
        "network": "loopback only" if isolated else "the host's",
        "answers": str(answers),
        "mounts": [{"source": str(m.source), "target": m.target, "writable": m.writable} for m in mounts],
    }


def _llm_env(llm: LLMConfig, sandbox: str, *, tcp: bool) -> dict[str, str]:
    """How the agent reaches its model: the proxy socket, and (``tcp``) base URLs on the sandbox's loopback
    port where the bridge or the harness's relay listens."""
    port = BRIDGE_PORT
    if sandbox == "local":  # the host's loopback: take a free port instead of a fixed one
        with socket_module.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
    env = {"PODIUM_LLM_SOCKET": "/home/llm.sock", "PODIUM_LLM_PROVIDER": llm.provider.name}
    if llm.models:
        env["PODIUM_LLM_MODELS"] = ",".join(llm.models)
    if tcp:
        base = f"http://127.0.0.1:{port}"
        env |= {
            "PODIUM_LLM_LISTEN": f"127.0.0.1:{port}",
            "PODIUM_LLM_BASE_URL": base,
            "OPENAI_BASE_URL": f"{base}/v1",
            "ANTHROPIC_BASE_URL": base,
            # SDKs refuse to start without a key; the proxy replaces it with the real one.
            "OPENAI_API_KEY": "podium-proxy-adds-the-key",
            "ANTHROPIC_API_KEY": "podium-proxy-adds-the-key",
        }
    return env


def discard(staging: RunPaths) -> None:
    """Remove an interrupted run's staging folder, and its competition's folder if that is now empty."""
    shutil.rmtree(staging.root, ignore_errors=True)
    with contextlib.suppress(OSError):
        os.rmdir(staging.root.parent)
