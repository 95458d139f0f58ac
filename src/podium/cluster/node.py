"""What a cluster node does for one run: its data, its agent, the sandbox, and the run's folder sent back.

:func:`run_on_node` is the body of the Ray task (:mod:`podium.cluster.driver` submits it). It runs
the same first half of a run as a local batch (:func:`podium.run.execute.run_agent`): the agent in
its sandbox (bwrap, docker or local, as on one machine) with the GPUs Ray gave the task. The node
never sees the answers: it gets the public data (from a shared path, verified against the recorded
checksums, or shipped by the driver and cached by checksum). The run's folder is packed, streamed,
into a tar in the node's outbox (:func:`outbox`), its files capped by the run's ``--disk`` in
apparent bytes, with hard links, sparse files and the like withheld and named
(:mod:`podium.cluster.tarball`); the driver reads the tar back in chunks (:func:`read_part`, a
task pinned to this node), grades the run and lands it, then drops the tar (:func:`drop_part`). A
tar the driver never fetched (it was killed) is removed by this node's next run after
:data:`OUTBOX_TTL_S`. Ray's cancel (Ctrl-C on the driver) raises ``KeyboardInterrupt`` here: the
sandboxes this process started are killed through their own kill paths and nothing of the run is kept.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from podium import owner
from podium.cluster.packing import CHUNK_BYTES, pack
from podium.cluster.transfer import Parcel, cache_public, check_public, unpack_once
from podium.errors import HarnessError
from podium.paths import RunPaths
from podium.records import RunRecord
from podium.run.config import RunConfig, environment_profile
from podium.run.execute import failed_record, run_agent
from podium.run.gpus import RunInterrupted
from podium.run.interrupt import Stop
from podium.untrusted import open_regular

__all__ = [
    "OUTBOX_TTL_S",
    "Shipment",
    "drop_part",
    "keys_set",
    "node_answer",
    "node_cache",
    "node_data",
    "node_name",
    "outbox",
    "read_part",
    "run_on_node",
    "send_folder",
    "sweep_node",
]

OUTBOX_TTL_S = 24 * 3600.0  # a run's tar left unread this long (its driver was killed) is removed
FREE_MARGIN_BYTES = 1 << 30  # what a run's tar leaves free on the node's disk when --disk sets no cap


@dataclass(frozen=True)
class Shipment:
    """How a node finds a competition's public data: under ``shared`` (a data dir every node mounts), or, without
    it, in the tar the driver put in the object store in chunks (the task's ``data`` argument, a :class:`Parcel`)."""

    competition_id: str
    checksums: dict[str, str]  # the recorded checksums of the public side
    digest: str  # their digest, the name of the node's cached copy
    shared: Path | None = None
    #: A declaration of the user's own (``--competitions-dir``), which the nodes do not have: its folder in the
    #: object store and its digest (:func:`podium.declarations.digest`), which the node's copy must have.
    declaration: Parcel | None = None
    declaration_sha256: str | None = None


@contextlib.contextmanager
def declared_here(ray: Any, shipment: Shipment) -> Iterator[None]:
    """While open, the registry of this task finds the user's own declaration the driver shipped (unpacked once per
    node, named by its digest, checked against it), as the driver's does; nothing for podium's own."""
    from podium import declarations

    if shipment.declaration is None or shipment.declaration_sha256 is None:
        yield
        return
    digest = shipment.declaration_sha256
    folder = unpack_once(
        shipment.declaration.opener(ray),
        node_cache() / "declarations" / digest[:32] / shipment.competition_id,
        **shipment.declaration.caps(),
    )
    if declarations.digest(folder) != digest:
        raise HarnessError(f"{shipment.competition_id}: the declaration shipped to this node is not the driver's")
    with keys_set({declarations.PATH_VARIABLE: str(folder.parent)}):
        yield


def node_cache() -> Path:
    """Where a node keeps shipped data and agents and its outbox: ``$PODIUM_NODE_CACHE``, else
    ``~/.cache/podium/node`` (``$XDG_CACHE_HOME``): the user's own, never another user's (a shared folder
    would let one user plant data, agents or "verified" marks that another's runs trust), and shared by that
    user's jobs, which is safe because what is in it is named by its content and checked against it."""
    if named := os.environ.get("PODIUM_NODE_CACHE"):
        return Path(named).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "podium" / "node"


def outbox() -> Path:
    """Where this node keeps runs' tars until the driver has read them."""
    return node_cache() / "outbox"


def _outbox_file(name: str) -> Path:
    """A tar of the outbox by its bare name (the driver names it; nothing else is reachable)."""
    if not name.endswith(".tar") or Path(name).name != name or name.startswith("."):
        raise ValueError(f"not a tar of the outbox: {name!r}")
    return outbox() / name


def read_part(name: str, offset: int, length: int) -> bytes:
    """Bytes ``[offset, offset + length)`` of the outbox's tar ``name`` (run on its node, for the driver)."""
    length = max(0, min(int(length), CHUNK_BYTES))
    fd = open_regular(_outbox_file(name))
    if fd is None:
        raise FileNotFoundError(f"the outbox holds no tar {name!r}")
    try:
        os.utime(fd)  # read lately: not left behind
        return os.pread(fd, length, int(offset))
    finally:
        os.close(fd)


def drop_part(name: str) -> None:
    """Remove the outbox's tar ``name`` (the driver has it, or gave up on it)."""
    _outbox_file(name).unlink(missing_ok=True)


def _sweep_outbox(now: float | None = None) -> None:
    now = time.time() if now is None else now
    with contextlib.suppress(OSError), os.scandir(outbox()) as entries:
        for entry in entries:
            with contextlib.suppress(OSError):
                if (
                    entry.is_file(follow_symlinks=False)
                    and now - entry.stat(follow_symlinks=False).st_mtime > OUTBOX_TTL_S
                ):
                    os.unlink(entry.path)


def node_name() -> str:
    """This node as records name it: its host name and the first digits of its Ray node id."""
    import ray

    return f"{socket.gethostname()}:{ray.get_runtime_context().get_node_id()[:8]}"


def run_on_node(
    config: RunConfig,
    ref: str,
    record_data: dict[str, Any],
    shipment: Shipment,
    data: Parcel | None,
    agent: Parcel,
    ledger: Any,
    keys: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Run the agent of ``record_data``'s run here; its record (ungraded) and where its folder's tar waits.

    ``keys`` are the driver's API keys for the agent's model (``OPENAI_API_KEY=...``): the run's LLM
    proxy runs here and reads them from this process's environment, where they are set for the run
    only (a node needs no key of its own, and the user who started the batch pays for its calls).

    ``error`` in the answer names a failure of podium, its data or the engine on this node (the
    record then says ``harness_error``); ``attempts`` lists the nodes that took the run, this one last;
    ``folder`` names the tar in this node's outbox (``node_id``) and ``withheld`` what it left out, and why.
    """
    import ray

    from podium import registry

    here = node_name()
    key = f"{record_data['run_group']}/{record_data['competition_id']}/{record_data['seed']}"
    attempts = [here]
    with contextlib.suppress(Exception):  # the ledger only informs the record; a run never waits on it for long
        attempts = ray.get(ledger.start.remote(key, here), timeout=30)
    sweep_node()
    record = RunRecord.from_dict(record_data)
    record.node = here
    record.limits["gpu_ids"] = [int(i) for i in ray.get_gpu_ids()]
    root = owner.mkdtemp("node")
    staging = RunPaths(root / "run")
    try:
        with keys_set(keys or {}), contextlib.ExitStack() as declared:
            try:
                declared.enter_context(declared_here(ray, shipment))
                competition = registry.get(ref)
                config = _on_this_node(ray, config, shipment, data, agent)
            except Exception as exc:
                staging.root.mkdir()
                failed_record(record, exc, staging)
                error = record.error
            else:
                error = _sandboxed(config, competition, record, staging)
        return node_answer(ray, record, staging, config.disk_bytes, attempts, error, str(staging.root))
    finally:
        shutil.rmtree(root, ignore_errors=True)


def sweep_node() -> None:
    """What killed tasks left on this node: podium's temporary folders, abandoned sandboxes, old tars."""
    from podium.sandbox import sweep_abandoned

    owner.sweep_temp()
    sweep_abandoned()
    _sweep_outbox()


@contextlib.contextmanager
def keys_set(keys: dict[str, str]) -> Iterator[None]:
    """``keys`` in this process's environment for the block, then as they were (a Ray worker runs one task
    at a time and is reused for the next)."""
    before = {name: os.environ.get(name) for name in keys}
    os.environ.update(keys)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def node_answer(
    ray: Any,
    record: RunRecord,
    staging: RunPaths,
    disk_bytes: int | None,
    attempts: Any,
    error: str | None,
    origin: str | None,
) -> dict[str, Any]:
    """What a node's task returns for one run: its record and its folder packed for the driver (a folder the
    node's disk cannot pack lands as a harness error: nothing of the run can go back)."""
    folder: dict[str, Any] | None = None
    withheld: list[str] = []
    try:
        folder, withheld = send_folder(staging.root, disk_bytes)
    except HarnessError as exc:
        failed_record(record, exc, staging)
        error = record.error
    return {
        "record": record.to_dict(), "folder": folder, "withheld": withheld,
        "node_id": ray.get_runtime_context().get_node_id(), "attempts": attempts, "error": error, "staging": origin,
    }  # fmt: skip


def send_folder(folder: Path, disk_bytes: int | None) -> tuple[dict[str, Any], list[str]]:
    """``folder`` packed into the outbox, its files capped by ``disk_bytes`` (else by the room left here):
    the tar as the driver asks for it, and what was withheld."""
    box = outbox()
    box.mkdir(mode=0o700, parents=True, exist_ok=True)
    cap = disk_bytes if disk_bytes is not None else max(0, shutil.disk_usage(box).free - FREE_MARGIN_BYTES)
    name = f"{uuid.uuid4().hex}.tar"
    packed = pack(folder, box / name, first=("submission",), max_bytes=cap)
    tar = {"name": name, "size": packed.size, "sha256": packed.sha256, "members": packed.members}
    return {**tar, "file_bytes": packed.file_bytes}, packed.withheld_summary()


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


def node_data(ray: Any, shipment: Shipment, data: Parcel | None) -> Path:
    """The data dir holding ``shipment``'s public folder on this node, checked against its recorded checksums."""
    cache = node_cache()
    if shipment.shared is not None:
        prepared = shipment.shared / shipment.competition_id / "prepared"
        check_public(prepared, shipment.checksums, shipment.competition_id, verified=cache / "verified")
        return shipment.shared
    assert data is not None, "a shipment without a shared path comes with the data"
    return cache_public(
        data.opener(ray), cache / "data", shipment.competition_id, shipment.digest, shipment.checksums, **data.caps()
    )


def _on_this_node(ray: Any, config: RunConfig, shipment: Shipment, data: Parcel | None, agent: Parcel) -> RunConfig:
    """``config`` as this node runs it: its data dir, its copy of the agent, its built environment."""
    from podium.environments import ensure as ensure_environment

    cache = node_cache()
    data_dir = node_data(ray, shipment, data)
    folder = unpack_once(agent.opener(ray), cache / "agents" / str(config.agent_hash)[:32], **agent.caps())
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
