"""podium.gym's speed: reset (call to first observation, warm data, bwrap, a practice competition) and step overhead
(the whole ``step(bash true)``, an upper bound of the overhead: ``true`` itself takes ~1 ms), p50 and p95.

    nice -n 10 python benchmarks/gym.py --competition practice-titanic --resets 10 --steps 100

Throughput with several envs at once (docs/gym.md's issue item) is not measured here yet.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time

import gymnasium

import podium.gym  # noqa: F401  (registers the ids)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--competition", default="practice-titanic")
    parser.add_argument("--resets", type=int, default=10)
    parser.add_argument("--steps", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as runs:
        env = gymnasium.make(f"podium/{args.competition}-v1", runs_dir=runs, time_limit="10m")
        resets, overheads = [], []
        for seed in range(args.resets):
            started = time.perf_counter()
            env.reset(seed=seed)
            resets.append(time.perf_counter() - started)
            if seed == 0:
                for _ in range(args.steps):
                    started = time.perf_counter()
                    env.step({"tool": "bash", "command": "true"})
                    overheads.append(time.perf_counter() - started)  # the whole step: an upper bound of the overhead
        env.close()
    result = {
        "reset_s": {"p50": round(statistics.median(resets), 3), "p95": round(_pct(resets, 0.95), 3), "n": len(resets)},
        "step_true_whole_ms": {
            "p50": round(1000 * statistics.median(overheads), 1),
            "p95": round(1000 * _pct(overheads, 0.95), 1),
            "n": len(overheads),
        },
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
