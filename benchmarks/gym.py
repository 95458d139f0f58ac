"""podium.gym's speed, side by side in one run (issue 36 §3), on a practice competition, bwrap, warm data:

- reset: p50/p95 from the call to the first observation, beside ``podium run``'s own start for the same
  competition (in this process, as warm: from the call of :func:`podium.run.schedule.run_batch` to the first
  command of an agent that only notes the time and copies the sample submission);
- step: the whole ``step(bash true)`` p50/p95 (an upper bound of the overhead: ``true`` itself takes ~1 ms);
- throughput: episodes per hour of a scripted 5-step policy (look at the data, write a script, run it, check the
  submission, submit) with 1, 4 and 8 envs at once (``gymnasium.make_vec(..., vectorization_mode="async")``), the
  episodes that did not end with a valid submission (failures), and the memory per env: the peak RSS of each env's
  worker process and of its sandbox (bwrap and what runs in it), and their PSS (shared pages split fairly).

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/gym.py --competition practice-titanic --resets 10 --steps 100 \\
        --starts 5 --envs 1,4,8 --episodes 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import gymnasium

import podium.gym  # noqa: F401  (registers the ids)

SCRIPT = "import shutil\nshutil.copyfile('/home/data/sample_submission.csv', '/home/submission/submission.csv')\n"
POLICY = (  # the scripted 5-step policy: every env takes the same step at once (make_vec's lockstep)
    {"tool": "bash", "command": "head -3 /home/data/train.csv; ls /home/data"},
    {"tool": "write_file", "path": "/home/code/train.py", "content": SCRIPT},
    {"tool": "bash", "command": "python3 /home/code/train.py"},
    {"tool": "bash", "command": "wc -l /home/submission/submission.csv"},
    {"tool": "submit"},
)
START_AGENT = """name: start-probe
command: [sh, -c, "date +%s.%N > /home/code/started; cp /home/data/sample_submission.csv /home/submission/submission.csv"]
"""


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _summary(values: list[float], scale: float = 1.0, digits: int = 3) -> dict[str, Any]:
    return {
        "p50": round(scale * statistics.median(values), digits),
        "p95": round(scale * _pct(values, 0.95), digits),
        "n": len(values),
    }


# -- memory: /proc, without a dependency ---------------------------------------------------------------------


def _children(pid: int) -> list[int]:
    found = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                found += [int(c) for c in handle.read().split()]
    except OSError:
        pass
    return found


def _descendants(pid: int) -> list[int]:
    out, todo = [], _children(pid)
    while todo:
        child = todo.pop()
        out.append(child)
        todo += _children(child)
    return out


def _kib(pid: int, path: str, key: str) -> int:
    try:
        with open(f"/proc/{pid}/{path}") as handle:
            for line in handle:
                if line.startswith(key):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _memory(pid: int) -> dict[str, int]:
    """KiB: the process's RSS and PSS, and its descendants' (the sandbox) summed."""
    below = _descendants(pid)
    return {
        "env_rss": _kib(pid, "status", "VmRSS:"),
        "env_pss": _kib(pid, "smaps_rollup", "Pss:"),
        "sandbox_rss": sum(_kib(c, "status", "VmRSS:") for c in below),
        "sandbox_pss": sum(_kib(c, "smaps_rollup", "Pss:") for c in below),
    }


class _Sampler:
    """The peak of each env process's memory (and its sandbox's), sampled every 0.2 s while the envs run."""

    def __init__(self, pids: list[int]) -> None:
        self.pids, self.peak = (
            pids,
            {pid: dict.fromkeys(("env_rss", "env_pss", "sandbox_rss", "sandbox_pss"), 0) for pid in pids},
        )
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.done.wait(0.2):
            for pid in self.pids:
                for key, value in _memory(pid).items():
                    self.peak[pid][key] = max(self.peak[pid][key], value)

    def __enter__(self) -> _Sampler:
        self.thread.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self.done.set()
        self.thread.join()

    def per_env_mib(self) -> dict[str, float]:
        """The mean over envs of each peak, in MiB."""
        return {
            k: round(statistics.mean(p[k] for p in self.peak.values()) / 1024, 1)
            for k in next(iter(self.peak.values()))
        }


# -- the three measures ------------------------------------------------------------------------------------------


def resets_and_steps(env_id: str, runs: str, resets: int, steps: int, data_dir: str | None) -> dict[str, Any]:
    env = gymnasium.make(env_id, runs_dir=runs, run_group="speed", time_limit="10m", **_data(data_dir))
    times, overheads = [], []
    for seed in range(resets):
        started = time.perf_counter()
        env.reset(seed=seed)
        times.append(time.perf_counter() - started)
        if seed == 0:
            for _ in range(steps):
                started = time.perf_counter()
                env.step({"tool": "bash", "command": "true"})
                overheads.append(time.perf_counter() - started)
    env.close()
    return {"reset_s": _summary(times), "step_true_whole_ms": _summary(overheads, 1000.0, 1)}


def run_starts(competition: str, runs: str, starts: int, data_dir: str | None) -> dict[str, Any]:
    """``podium run``'s own start: run_batch called (warm, in this process) to the agent's first command."""
    from podium import registry
    from podium.agents import load_agent_folder
    from podium.paths import default_data_dir
    from podium.run.config import RunConfig
    from podium.run.schedule import run_batch

    folder = Path(runs) / "start-agent"
    folder.mkdir()
    (folder / "agent.yaml").write_text(START_AGENT)
    comp = registry.get(competition)
    times, walls = [], []
    for i in range(starts):
        config = RunConfig(agent=load_agent_folder(str(folder)), seeds=1, time_limit=600, sandbox="bwrap", cpus=None, memory_bytes=None, gpus=0,
                           run_group=f"start{i}", data_dir=Path(data_dir) if data_dir else default_data_dir(),
                           runs_dir=Path(runs) / "run-starts")  # fmt: skip
        called = time.time()
        batch = run_batch(config, [comp])
        walls.append(time.time() - called)
        assert batch.records and batch.records[0].status == "finished", batch.not_run
        started = float((Path(runs) / "run-starts" / f"start{i}" / comp.id / "0" / "code" / "started").read_text())
        times.append(started - called)
    return {"run_start_s": _summary(times), "run_whole_s": _summary(walls)}


def throughput(env_id: str, runs: str, num_envs: int, episodes: int, data_dir: str | None) -> dict[str, Any]:
    """``episodes`` episodes per env of the scripted policy, ``num_envs`` envs at once (lockstep)."""
    kwargs = {"runs_dir": runs, "run_group": f"tp{num_envs}", "time_limit": "10m", **_data(data_dir)}
    vec = gymnasium.make_vec(env_id, num_envs=num_envs, vectorization_mode="async",
                             vector_kwargs={"shared_memory": False}, **kwargs)  # fmt: skip
    pids = [process.pid for process in vec.processes]
    ended, valid = 0, 0
    started = time.perf_counter()
    with _Sampler(pids) as sampler:
        vec.reset(seed=[1000 * num_envs + i for i in range(num_envs)])
        for episode in range(episodes):
            for action in POLICY:
                _, _, terminated, truncated, info = vec.step([action] * num_envs)
            for i in range(num_envs):
                if terminated[i] or truncated[i]:
                    ended += 1
                    valid += _valid(info, i)
            if episode + 1 < episodes:  # next-step autoreset: this step resets every env (its action is ignored)
                vec.step([{"tool": "bash", "command": "true"}] * num_envs)
        wall = time.perf_counter() - started
    vec.close()
    total = num_envs * episodes
    return {
        "envs": num_envs,
        "episodes": total,
        "ended": ended,
        "failures": total - valid,
        "wall_s": round(wall, 1),
        "episodes_per_hour": round(total / wall * 3600),
        "memory_per_env_mib": sampler.per_env_mib(),
    }


def _valid(info: dict[str, Any], i: int) -> bool:
    """Whether env ``i`` ended with a valid submission (a vector env's info holds each key of the grade as an array)."""
    grade = info.get("grade")
    if isinstance(grade, dict):
        flags = grade.get("valid_submission")
        return bool(flags is not None and flags[i])
    return bool(grade is not None and grade[i] and grade[i].get("valid_submission"))


def _data(data_dir: str | None) -> dict[str, str]:
    return {"data_dir": data_dir} if data_dir else {}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--competition", default="practice-titanic")
    parser.add_argument("--resets", type=int, default=10)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--starts", type=int, default=5, help="podium run starts measured beside the resets")
    parser.add_argument("--envs", default="1,4,8", help="envs at once, for the throughput")
    parser.add_argument("--episodes", type=int, default=3, help="episodes per env, for the throughput")
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()
    env_id = f"podium/{args.competition}-v1"
    result: dict[str, Any] = {"competition": args.competition, "cpus": os.cpu_count(), "load_before": os.getloadavg()}
    with tempfile.TemporaryDirectory() as runs:
        result.update(resets_and_steps(env_id, runs, args.resets, args.steps, args.data_dir))
        result.update(run_starts(args.competition, runs, args.starts, args.data_dir))
        result["throughput"] = [
            throughput(env_id, runs, int(n), args.episodes, args.data_dir) for n in args.envs.split(",")
        ]
    result["load_after"] = os.getloadavg()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
