"""`podium run`: agents in sandboxes on competitions; submissions graded outside; a report.

One run = one (competition, seed): the prepared public folder goes in read-only, the agent works
in /home under its time and memory limits with a validation endpoint on a Unix socket, and what it
leaves (submission, code, logs) comes out into ``RUNS/<group>/<competition>/<seed>/``. The private
answers never enter the sandbox; grading happens afterwards, here.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
import traceback
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from podium import __version__
from podium.agents import AgentSpec
from podium.competition import Competition
from podium.errors import HarnessError, PodiumError
from podium.grading import grade
from podium.store import RunStore

__all__ = ["RunConfig", "run_all", "run_one"]

SANDBOX_FILES = Path(str(resources.files("podium") / "sandbox_files"))

INSTRUCTIONS = """\
# Your task

You are solving a machine-learning competition offline. Everything you need is in /home/data
(read-only): the data and description.md, which explains the goal, the files, the metric and the
submission format.

- Write your predictions to /home/submission/submission.csv, in the format of the sample
  submission. Only that file is graded.
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


def _hardware(config: RunConfig) -> str:
    cpus = config.cpus or os.cpu_count() or 1
    memory = f"{config.memory_bytes / 2**30:.0f} GiB memory" if config.memory_bytes else "memory not capped"
    gpus = f"{config.gpus} GPU(s)" if config.gpus else "no GPU"
    return f"{cpus:g} CPU core(s), {memory}, {gpus}"


def _duration(seconds: float) -> str:
    hours, rest = divmod(int(seconds), 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


def run_one(config: RunConfig, competition: Competition, seed: int, store: RunStore) -> dict[str, Any]:
    """Run the agent once on one competition; returns the finished run's record."""
    from podium.data.layout import CompetitionPaths
    from podium.data.verify import verify
    from podium.sandbox import Limits, Mount, get_sandbox
    from podium.validation_server import ValidationServer

    paths = CompetitionPaths(config.data_dir, competition.id)
    check = verify(competition, config.data_dir)
    if check.status != "ok":
        raise HarnessError(f"{competition.id}: prepared data failed verification: {'; '.join(check.problems)}")
    final = store.run_dir(config.run_group, competition.id, seed)
    staging = final.with_name(f".{seed}.tmp-{os.getpid()}-{time.monotonic_ns()}")
    folders = {name: staging / name for name in ("submission", "code", "logs", "home")}
    for folder in folders.values():
        folder.mkdir(parents=True)
    sample = paths.prepared / competition.sample_submission
    env = {
        **config.agent.env,
        "COMPETITION_ID": competition.id,
        "TIME_LIMIT_SECS": str(int(config.time_limit)),
        "HARDWARE": _hardware(config),
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
    socket_dir = Path(tempfile.mkdtemp(prefix="podium-v-"))  # short path: Unix sockets allow ~100 bytes
    socket = socket_dir / "validate.sock"
    mounts = [
        Mount(paths.public, "/home/data"),
        Mount(folders["submission"], "/home/submission", writable=True),
        Mount(folders["code"], "/home/code", writable=True),
        Mount(folders["logs"], "/home/logs", writable=True),
        Mount(config.agent.folder, "/home/agent"),
        Mount(instructions, "/home/instructions.md"),
        Mount(SANDBOX_FILES / "validate_submission.py", "/home/validate_submission.py"),
        Mount(SANDBOX_FILES / "validate_submission.sh", "/home/validate_submission.sh"),
        Mount(socket, "/home/validate.sock"),
    ]
    limits = Limits(wall_seconds=config.time_limit, memory_bytes=config.memory_bytes, cpus=config.cpus)
    started = datetime.now(UTC)
    try:
        with ValidationServer(competition, sample, socket, staging / "validation_calls.jsonl") as server:
            result = get_sandbox(config.sandbox).run(
                list(config.agent.command),
                mounts=mounts,
                env=env,
                limits=limits,
                workdir="/home",
                stdout=folders["logs"] / "agent.stdout.log",
                stderr=folders["logs"] / "agent.stderr.log",
            )
            calls = server.calls
    finally:
        shutil.rmtree(socket_dir, ignore_errors=True)
    report = grade(competition, folders["submission"] / "submission.csv", config.data_dir)
    record = {
        "run_group": config.run_group,
        "competition_id": competition.id,
        "competition_version": competition.version,
        "seed": seed,
        "agent": config.agent.name,
        "status": "finished",
        "sandbox": config.sandbox,
        "podium_version": __version__,
        "started_at": started.isoformat(timespec="seconds"),
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "limits": {
            "time_limit_s": config.time_limit,
            "memory_bytes": config.memory_bytes,
            "cpus": config.cpus,
            "gpus": config.gpus,
        },
        "agent_result": _jsonable(result),
        "validation_calls": calls,
        "grade": report.to_dict(),
    }
    (staging / "record.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    if final.exists():  # a folder without a record, left by a crash before the rename
        shutil.rmtree(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    os.replace(staging, final)
    record["grade"]["submission_path"] = str(final / "submission" / "submission.csv")
    store.add(record, final / "record.json")
    return record


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


def _remove_dead_staging(group_dir: Path) -> None:
    """Staging folders left by a podium process that no longer exists (killed mid-run)."""
    for staging in group_dir.glob("*/.*.tmp-*"):
        pid = int(staging.name.split(".tmp-")[1].split("-")[0])
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            shutil.rmtree(staging, ignore_errors=True)
        except PermissionError:
            pass  # alive, someone else's


def run_all(config: RunConfig, competitions: list[Competition]) -> list[dict[str, Any]]:
    """Every (competition, seed) pair not finished yet; finished ones are skipped, not rerun."""
    store = RunStore(config.runs_dir)
    _remove_dead_staging(config.runs_dir / config.run_group)
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
    records = []
    with ThreadPoolExecutor(max_workers=max(1, config.workers)) as pool:
        futures = {pool.submit(run_one, config, c, s, store): (c, s) for c, s in todo}
        for done, future in enumerate(as_completed(futures), start=1):
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
            print(f"[{done}/{len(todo)}] {comp.ref} seed {seed}: {outcome}", file=sys.stderr)
            records.append(record)
    return records
