"""One run's sandbox: what it is given (folders, instructions, mounts, environment, limits), the services beside it
(the validation endpoint, the LLM proxy) and the sandboxed command itself.

:mod:`podium.run.execute` runs an agent with these pieces in one go; :mod:`podium.gym` runs its shell server with
the same pieces, so an episode's sandbox is a run's sandbox.
"""

from __future__ import annotations

import contextlib
import shutil
import socket as socket_module
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from podium import owner
from podium.agents import LLMConfig, instructions
from podium.competition import Competition
from podium.environments import ENV_MOUNT
from podium.paths import CompetitionPaths, RunPaths
from podium.run.config import RunConfig, hardware
from podium.sandbox import ROOTFS_PATH, ExecResult, Limits, Mount, default_env, get_sandbox
from podium.services import BRIDGE_PORT, LLMProxy, ValidationServer, sandbox_file
from podium.units import duration

__all__ = ["SandboxSetup", "limits_of", "run_in_sandbox", "run_services", "sandbox_setup"]


@dataclass
class SandboxSetup:
    """What one run's sandbox is given: mounts, environment, limits, the command, the services' socket folder."""

    paths: CompetitionPaths
    mounts: list[Mount]
    env: dict[str, str]
    limits: Limits
    command: list[str]
    root: Path | None
    socket_dir: Path
    sample: Path
    isolation: dict[str, Any] = field(default_factory=dict)


def limits_of(config: RunConfig, gpu_ids: tuple[int, ...]) -> Limits:
    """What one run of ``config`` with the GPUs ``gpu_ids`` may use."""
    return Limits(
        wall_seconds=config.time_limit,
        memory_bytes=config.memory_bytes,
        cpus=config.cpus,
        gpus=gpu_ids,
        disk_bytes=config.disk_bytes,
    )


def sandbox_setup(
    config: RunConfig, competition: Competition, seed: int, run: RunPaths, gpu_ids: tuple[int, ...]
) -> SandboxSetup:
    """The run's folders made and its instructions written; the mounts and environment its sandbox gets."""
    paths = CompetitionPaths(config.data_dir, competition.id)
    for folder in run.folders().values():
        folder.mkdir(parents=True)
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
    mounts = [
        Mount(paths.public, "/home/data"),
        Mount(run.submission, "/home/submission", writable=True),
        Mount(run.code, "/home/code", writable=True),
        Mount(run.logs, "/home/logs", writable=True),
        Mount(run.instructions, "/home/instructions.md"),
        Mount(sandbox_file("validate_submission.py"), "/home/validate_submission.py"),
        Mount(sandbox_file("validate_submission.sh"), "/home/validate_submission.sh"),
        Mount(sandbox_file("podium_submission.py"), "/home/podium_submission.py"),
        Mount(sandbox_file("score_holdout.py"), "/home/score_holdout.py"),
        Mount(sandbox_file("podium_journal.py"), "/home/podium_journal.py"),
        Mount(
            socket_dir / "validate.sock", "/home/validate.sock", loopback_port=5000 if config.agent.mlebench else None
        ),
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
    sample = paths.prepared / competition.sample_submission
    return SandboxSetup(
        paths, mounts, env, limits_of(config, gpu_ids), list(config.agent.command), root, socket_dir, sample
    )


@contextlib.contextmanager
def run_services(
    config: RunConfig, competition: Competition, setup: SandboxSetup, run: RunPaths
) -> Iterator[tuple[ValidationServer, LLMProxy | None]]:
    """The validation endpoint and (for an agent with an ``llm:`` section) the LLM proxy, for as long as the run
    goes; the proxy's mounts, environment and bridge command are added to ``setup``. The sockets' folder is removed
    at the end."""
    llm = config.agent.llm
    socket_dir = setup.socket_dir
    try:
        with contextlib.ExitStack() as stack:
            server = stack.enter_context(
                ValidationServer(
                    competition,
                    setup.sample,
                    socket_dir / "validate.sock",
                    run.validation_log,
                    holdout_log=run.holdout_log,
                )
            )
            proxy = None
            if llm is not None:
                proxy = stack.enter_context(
                    LLMProxy(llm, socket_dir / "llm.sock", run.llm_log, transcript_path=run.transcript)
                )
                relayed = BRIDGE_PORT if config.agent.mlebench else None  # on the container's loopback
                setup.mounts.append(Mount(socket_dir / "llm.sock", "/home/llm.sock", loopback_port=relayed))
                setup.mounts.append(Mount(sandbox_file("podium_llm.py"), "/home/podium_llm.py"))
                setup.env.update(_llm_env(llm, config.sandbox, tcp=llm.bridge or config.agent.mlebench))
                if llm.bridge:
                    setup.mounts.append(Mount(sandbox_file("llm_bridge.py"), "/home/llm_bridge.py"))
                    listen = setup.env["PODIUM_LLM_LISTEN"]
                    bridge = ["python3", "/home/llm_bridge.py", "--listen", listen, "--socket", "/home/llm.sock", "--"]
                    setup.command = bridge + setup.command
            yield server, proxy
    finally:
        shutil.rmtree(socket_dir, ignore_errors=True)


def run_in_sandbox(config: RunConfig, setup: SandboxSetup, run: RunPaths) -> ExecResult:
    """Run ``setup.command`` in the run's sandbox and wait for it to end; ``setup.isolation`` says what the sandbox
    showed it (for the audit)."""
    sandbox = get_sandbox(config.sandbox, image=config.image, root=setup.root)
    setup.isolation = _isolation(sandbox.name, sandbox.isolated, setup.mounts, setup.paths.private)
    return sandbox.run(
        setup.command,
        mounts=setup.mounts,
        env=setup.env,
        limits=setup.limits,
        workdir="/home",
        stdout=run.stdout,
        stderr=run.stderr,
        samples_file=run.resources,
        hidden=(config.data_dir, config.runs_dir),
    )


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
