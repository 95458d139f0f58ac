"""`podium run`: agents in sandboxes on competitions; submissions graded outside; a report.

One run = one (competition, seed): the prepared public folder goes in read-only, the agent works
in /home under its time and memory limits with a validation endpoint on a Unix socket, and what it
leaves (submission, code, logs) comes out into ``RUNS/<group>/<competition>/<seed>/``. The private
answers never enter the sandbox; grading happens afterwards, here.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import socket as socket_module
import sys
import threading
import time
import traceback
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from podium import __version__, owner
from podium.agents import AgentSpec
from podium.competition import Competition
from podium.errors import HarnessError, PodiumError
from podium.isolation import grade_isolated
from podium.llm_proxy import BRIDGE_PORT, LLMConfig, LLMProxy
from podium.store import RunStore

__all__ = ["RunConfig", "run_all", "run_one"]

SANDBOX_FILES = Path(str(resources.files("podium") / "sandbox_files"))

INSTRUCTIONS = """\
# Your task

You are solving a machine-learning competition offline. Everything you need is in /home/data
(read-only): the data and description.md, which explains the goal, the files, the metric and the
submission format.

- Write your predictions to /home/submission/submission.csv, in the format of the sample
  submission. Only that file is graded. It must be a regular file (a symbolic link is not
  followed) of at most 8 times the size of the sample submission or 256 MiB, whichever is more
  (`GET /health` on /home/validate.sock gives the cap in bytes).
- Put your code in /home/code and anything worth keeping in /home/logs.
- Check the format of your submission with `/home/validate_submission.sh [PATH]` (or
  `python3 /home/validate_submission.py [PATH]`). It says whether the file would be accepted; it
  never reveals a score. It is rate-limited.
- You have {time_limit} of wall-clock time (TIME_LIMIT_SECS={time_limit_secs}); the run is
  stopped when it runs out. Hardware: {hardware}.

Rules: do not label test data by hand; do not look up or copy solutions to this competition;
work only with the files given here. Your logs and code are kept and checked for rule violations.
"""


@dataclass(frozen=True)
class RunConfig:
    agent: AgentSpec
    seeds: int
    time_limit: float
    sandbox: str
    cpus: float | None
    memory_bytes: int | None
    gpus: int
    run_group: str
    data_dir: Path
    runs_dir: Path
    workers: int = 1
    disk_bytes: int | None = None  # what submission/, code/ and logs/ may hold together
    image: str | None = None  # the agent's docker image, once resolved (built) by run_all


class GpuPool:
    """Hands each run its own GPUs (host indices); a run waits until enough are free."""

    def __init__(self, indices: list[int], per_run: int) -> None:
        self.free = list(indices)
        self.per_run = per_run
        self._changed = threading.Condition()

    @classmethod
    def for_config(cls, config: RunConfig) -> GpuPool | None:
        if not config.gpus:
            return None
        from podium.sandbox._gpu import list_gpus

        indices = [gpu.index for gpu in list_gpus(required=True)]
        if len(indices) < config.gpus:
            raise PodiumError(
                f"--gpus {config.gpus} asks for {config.gpus} GPU(s) per run, but this machine has {len(indices)} "
                "(as nvidia-smi lists them). Fix: pass a smaller --gpus, or --gpus 0 for CPU-only runs."
            )
        return cls(indices, config.gpus)

    @contextlib.contextmanager
    def take(self) -> Iterator[tuple[int, ...]]:
        with self._changed:
            self._changed.wait_for(lambda: len(self.free) >= self.per_run)
            mine, self.free = tuple(self.free[: self.per_run]), self.free[self.per_run :]
        try:
            yield mine
        finally:
            with self._changed:
                self.free = sorted([*self.free, *mine])
                self._changed.notify_all()


def _hardware(config: RunConfig, gpu_ids: tuple[int, ...] = ()) -> str:
    cpus = config.cpus or os.cpu_count() or 1
    memory = f"{config.memory_bytes / 2**30:.0f} GiB memory" if config.memory_bytes else "memory not capped"
    gpus = "no GPU"
    if gpu_ids:
        from podium.sandbox._gpu import list_gpus

        names = [g.name for g in list_gpus() if g.index in gpu_ids]
        gpus = f"{len(gpu_ids)} GPU(s)" + (f" ({', '.join(names)})" if names else "")
    return f"{cpus:g} CPU core(s), {memory}, {gpus}"


def _duration(seconds: float) -> str:
    hours, rest = divmod(int(seconds), 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


def run_one(
    config: RunConfig, competition: Competition, seed: int, store: RunStore, gpus: GpuPool | None = None
) -> dict[str, Any]:
    """Run the agent once on one competition; returns the finished run's record."""
    if config.gpus and gpus is None:
        gpus = GpuPool.for_config(config)
    with gpus.take() if gpus is not None else contextlib.nullcontext(()) as gpu_ids:
        return _run_one(config, competition, seed, store, gpu_ids)


def _run_one(
    config: RunConfig, competition: Competition, seed: int, store: RunStore, gpu_ids: tuple[int, ...]
) -> dict[str, Any]:
    from podium.data.layout import CompetitionPaths
    from podium.data.verify import verify
    from podium.sandbox import Limits, Mount, get_sandbox
    from podium.validation_server import ValidationServer

    paths = CompetitionPaths(config.data_dir, competition.id)
    check = verify(competition, config.data_dir)
    if check.status != "ok":
        raise HarnessError(f"{competition.id}: prepared data failed verification: {'; '.join(check.problems)}")
    staging = store.stage(config.run_group, competition.id, seed)
    folders = {name: staging / name for name in ("submission", "code", "logs", "home")}
    for folder in folders.values():
        folder.mkdir(parents=True)
    sample = paths.prepared / competition.sample_submission
    env = {
        **config.agent.env,
        "COMPETITION_ID": competition.id,
        "TIME_LIMIT_SECS": str(int(config.time_limit)),
        "HARDWARE": _hardware(config, gpu_ids),
        "SEED": str(seed),
        "PODIUM_VALIDATION_SOCKET": "/home/validate.sock",
    }
    instructions = folders["home"] / "instructions.md"
    instructions.write_text(
        INSTRUCTIONS.format(
            time_limit=_duration(config.time_limit), time_limit_secs=int(config.time_limit), hardware=env["HARDWARE"]
        ),
        encoding="utf-8",
    )
    socket_dir = owner.mkdtemp("v")  # short path: Unix sockets allow ~100 bytes
    socket = socket_dir / "validate.sock"
    mounts = [
        Mount(paths.public, "/home/data"),
        Mount(folders["submission"], "/home/submission", writable=True),
        Mount(folders["code"], "/home/code", writable=True),
        Mount(folders["logs"], "/home/logs", writable=True),
        Mount(instructions, "/home/instructions.md"),
        Mount(SANDBOX_FILES / "validate_submission.py", "/home/validate_submission.py"),
        Mount(SANDBOX_FILES / "validate_submission.sh", "/home/validate_submission.sh"),
        Mount(socket, "/home/validate.sock"),
    ]
    if config.image is None:  # an agent image carries the agent itself (MLE-bench images keep it in /home/agent)
        mounts.append(Mount(config.agent.folder, "/home/agent"))
    limits = Limits(
        wall_seconds=config.time_limit,
        memory_bytes=config.memory_bytes,
        cpus=config.cpus,
        gpus=gpu_ids,
        disk_bytes=config.disk_bytes,
    )
    command = list(config.agent.command)
    llm = config.agent.llm
    started = datetime.now(UTC)
    llm_summary = None
    try:
        with contextlib.ExitStack() as stack:
            server = stack.enter_context(
                ValidationServer(competition, sample, socket, staging / "validation_calls.jsonl")
            )
            proxy = None
            if llm is not None:
                proxy = stack.enter_context(LLMProxy(llm, socket_dir / "llm.sock", staging / "llm_calls.jsonl"))
                mounts.append(Mount(socket_dir / "llm.sock", "/home/llm.sock"))
                env.update(_llm_env(llm, config.sandbox))
                if llm.bridge:
                    mounts.append(Mount(SANDBOX_FILES / "llm_bridge.py", "/home/llm_bridge.py"))
                    listen = env["PODIUM_LLM_LISTEN"]
                    command = ["python3", "/home/llm_bridge.py", "--listen", listen, "--socket", "/home/llm.sock", "--"]
                    command += list(config.agent.command)
            result = get_sandbox(config.sandbox, image=config.image).run(
                command,
                mounts=mounts,
                env=env,
                limits=limits,
                workdir="/home",
                stdout=folders["logs"] / "agent.stdout.log",
                stderr=folders["logs"] / "agent.stderr.log",
            )
            calls = server.calls
            if proxy is not None:
                llm_summary = proxy.summary()
    finally:
        shutil.rmtree(socket_dir, ignore_errors=True)
    report = grade_isolated(competition, folders["submission"], config.data_dir)
    record = {
        "run_group": config.run_group,
        "competition_id": competition.id,
        "competition_version": competition.version,
        "seed": seed,
        "agent": config.agent.name,
        "status": "finished",
        "sandbox": config.sandbox,
        "image": config.image,
        "podium_version": __version__,
        "started_at": started.isoformat(timespec="seconds"),
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "limits": {
            "time_limit_s": config.time_limit,
            "memory_bytes": config.memory_bytes,
            "cpus": config.cpus,
            "gpus": config.gpus,
            "gpu_ids": list(gpu_ids),
            "disk_bytes": config.disk_bytes,
        },
        "agent_result": _jsonable(result),
        "validation_calls": calls,
        "llm": llm_summary,
        "grade": report.to_dict(),
    }
    final = store.land(staging, record)  # durably: record, rename, index (see podium.store)
    record["grade"]["submission_path"] = str(final / "submission" / "submission.csv")
    return record


def _llm_env(llm: LLMConfig, sandbox: str) -> dict[str, str]:
    """How the agent reaches its model: the proxy socket, and base URLs on the bridge's loopback port."""
    port = BRIDGE_PORT
    if sandbox == "local":  # the host's loopback: take a free port instead of a fixed one
        with socket_module.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
    env = {"PODIUM_LLM_SOCKET": "/home/llm.sock", "PODIUM_LLM_PROVIDER": llm.provider.name}
    if llm.models:
        env["PODIUM_LLM_MODELS"] = ",".join(llm.models)
    if llm.bridge:
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


def sweep_leftovers(store: RunStore) -> None:
    """What podium processes killed mid-run left behind (never a live one's): staging folders, temporary
    folders and cgroups, told apart by their owner's token, not by age."""
    from podium.sandbox._cgroup import sweep_abandoned

    store.sweep()
    owner.sweep_temp()
    sweep_abandoned()


def resolve_image(config: RunConfig) -> RunConfig:
    """The config with the agent's image settled: named in agent.yaml, or built locally from its folder."""
    agent = config.agent
    if not agent.needs_docker:
        return config
    if config.sandbox != "docker":
        raise PodiumError(
            f"agent {agent.name!r} runs in a Docker image ('image:'/'build:' in its agent.yaml), so it needs "
            f"--sandbox docker, not {config.sandbox!r}"
        )
    if agent.build is None:
        return replace(config, image=agent.image)
    from podium.sandbox._docker import DockerSandbox, build_agent_image

    digest = hashlib.sha256()
    for path in sorted(p for p in agent.build.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(agent.build)).encode() + b"\0" + path.read_bytes())
    tag = agent.image or f"podium-agent-{agent.name.lower()}:{digest.hexdigest()[:12]}"
    print(f"building the agent image {tag} from {agent.build} (local engine, no pulls) ...", file=sys.stderr)
    build_agent_image(DockerSandbox.find().client, agent.build, tag)
    return replace(config, image=tag)


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

    def track(self, fn: Any, config: RunConfig, competition: Competition, seed: int, *args: Any) -> Any:
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
                going = ", ".join(f"{key} ({_duration(now - t0)})" for key, t0 in sorted(self.running.items()))
            if going:
                print(f"[{self.finished}/{self.total} done] running: {going}", file=sys.stderr, flush=True)

    def __enter__(self) -> _Progress:
        if self.interval > 0:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()


def run_all(config: RunConfig, competitions: list[Competition]) -> list[dict[str, Any]]:
    """Every (competition, seed) pair not finished yet; finished ones are skipped, not rerun."""
    store = RunStore(config.runs_dir)
    sweep_leftovers(store)
    recovered = store.reconcile(config.run_group)
    others = {r["agent"] for r in store.rows(config.run_group)} - {config.agent.name}
    if others:
        raise PodiumError(
            f"run group {config.run_group!r} already holds runs of agent(s) {sorted(others)}; "
            f"a group is one agent's batch: pass another --run-group"
        )
    if recovered:
        print(f"indexed {recovered} finished run(s) left unindexed by an interrupted session", file=sys.stderr)
    pairs = [(c, s) for c in competitions for s in range(config.seeds)]
    todo = [(c, s) for c, s in pairs if not store.is_done(config.run_group, c.id, s, config.agent.name)]
    print(f"{len(pairs) - len(todo)} of {len(pairs)} run(s) already finished; running {len(todo)}", file=sys.stderr)
    records: list[dict[str, Any]] = []
    if not todo:
        return records
    if config.agent.llm is not None:
        config.agent.llm.api_key()  # a missing key stops the batch here, before any run starts
    config = resolve_image(config)
    gpus = GpuPool.for_config(config)
    if gpus is not None and config.workers * config.gpus > len(gpus.free):
        print(
            f"{len(gpus.free)} GPU(s) for {config.workers} worker(s) x {config.gpus} GPU(s): runs wait for free GPUs",
            file=sys.stderr,
        )
    progress = _Progress(len(todo))
    with ThreadPoolExecutor(max_workers=max(1, config.workers)) as pool, progress:
        futures = {pool.submit(progress.track, run_one, config, c, s, store, gpus): (c, s) for c, s in todo}
        for done, future in enumerate(as_completed(futures), start=1):
            progress.finished = done
            comp, seed = futures[future]
            try:
                record = future.result()
            except PodiumError as exc:
                print(f"[{done}/{len(todo)}] {comp.ref} seed {seed}: not run: {exc}", file=sys.stderr)
                continue
            except Exception:
                print(
                    f"[{done}/{len(todo)}] {comp.ref} seed {seed}: harness error:\n{traceback.format_exc()}",
                    file=sys.stderr,
                )
                continue
            g = record["grade"]
            outcome = f"score {g['score']:.5g}" if g["score"] is not None else f"no score ({g['error']})"
            for other in g.get("other_versions") or ():
                if other["score"] is not None:
                    outcome += f" (version {other['competition_version']}: {other['score']:.5g})"
            if record["agent_result"]["killed_for"]:
                outcome += f"; the agent was stopped at its {record['agent_result']['killed_for']} limit"
            print(f"[{done}/{len(todo)}] {comp.ref} seed {seed}: {outcome}", file=sys.stderr)
            records.append(record)
    return records
