"""`podium run --cluster ray`: the batch's runs as Ray tasks, graded and landed here, on the driver.

The driver does what a local batch does before its first run (:func:`podium.run.schedule.begin_batch`:
sweep, reconcile, the group's settings), then submits each (competition, seed) still to do as one
Ray task (:func:`podium.cluster.node.run_on_node`) asking for the run's CPUs, memory and GPUs and
the custom resources of ``--ray-resource``. At most a window of runs is in Ray at once, so a batch
of ten thousand holds ten thousand small tuples here, not ten thousand tasks. Each run has a staging
folder here from its submission on (``podium serve`` lists it live, with the node that took it in
``node.txt``). Its folder comes back as a tar in the node's outbox, read here a chunk at a time
(tasks pinned to that node, a few in flight, each bounded in size and time) straight into
:func:`podium.cluster.tarball.unpack`, which checks every member itself; it lands in a fresh folder
that replaces nothing until it is whole, so a refused or broken transfer leaves nothing
half-written and is recorded against that run (``harness_error``, with the reason) once. The run is
then graded here (the answers never leave the driver) and landed by the store's atomic rename.
Only the driver writes the index.

Faults: a task whose node dies is retried once by Ray (``max_retries=1``; exceptions are not
retried), and the record lists the nodes that took it (``cluster.attempts``). A driver killed with
-9 takes its Ray job, and so its tasks, with it; the same command again sweeps its staging
folders and submits what did not land. Ctrl-C cancels the tasks (``ray.cancel``: the node kills its
sandboxes), then force-cancels what is still going after a grace period.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import itertools
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from podium import declarations
from podium.cluster.address import ClusterSpec
from podium.cluster.node import Shipment, drop_part, read_part, run_on_node
from podium.cluster.packing import CHUNK_BYTES, MAX_MEMBERS, tar_bound
from podium.cluster.session import connect
from podium.cluster.tarball import ChunkStream, UnpackRefused, unpack_fresh
from podium.cluster.transfer import PART_TIMEOUT_S, Parcel, public_checksums, public_digest
from podium.competition import Competition
from podium.errors import HarnessError, UsageError
from podium.paths import CompetitionPaths, RunPaths
from podium.records import RunRecord
from podium.run import group as run_group
from podium.run.config import RunConfig
from podium.run.execute import discard, failed_record, grade_run, new_record
from podium.run.gpus import RunInterrupted
from podium.run.interrupt import Stop
from podium.run.schedule import Batch, begin_batch, settle
from podium.store import RunStore

__all__ = ["Ledger", "NodeWork", "run_cluster_batch"]

_HEAD = "node:__internal_head__"  # the resource Ray gives the head node alone
CANCEL_GRACE_S = 10.0  # after ray.cancel, how long runs get to kill their sandboxes before a forced cancel
PREFETCH_PARTS = 4  # chunks of a run's tar asked for ahead of the one being unpacked
ANSWER_TIMEOUT_S = 600.0  # the longest a finished run's record may take to arrive
INCOMING = ".incoming"  # inside a staging folder: where a run's folder is unpacked before it takes its place
#: Names at the top of a run's folder that podium writes on the driver: no node's tar may hold them.
RESERVED = frozenset({"record.json", "node.txt", "audit.json", INCOMING})


class Ledger:
    """A Ray actor on the driver's job: which nodes took each run, so that a retry is recorded as one."""

    def __init__(self) -> None:
        self.nodes: dict[str, list[str]] = {}
        self.seen = 0

    def start(self, key: str, node: str) -> list[str]:
        self.nodes.setdefault(key, []).append(node)
        self.seen += 1
        return list(self.nodes[key])

    def since(self, seen: int) -> tuple[int, dict[str, str]]:
        """(a mark, the latest node of each run) when something started after ``seen``."""
        return (self.seen, {k: v[-1] for k, v in self.nodes.items()}) if self.seen != seen else (seen, {})


@dataclass(frozen=True)
class NodeWork:
    """What each task of a batch does on its node when it is not an agent's run (``podium rollout --cluster``
    plays gym episodes): ``function`` takes :func:`~podium.cluster.node.run_on_node`'s arguments, then ``args``,
    and answers as it does; ``keys`` join the API keys set on the node for the task; ``before_land`` is given
    every record, with its staging folder, just before it lands here (whatever became of the run)."""

    function: Callable[..., dict[str, Any]]
    args: tuple[Any, ...] = ()
    keys: dict[str, str] = field(default_factory=dict, repr=False)
    before_land: Callable[[RunRecord, RunPaths], None] | None = None


def _check_resources(ray: Any, config: RunConfig, cluster: ClusterSpec) -> None:
    """Refuse a batch no node of the cluster could ever place (Ray would keep it pending for ever)."""
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    need = {"CPU": config.cpus or 1, "GPU": config.gpus, **cluster.resources}
    if not any(all(n["Resources"].get(k, 0) >= v for k, v in need.items() if v) for n in nodes):
        asked = ", ".join(f"{k}={v:g}" for k, v in need.items() if v)
        raise UsageError(
            f"no node of the Ray cluster has {asked} for one run ({len(nodes)} node(s) alive). Fix: ask for less "
            "(--cpus, --gpus, --ray-resource) or add nodes that declare it (ray start --num-gpus/--resources)"
        )


def run_cluster_batch(
    config: RunConfig,
    competitions: list[Competition],
    cluster: ClusterSpec,
    redo: run_group.Redo | None = None,
    work: NodeWork | None = None,
) -> Batch:
    """Run what the group still lacks of ``competitions`` x seeds on the Ray cluster; as :func:`run_batch` (the
    group is held for the whole batch, against local batches and other drivers alike). ``work``: what each
    task does instead of the agent's run."""
    ray = connect(cluster.address)
    with run_group.batch_lock(config.runs_dir / config.run_group):
        return _run_cluster_batch(ray, config, competitions, cluster, redo, work or NodeWork(run_on_node))


def _run_cluster_batch(
    ray: Any,
    config: RunConfig,
    competitions: list[Competition],
    cluster: ClusterSpec,
    redo: run_group.Redo | None,
    work: NodeWork,
) -> Batch:
    config, plan, store = begin_batch(config, competitions, redo)
    batch = Batch(plan.pairs)
    if not plan.todo:
        return batch
    _check_resources(ray, config, cluster)
    ledger = _ledger(ray)
    task = ray.remote(work.function).options(
        num_cpus=config.cpus or 1,
        num_gpus=config.gpus,
        memory=config.memory_bytes,
        resources=dict(cluster.resources),
        max_retries=1,
        retry_exceptions=False,
    )
    shipments: dict[str, tuple[Shipment, Any]] = {}
    agent = Parcel.put(ray, config.agent.folder, skip=[config.runs_dir], hidden=False)
    for line in agent.withheld:
        print(f"the agent's folder is sent to the nodes without {line}", file=sys.stderr)
    config_ref = ray.put(config)
    llm = config.agent.llm
    keys = {llm.provider.api_key_env: llm.api_key()} if llm is not None else {}  # the proxy runs on the node
    keys.update(work.keys)
    window = cluster.max_in_flight or max(8, 2 * int(ray.cluster_resources().get("CPU", 4)))
    outbox = (ray.remote(read_part), ray.remote(drop_part))  # what the driver asks of the node that ran a run
    queue = collections.deque(plan.todo)
    going: dict[Any, tuple[Competition, int, RunPaths, RunRecord]] = {}
    stop = Stop(config, lambda: len(going))
    done, total, seen = 0, len(plan.todo), 0
    try:
        with stop.installed():
            while (queue or going) and not stop.event.is_set():
                while queue and len(going) < window and not stop.event.is_set():
                    comp, seed = queue.popleft()
                    try:
                        if comp.id not in shipments:
                            shipments[comp.id] = _ship(ray, config, comp, cluster)
                        shipment, data = shipments[comp.id]
                    except HarnessError as error:
                        done += 1
                        settle(batch, plan, config, f"[{done}/{total}]", (comp, seed), _raiser(error))
                        continue
                    staging = RunPaths(store.stage(config.run_group, comp.id, seed))
                    (staging.root / "node.txt").write_text("queued\n", encoding="utf-8")
                    record = new_record(config, comp, seed, ())
                    args = (config_ref, comp.ref, record.to_dict(), shipment, data, agent, ledger, keys, *work.args)
                    ref = task.remote(*args)
                    going[ref] = (comp, seed, staging, record)
                ready = ray.wait(list(going), num_returns=1, timeout=1.0, fetch_local=False)[0] if going else []
                for ref in ready:
                    comp, seed, staging, record = going.pop(ref)
                    done += 1
                    landing = functools.partial(
                        _land, ray, ref, config, comp, store, staging, record, cluster.address, outbox,
                        work.before_land,
                    )  # fmt: skip
                    settle(batch, plan, config, f"[{done}/{total}]", (comp, seed), landing)
                seen = _show_nodes(ray, ledger, seen, going)
            if stop.event.is_set():
                _cancel(ray, going)
    except BaseException:  # podium itself fails: cancel what is out, do not wait
        stop.event.set()
        _cancel(ray, going, grace=0)
        raise
    batch.interrupted, batch.exit_status = stop.event.is_set(), stop.exit_status
    return batch


def _ledger(ray: Any) -> Any:
    """The ledger actor, on the head node (which a lab keeps alive as long as the cluster), else beside the driver."""
    if ray.cluster_resources().get(_HEAD):
        return ray.remote(num_cpus=0, resources={_HEAD: 0.001})(Ledger).remote()
    strategies = ray.util.scheduling_strategies
    here = strategies.NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=True)
    return ray.remote(num_cpus=0)(Ledger).options(scheduling_strategy=here).remote()


def _raiser(error: BaseException) -> Any:
    def result() -> RunRecord:
        raise error

    return result


def _ship(ray: Any, config: RunConfig, competition: Competition, cluster: ClusterSpec) -> tuple[Shipment, Any]:
    """How nodes get ``competition``'s public data, once it passed verification here (as a local run's does)."""
    from podium.data.verify import verify

    check = verify(competition, config.data_dir)
    if check.status != "ok":
        raise HarnessError(f"{competition.id}: prepared data failed verification: {'; '.join(check.problems)}")
    paths = CompetitionPaths(config.data_dir, competition.id)
    checksums = public_checksums((paths.record() or {}).get("checksums", {}))
    digest = public_digest(checksums)
    shipment = Shipment(competition.id, checksums, digest, shared=cluster.node_data_dir)
    if declarations.source_of(competition.folder) != declarations.BUILTIN:  # the user's own: the nodes have none
        folder = competition.folder
        parcel = Parcel.put(ray, folder, skip=[folder / "__pycache__"])
        shipment = replace(shipment, declaration=parcel, declaration_sha256=declarations.digest(folder))
    if cluster.node_data_dir is not None:
        return shipment, None
    return shipment, Parcel.put(ray, paths.public)  # the public folder only: the answers stay here


def _land(
    ray: Any,
    ref: Any,
    config: RunConfig,
    competition: Competition,
    store: RunStore,
    staging: RunPaths,
    record: RunRecord,
    address: str,
    outbox: tuple[Any, Any],
    before_land: Callable[[RunRecord, RunPaths], None] | None = None,
) -> RunRecord:
    """A finished task's run fetched, graded and landed here; a harness error is landed as such and raised."""
    final = RunPaths(store.run_dir(config.run_group, competition.id, record.seed))

    def land(landing: RunRecord) -> None:
        if before_land is not None:
            before_land(landing, staging)
        store.land(staging.root, landing)

    (staging.root / "node.txt").unlink(missing_ok=True)
    try:
        answer = ray.get(ref, timeout=ANSWER_TIMEOUT_S)
    except Exception as error:  # the task itself failed: its node died twice, or it was cancelled
        if type(error).__name__ in ("TaskCancelledError",):
            discard(staging)
            raise RunInterrupted from None
        land(failed_record(record, HarnessError(f"the cluster lost the run: {error}"), staging))
        raise HarnessError(f"the cluster lost the run: {str(error).splitlines()[0][:300]}") from None
    record = _from_node(answer["record"], record)
    attempts = answer["attempts"]
    record.cluster = {"address": address, "attempts": attempts, "retried": len(attempts) > 1}
    if answer.get("withheld"):
        record.cluster["withheld"] = list(answer["withheld"])
    try:
        if answer.get("folder") is not None:
            _fetch(ray, outbox, answer["node_id"], answer["folder"], staging.root, config.disk_bytes)
    except Exception as error:  # the node left, or its tar was refused: this run's failure, nothing half-written
        problem = HarnessError(f"the run's folder from {record.node} could not be landed: {error}")
        tail = record.agent_stderr_tail
        failed_record(record, problem, staging).agent_stderr_tail = tail
        land(record)
        raise problem from None
    if answer["error"] is not None:
        land(record)
        raise HarnessError(answer["error"])
    try:
        grade_run(config, competition, record, staging, final, origin=answer.get("staging"))
    except Exception as error:
        land(failed_record(record, error, staging))
        raise
    land(record)
    return record


def _fetch(
    ray: Any, outbox: tuple[Any, Any], node_id: str, tar: dict[str, Any], root: Path, disk_bytes: int | None
) -> None:
    """The run's tar read from its node's outbox into ``root``, checked member by member on the way.

    It is unpacked into ``root/.incoming`` and its entries moved up only when it is whole; whatever
    fails, ``.incoming`` is removed and the node asked to drop the tar.
    """
    on_node = ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy(node_id, soft=False)
    name = str(tar["name"])
    try:
        size, members, sha256 = int(tar["size"]), int(tar["members"]), str(tar["sha256"])
        cap = disk_bytes if disk_bytes is not None else shutil.disk_usage(root).free
        if members > MAX_MEMBERS or size > tar_bound(cap, members):
            limit = "the run's --disk" if disk_bytes is not None else "the room left on the driver"
            raise UnpackRefused(f"a tar of {size:,} bytes and {members:,} members is more than {limit} can take")
        read = outbox[0].options(num_cpus=0, max_retries=0, scheduling_strategy=on_node)

        def parts() -> Iterator[bytes]:
            offsets = iter(range(0, size, CHUNK_BYTES))
            asked = collections.deque(
                read.remote(name, at, CHUNK_BYTES) for at in itertools.islice(offsets, PREFETCH_PARTS)
            )
            while asked:
                piece = ray.get(asked.popleft(), timeout=PART_TIMEOUT_S)
                asked.extend(read.remote(name, at, CHUNK_BYTES) for at in itertools.islice(offsets, 1))
                yield piece

        incoming = root / INCOMING
        caps = {"max_bytes": cap, "max_members": members, "reserved": RESERVED}
        unpack_fresh(lambda: ChunkStream(parts(), size, sha256), incoming, **caps)
        for entry in sorted(os.listdir(incoming)):
            os.rename(incoming / entry, root / entry)
        incoming.rmdir()
    finally:
        shutil.rmtree(root / INCOMING, ignore_errors=True)
        with contextlib.suppress(Exception):  # the tar is not needed any more; a node that left took it along
            outbox[1].options(num_cpus=0, max_retries=0, scheduling_strategy=on_node).remote(name)


def _show_nodes(ray: Any, ledger: Any, seen: int, going: dict[Any, Any]) -> int:
    """Write, for ``podium serve``, the node of each run that started since the last look."""
    with contextlib.suppress(Exception):
        mark, nodes = ray.get(ledger.since.remote(seen), timeout=5)
        if nodes:
            for comp, seed, staging, record in going.values():
                node = nodes.get(f"{record.run_group}/{comp.id}/{seed}")
                if node is not None:
                    with contextlib.suppress(OSError):
                        (staging.root / "node.txt").write_text(node + "\n", encoding="utf-8")
        return int(mark)
    return seen


def _cancel(
    ray: Any, going: dict[Any, tuple[Competition, int, RunPaths, RunRecord]], grace: float = CANCEL_GRACE_S
) -> None:
    """Cancel every run still out: first so that nodes kill their sandboxes, then by force; nothing is kept."""
    print(f"cancelling {len(going)} run(s) on the cluster", file=sys.stderr, flush=True)
    for ref in going:
        with contextlib.suppress(Exception):
            ray.cancel(ref, force=False)
    deadline = time.monotonic() + grace
    left = list(going)
    while left and time.monotonic() < deadline:
        _, left = ray.wait(left, num_returns=len(left), timeout=0.5, fetch_local=False)
    for ref in left:
        with contextlib.suppress(Exception):
            ray.cancel(ref, force=True)
    for _, _, staging, _ in going.values():
        discard(staging)
    going.clear()


#: What a run is (which agent, competition, seed, settings): the driver's to say, never the node's.
_DRIVER_FIELDS = (
    "run_group", "competition_id", "competition_version", "seed", "agent", "agent_hash", "agent_folder", "sandbox",
    "image", "environment", "podium_version", "limits", "description",
)  # fmt: skip


def _from_node(data: Any, ours: RunRecord) -> RunRecord:
    """The node's record of a run, with what the run is taken from the driver's own record (a compromised node
    cannot rename the agent, point the audit at another agent folder or change the limits the run had) and no
    grade (the driver grades). What the node observed (the agent's result, the isolation, the compute, the
    calls) is the node's, and the record says which node made it."""
    if not isinstance(data, dict):
        raise HarnessError(f"the node sent a record that is not a JSON object ({type(data).__name__})")
    record = RunRecord.from_dict(data)
    gpu_ids = record.limits.get("gpu_ids") if isinstance(record.limits, dict) else None
    for name in _DRIVER_FIELDS:
        setattr(record, name, getattr(ours, name))
    if isinstance(gpu_ids, list) and all(type(i) is int for i in gpu_ids):  # which of its GPUs: the node's to say
        record.limits = {**ours.limits, "gpu_ids": gpu_ids}
    record.grade = None
    return record
