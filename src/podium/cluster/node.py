"""What a cluster node does for one run: its data, its agent, the sandbox, and the run's folder sent back.

:func:`run_on_node` is the body of the Ray task (:mod:`podium.cluster.driver` submits it). It runs
the same first half of a run as a local batch (:func:`podium.run.execute.run_agent`): the agent in
its sandbox (bwrap, docker or local, as on one machine) with the GPUs Ray gave the task. The node
never sees the answers: it gets the public data (from a shared path, verified against the recorded
checksums, or shipped by the driver and cached by checksum) and sends the run's folder back as tar
bytes; the driver grades and lands it. Ray's cancel (Ctrl-C on the driver) raises
``KeyboardInterrupt`` here: the sandboxes this process started are killed through their own kill
paths and nothing of the run is kept.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import tempfile
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from podium import owner
from podium.cluster.transfer import cache_public, check_public, pack, unpack
from podium.paths import RunPaths
from podium.records import RunRecord
from podium.run.config import RunConfig, environment_profile
from podium.run.execute import failed_record, run_agent
from podium.run.gpus import RunInterrupted
from podium.run.interrupt import Stop

__all__ = ["Shipment", "node_cache", "node_name", "run_on_node"]


@dataclass(frozen=True)
class Shipment:
    """How a node finds a competition's public data: under ``shared`` (a data dir every node mounts), or, without
    it, in the tar bytes the driver put in the object store (the task's ``data`` argument)."""

    competition_id: str
    checksums: dict[str, str]  # the recorded checksums of the public side
    digest: str  # their digest, the name of the node's cached copy
    shared: Path | None = None


def node_cache() -> Path:
    """Where a node keeps shipped data and agents: ``$PODIUM_NODE_CACHE``, else ``<tmp>/podium-node-cache``."""
    return Path(os.environ.get("PODIUM_NODE_CACHE") or Path(tempfile.gettempdir()) / "podium-node-cache")


def node_name() -> str:
    """This node as records name it: its host name and the first digits of its Ray node id."""
    import ray

    return f"{socket.gethostname()}:{ray.get_runtime_context().get_node_id()[:8]}"


def run_on_node(
    config: RunConfig,
    ref: str,
    record_data: dict[str, Any],
    shipment: Shipment,
    data: bytes | None,
    agent: bytes,
    ledger: Any,
) -> dict[str, Any]:
    """Run the agent of ``record_data``'s run here; its record (ungraded) and folder (tar bytes).

    ``error`` in the answer names a failure of podium, its data or the engine on this node (the
    record then says ``harness_error``); ``attempts`` lists the nodes that took the run, this one last.
    """
    import ray

    from podium import registry
    from podium.sandbox import sweep_abandoned

    here = node_name()
    key = f"{record_data['run_group']}/{record_data['competition_id']}/{record_data['seed']}"
    attempts = [here]
    with contextlib.suppress(Exception):  # the ledger only informs the record; a run never waits on it for long
        attempts = ray.get(ledger.start.remote(key, here), timeout=30)
    owner.sweep_temp()
    sweep_abandoned()
    record = RunRecord.from_dict(record_data)
    record.node = here
    record.limits["gpu_ids"] = [int(i) for i in ray.get_gpu_ids()]
    root = owner.mkdtemp("node")
    staging = RunPaths(root / "run")
    error = None
    try:
        try:
            competition = registry.get(ref)
            config = _on_this_node(config, shipment, data, agent)
        except Exception as exc:
            staging.root.mkdir()
            failed_record(record, exc, staging)
            error = record.error
        else:
            error = _sandboxed(config, competition, record, staging)
        return {
            "record": record.to_dict(),
            "folder": pack(staging.root),
            "attempts": attempts,
            "error": error,
            "staging": str(staging.root),
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _sandboxed(config: RunConfig, competition: Any, record: RunRecord, staging: RunPaths) -> str | None:
    """The agent in its sandbox, in a thread of its own, so that Ray's cancel (``KeyboardInterrupt`` in this,
    the task's thread) kills the sandboxes and waits for them; the error that failed the run, if any."""
    cancel = threading.Event()
    failure: list[BaseException] = []

    def work() -> None:
        try:
            run_agent(config, competition, record, staging, cancel)
        except BaseException as exc:
            failure.append(exc)

    worker = threading.Thread(target=work, name="podium-node-run", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.5)
    except KeyboardInterrupt:  # ray.cancel: the driver's Ctrl-C
        cancel.set()
        stop = Stop(config, lambda: 1)
        while worker.is_alive():
            stop.kill_running()
            worker.join(0.5)
        raise RunInterrupted from None
    if failure:
        if isinstance(failure[0], RunInterrupted):
            raise failure[0]
        if not isinstance(failure[0], Exception):
            raise failure[0]
        failed_record(record, failure[0], staging)
        return record.error
    return None


def _on_this_node(config: RunConfig, shipment: Shipment, data: bytes | None, agent: bytes) -> RunConfig:
    """``config`` as this node runs it: its data dir, its copy of the agent, its built environment."""
    from podium.environments import ensure as ensure_environment

    cache = node_cache()
    if shipment.shared is not None:
        data_dir = shipment.shared
        prepared = data_dir / shipment.competition_id / "prepared"
        check_public(prepared, shipment.checksums, shipment.competition_id, verified=cache / "verified")
    else:
        assert data is not None, "a shipment without a shared path comes with the data"
        data_dir = cache_public(data, cache / "data", shipment.competition_id, shipment.digest, shipment.checksums)
    folder = _agent_folder(cache / "agents", str(config.agent_hash), agent)
    moved = replace(config.agent, folder=folder)
    if config.agent.build is not None and config.agent.build.is_relative_to(config.agent.folder):
        moved = replace(moved, build=folder / config.agent.build.relative_to(config.agent.folder))
    config = replace(config, data_dir=data_dir, agent=moved)
    if config.environment is not None:  # built once per node, content-addressed as on one machine
        profile = environment_profile(config)
        if profile is not None:
            config = replace(config, environment=ensure_environment(profile))
    if config.sandbox == "docker" and config.agent.needs_docker:  # built on this node, never pulled
        from podium.run.images import resolve_image

        config = resolve_image(replace(config, image=None))
    return config


def _agent_folder(cache: Path, digest: str, data: bytes) -> Path:
    """The agent's folder on this node, unpacked once per agent hash."""
    folder = cache / digest[:32]
    if folder.is_dir():
        return folder
    staging = cache / f".{digest[:32]}.tmp-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        unpack(data, staging)
        with contextlib.suppress(OSError):  # another worker got there first
            os.rename(staging, folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder
