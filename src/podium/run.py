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
import signal
import socket as socket_module
import sys
import threading
import time
import traceback
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from podium import __version__, owner, rungroup
from podium.agents import AgentSpec, folder_digest
from podium.competition import Competition
from podium.errors import HarnessError, PodiumError
from podium.isolation import grade_isolated
from podium.llm_proxy import BRIDGE_PORT, LLMConfig, LLMProxy
from podium.store import RunStore

__all__ = ["Batch", "RunConfig", "RunInterrupted", "agent_failures", "run_all", "run_batch", "run_one"]

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
    agent_hash: str | None = None  # hash of the agent's folder (part of the group's identity), set by run_all


class RunInterrupted(Exception):
    """The batch was interrupted (Ctrl-C) before this run finished; nothing of it was kept."""


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
    def take(self, cancel: threading.Event | None = None) -> Iterator[tuple[int, ...]]:
        with self._changed:
            while not self._changed.wait_for(lambda: len(self.free) >= self.per_run, timeout=0.5):
                if cancel is not None and cancel.is_set():
                    raise RunInterrupted
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
    config: RunConfig,
    competition: Competition,
    seed: int,
    store: RunStore,
    gpus: GpuPool | None = None,
    stop: _Stop | None = None,
) -> dict[str, Any]:
    """Run the agent once on one competition; returns the finished run's record.

    With ``stop`` (a batch's Ctrl-C), a run that is interrupted leaves nothing behind and raises
    :class:`RunInterrupted`; a finished run that replaces an earlier one (``--redo``) swaps places
    with it, so one of the two is always in place.
    """
    if stop is not None and stop.event.is_set():
        raise RunInterrupted
    if config.gpus and gpus is None:
        gpus = GpuPool.for_config(config)
    cancel = stop.event if stop is not None else None
    with gpus.take(cancel) if gpus is not None else contextlib.nullcontext(()) as gpu_ids:
        return _run_one(config, competition, seed, store, gpu_ids, stop)


def _run_one(
    config: RunConfig,
    competition: Competition,
    seed: int,
    store: RunStore,
    gpu_ids: tuple[int, ...],
    stop: _Stop | None = None,
) -> dict[str, Any]:
    from podium.data.verify import verify

    check = verify(competition, config.data_dir)
    if check.status != "ok":
        raise HarnessError(f"{competition.id}: prepared data failed verification: {'; '.join(check.problems)}")
    if stop is not None and stop.event.is_set():
        raise RunInterrupted
    final = store.run_dir(config.run_group, competition.id, seed)
    staging = store.stage(config.run_group, competition.id, seed)
    record = {
        "run_group": config.run_group,
        "competition_id": competition.id,
        "competition_version": competition.version,
        "seed": seed,
        "agent": config.agent.name,
        "agent_hash": config.agent_hash,
        "status": "finished",
        "sandbox": config.sandbox,
        "image": config.image,
        "podium_version": __version__,
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "limits": {
            "time_limit_s": config.time_limit,
            "memory_bytes": config.memory_bytes,
            "cpus": config.cpus,
            "gpus": config.gpus,
            "gpu_ids": list(gpu_ids),
            "disk_bytes": config.disk_bytes,
        },
    }
    try:
        result, calls, llm_summary, started = _sandboxed(config, competition, seed, staging, gpu_ids)
        if stop is not None and stop.event.is_set() and _killed(result):  # an agent that ended on its own is kept
            raise RunInterrupted
        report = grade_isolated(competition, staging / "submission", config.data_dir)
    except BaseException as error:
        if isinstance(error, RunInterrupted) or (stop is not None and stop.event.is_set()):
            _discard(staging)  # killed by the Ctrl-C: nothing of it is kept
            raise RunInterrupted from None
        if isinstance(
            error, Exception
        ):  # podium, its data or the engine failed: recorded as such, never as the agent's
            _land_harness_failure(store, staging, record, error, stop)
        raise
    grade_dict = _moved(report.to_dict(), str(staging), str(final))
    grade_dict["submission_path"] = str(final / "submission" / "submission.csv")
    record |= {
        "started_at": started.isoformat(timespec="seconds"),
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "agent_result": _jsonable(result),
        "agent_stderr_tail": _tail(staging / "logs" / "agent.stderr.log"),
        "validation_calls": calls,
        "llm": llm_summary,
        "grade": grade_dict,
    }
    with stop.landing if stop is not None else contextlib.nullcontext():
        store.land(staging, record)  # durably: record, rename (replacing a redone run), index; see podium.store
    return record


def _land_harness_failure(
    store: RunStore, staging: Path, record: dict[str, Any], error: Exception, stop: _Stop | None
) -> None:
    """Keep a run that failed because of podium, its data or the Docker engine, as ``status: harness_error``.

    Reports count it apart from the agent's failures, and a plain rerun runs it again. What the agent
    left (its logs, code, submission) stays in the folder for the diagnosis.
    """
    text = str(error) if isinstance(error, PodiumError) else "".join(traceback.format_exception(error)).strip()
    record |= {
        "status": "harness_error",
        "error": f"{type(error).__name__}: {text}",
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "agent_result": None,
        "agent_stderr_tail": _tail(staging / "logs" / "agent.stderr.log"),
        "grade": None,
    }
    with contextlib.suppress(Exception), stop.landing if stop is not None else contextlib.nullcontext():
        store.land(staging, record)


def _killed(result: Any) -> bool:
    """Whether a sandbox's result looks like a kill (SIGKILL, directly or as docker's 137, or a limit)."""
    return result.exit_code is None or result.exit_code < 0 or result.exit_code == 128 + signal.SIGKILL


def _discard(staging: Path) -> None:
    """Remove an interrupted run's staging folder, and its competition's folder if that is now empty."""
    shutil.rmtree(staging, ignore_errors=True)
    with contextlib.suppress(OSError):
        staging.parent.rmdir()


def _moved(value: Any, old: str, new: str) -> Any:
    """``value`` with the path prefix ``old`` replaced by ``new`` in every string (a run's staging folder)."""
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, dict):
        return {k: _moved(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_moved(v, old, new) for v in value]
    return value


def _tail(path: Path, lines: int = 12, max_bytes: int = 8192) -> list[str]:
    """The last non-empty lines of a log file (at most ``max_bytes`` of it); [] when there is none."""
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, handle.seek(0, os.SEEK_END) - max_bytes))
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return []
    return [line.rstrip()[:500] for line in text.splitlines() if line.strip()][-lines:]


def _sandboxed(
    config: RunConfig, competition: Competition, seed: int, staging: Path, gpu_ids: tuple[int, ...]
) -> tuple[Any, list[Any], dict[str, Any] | None, datetime]:
    """Run the agent in its sandbox with its files in ``staging``: (result, validation calls, LLM summary, start)."""
    from podium.data.layout import CompetitionPaths
    from podium.sandbox import Limits, Mount, get_sandbox
    from podium.validation_server import ValidationServer

    paths = CompetitionPaths(config.data_dir, competition.id)
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
    return result, calls, llm_summary, started


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


class _Stop:
    """Ctrl-C during a batch: no run starts any more, and the running ones are killed within seconds.

    The first SIGINT sets :attr:`event` (every run checks it before it starts and after its sandbox
    returns, and then leaves nothing behind) and kills the running sandboxes through their own kill
    paths: the process trees that bwrap and local sandboxes start as sessions of their own under
    podium, and the containers labelled with this podium process under docker. Each sandbox then
    returns as for a killed agent and removes what it set up (cgroups, containers). The batch ends
    with the runs that finished, and the command writes the report.

    A second SIGINT quits at once: the sandboxes are killed again, this process's staging folders
    are removed (never while a finished run is being moved into place), and podium exits 130.
    """

    def __init__(self, config: RunConfig, progress: _Progress) -> None:
        self.config = config
        self.progress = progress
        self.event = threading.Event()
        self.landing = threading.Lock()  # held while a finished run is moved into place
        self.finished = threading.Event()
        self.signals = 0

    @contextlib.contextmanager
    def installed(self) -> Iterator[_Stop]:
        """Catch SIGINT while the batch runs (only in the main thread, and unless SIGINT is ignored)."""
        catch = threading.current_thread() is threading.main_thread()
        previous = signal.getsignal(signal.SIGINT) if catch else None
        catch = catch and previous is not signal.SIG_IGN
        if catch:
            signal.signal(signal.SIGINT, self._on_signal)
        try:
            yield self
        finally:
            self.finished.set()
            if catch:
                signal.signal(signal.SIGINT, previous)

    def _on_signal(self, signum: int, frame: object) -> None:
        self.signals += 1
        if self.signals == 1:
            self.event.set()
            threading.Thread(target=self._stop_runs, name="podium-stop", daemon=True).start()
            return
        # Runs in the main thread between two bytecodes, maybe inside a print: write to the fd directly.
        with contextlib.suppress(OSError):
            os.write(2, b"\ninterrupted again: quitting now; rerun the same command to resume\n")
        self.kill_running()
        if self.landing.acquire(timeout=10):
            RunStore(self.config.runs_dir).discard_own_staging(self.config.run_group)
        os._exit(130)

    def _stop_runs(self) -> None:
        running = len(self.progress.running)
        with contextlib.suppress(OSError):  # stderr may be a closed pipe; the runs are stopped all the same
            print(
                f"\nstopping: no new runs; killing the {running} running run(s) (Ctrl-C again to quit at once)",
                file=sys.stderr,
                flush=True,
            )
        while not self.finished.is_set():  # again and again: a run may have started its sandbox just now
            self.kill_running()
            self.finished.wait(0.5)

    def kill_running(self) -> None:
        """Kill every sandbox this process is running, through the sandboxes' own kill paths."""
        from podium.sandbox._process import kill_tree

        for pid in _own_sessions():
            with contextlib.suppress(OSError):
                kill_tree(pid)
        if self.config.sandbox == "docker":
            with contextlib.suppress(Exception):
                from podium.sandbox import get_sandbox
                from podium.sandbox._docker import HARNESS_LABEL, _harness_id

                client = get_sandbox("docker", image=self.config.image).client  # type: ignore[attr-defined]
                for container in client.containers.list(filters={"label": f"{HARNESS_LABEL}={_harness_id()}"}):
                    with contextlib.suppress(Exception):
                        container.kill()


def _own_sessions() -> list[int]:
    """This process's children that lead sessions of their own: the sandboxes' commands (bwrap, local)."""
    me, found = os.getpid(), []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            text = Path(f"/proc/{entry.name}/stat").read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2 :].split()  # state, ppid, pgrp, session, ...
        if int(fields[1]) == me and int(fields[3]) == int(entry.name):
            found.append(int(entry.name))
    return found


def _seconds_text(seconds: float) -> str:
    return f"{seconds:.2f}s" if seconds < 10 else f"{seconds:.0f}s" if seconds < 60 else _duration(seconds)


def agent_end(result: Mapping[str, Any]) -> str:
    """How the agent's process ended, in words: 'exited with status 1 after 0.03s' and the like."""
    took = _seconds_text(float(result.get("seconds") or 0))
    code, killed = result.get("exit_code"), result.get("killed_for")
    if killed:
        return f"was stopped at its {killed} limit after {took}"
    if code is None:
        return f"was stopped after {took}"
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"was killed by signal {signal.Signals(-code).name} after {took}"
        return f"was killed by signal {-code} after {took}"
    return f"exited with status {code} after {took}"


def crashed(result: Mapping[str, Any]) -> bool:
    """Whether the agent ended badly on its own (not at a limit podium enforced)."""
    code = result.get("exit_code")
    return not result.get("killed_for") and code is not None and code != 0


def outcome(record: Mapping[str, Any]) -> str:
    """A finished run in one line (and, for an agent that crashed, the last lines of its stderr)."""
    g, result = record["grade"], record["agent_result"]
    if g["score"] is not None:
        text = f"score {g['score']:.5g}"
        for other in g.get("other_versions") or ():
            if other["score"] is not None:
                text += f" (version {other['competition_version']}: {other['score']:.5g})"
    elif not g["submission_exists"]:
        text = "no submission"
    else:
        text = f"invalid submission: {g['error']}"
    if crashed(result) or result.get("killed_for") or g["score"] is None:
        text += f"; the agent {agent_end(result)}"
    tail = record.get("agent_stderr_tail") or []
    if crashed(result) and tail:
        log = Path(g["submission_path"]).parent.parent / "logs" / "agent.stderr.log"
        text += f"; its stderr ended with ({log}):\n" + "\n".join(f"    {line}" for line in tail[-5:])
    return text


def agent_failures(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The runs (index rows) whose agent crashed, was stopped at a limit, or left no valid submission:
    competition, seed, how the agent ended, and the last lines of its stderr (from each run's record)."""
    out = []
    for row, record in rungroup.records(rows):
        if record.get("status") != "finished":  # the harness failed, not the agent
            continue
        result = record.get("agent_result") or {}
        if not (crashed(result) or result.get("killed_for") or not row["valid_submission"]):
            continue
        log = Path(row["record_path"]).parent / "logs" / "agent.stderr.log"
        out.append(
            {
                "competition_id": row["competition_id"],
                "competition_version": row["competition_version"],
                "seed": row["seed"],
                "exit_code": result.get("exit_code"),
                "killed_for": result.get("killed_for"),
                "seconds": result.get("seconds"),
                "ended": agent_end(result),
                "crashed": crashed(result),
                "submission": "valid" if row["valid_submission"] else "invalid" if row["submission_exists"] else "none",
                "stderr_tail": record.get("agent_stderr_tail") or _tail(log),
                "stderr_log": str(log),
            }
        )
    return out


@dataclass
class Batch:
    """What one `podium run` command did."""

    pairs: list[tuple[Competition, int]]  # every (competition, seed) it named
    records: list[dict[str, Any]] = field(default_factory=list)  # the runs it finished
    not_run: list[str] = field(default_factory=list)  # runs that could not run (an error of podium or its data)
    interrupted: bool = False  # stopped by Ctrl-C


def run_all(config: RunConfig, competitions: list[Competition]) -> list[dict[str, Any]]:
    """Every (competition, seed) pair not finished yet; finished ones are skipped, not rerun."""
    return run_batch(config, competitions).records


def run_batch(config: RunConfig, competitions: list[Competition], redo: rungroup.Redo | None = None) -> Batch:
    """Run what the group still lacks of ``competitions`` x seeds (and what ``redo`` names again).

    The group's settings are checked first (:func:`podium.rungroup.plan`); Ctrl-C stops the batch
    cleanly (:class:`_Stop`) and the result says so.
    """
    store = RunStore(config.runs_dir)
    group_dir = config.runs_dir / config.run_group
    sweep_leftovers(store)
    recovered = store.reconcile(config.run_group)
    if recovered:
        print(f"indexed {recovered} finished run(s) left unindexed by an interrupted session", file=sys.stderr)
    if config.agent_hash is None:
        config = replace(config, agent_hash=folder_digest(config.agent.folder, skip=[config.runs_dir]))
    plan = rungroup.plan(config, competitions, store, redo)
    for note in plan.notes:
        print(note, file=sys.stderr)
    todo = plan.todo
    redone = f" ({plan.redoing} of them again)" if plan.redoing else ""
    done_before = len(plan.pairs) - len(todo) + plan.redoing
    print(f"{done_before} of {len(plan.pairs)} run(s) already finished; running {len(todo)}{redone}", file=sys.stderr)
    batch = Batch(plan.pairs)
    if todo:
        if config.agent.llm is not None:
            config.agent.llm.api_key()  # a missing key stops the batch here, before any run starts
        config = resolve_image(config)
    rungroup.write(group_dir, plan.document)
    if not todo:
        return batch
    gpus = GpuPool.for_config(config)
    if gpus is not None and config.workers * config.gpus > len(gpus.free):
        print(
            f"{len(gpus.free)} GPU(s) for {config.workers} worker(s) x {config.gpus} GPU(s): runs wait for free GPUs",
            file=sys.stderr,
        )
    progress = _Progress(len(todo))
    stop = _Stop(config, progress)
    pool = ThreadPoolExecutor(max_workers=max(1, config.workers))
    try:
        with stop.installed(), progress:
            futures = {pool.submit(progress.track, run_one, config, c, s, store, gpus, stop): (c, s) for c, s in todo}
            for done, future in enumerate(as_completed(futures), start=1):
                progress.finished = done
                comp, seed = futures[future]
                try:
                    record = future.result()
                except RunInterrupted:
                    continue
                except PodiumError as exc:
                    batch.not_run.append(f"{comp.ref} seed {seed}")
                    print(
                        f"[{done}/{len(todo)}] {comp.ref} seed {seed}: harness error (not the agent's; a rerun runs it "
                        f"again): {exc}",
                        file=sys.stderr,
                    )
                    continue
                except Exception:
                    batch.not_run.append(f"{comp.ref} seed {seed}")
                    print(
                        f"[{done}/{len(todo)}] {comp.ref} seed {seed}: harness error:\n{traceback.format_exc()}",
                        file=sys.stderr,
                    )
                    continue
                print(f"[{done}/{len(todo)}] {comp.ref} seed {seed}: {outcome(record)}", file=sys.stderr, flush=True)
                batch.records.append(record)
                if "pending_redo" in plan.document:
                    rungroup.landed(group_dir, (comp.id, seed))
    except BaseException:  # podium itself fails (or its output is a closed pipe): stop the runs, do not wait
        stop.event.set()
        stop.kill_running()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    batch.interrupted = stop.event.is_set()
    return batch
