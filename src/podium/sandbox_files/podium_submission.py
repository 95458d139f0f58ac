"""For agents in podium's sandbox (at /home/podium_submission.py): their submission validated before it
is placed, replaced atomically, and snapshotted each time it changes.

    import sys; sys.path.insert(0, "/home"); from podium_submission import Submission

``/home/submission/submission.csv`` always holds the best valid submission found so far: a candidate
is checked through podium's validation endpoint first, copied next to the target and renamed over
it (a reader never sees half a file), and a copy goes to ``/home/logs/snapshots/`` named by the
seconds into the run, listed in ``snapshots.jsonl``, so the best-so-far can be graded at any hour
afterwards.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Start", "Submission", "start"]

VALIDATOR = Path("/home/validate_submission.py")


class Submission:
    def __init__(self, target: Path, snapshots: Path, started: float) -> None:
        self.target = target
        self.snapshots = snapshots
        self.started = started
        self.placed_from: str | None = None

    def validate(self, path: Path) -> tuple[bool, str]:
        """Whether the endpoint accepts ``path``, and what it said; retries while rate-limited."""
        if not VALIDATOR.is_file():
            return path.is_file(), "not checked: no validation endpoint here"
        for _ in range(30):
            result = subprocess.run([sys.executable, str(VALIDATOR), str(path)], capture_output=True, text=True)
            said = (result.stdout + result.stderr).strip()
            if result.returncode in (0, 1):
                return result.returncode == 0, said[-1000:]
            time.sleep(1.5)  # rate-limited or busy: the endpoint says so with status 2
        return False, f"not checked: {said[-500:]}"

    def place(self, path: Path, label: str, metric: float | None = None) -> None:
        """Make ``path`` the submission (atomically) and keep a snapshot of it."""
        self.target.parent.mkdir(parents=True, exist_ok=True)
        partial = self.target.with_name(f".{self.target.name}.partial")
        shutil.copyfile(path, partial)
        os.replace(partial, self.target)
        self.placed_from = label
        elapsed = time.monotonic() - self.started
        self.snapshots.mkdir(parents=True, exist_ok=True)
        name = f"{int(elapsed):07d}s-{label}.csv"
        shutil.copyfile(path, self.snapshots / name)
        with open(self.snapshots / "snapshots.jsonl", "a", encoding="utf-8") as index:
            index.write(
                json.dumps({"elapsed_s": round(elapsed, 1), "file": name, "source": label, "metric": metric}) + "\n"
            )

    def start_with_sample(self, data: Path) -> bool:
        """In the first seconds: the sample submission, so the run never ends without a valid file."""
        samples = sorted(data.glob("**/sample_submission*.csv")) or sorted(data.glob("**/*ubmission*.csv"))
        for sample in samples:
            valid, _ = self.validate(sample)
            if valid:
                self.place(sample, "sample")
                return True
        return False

    def check_in_place(self, log: Callable[[str], None]) -> bool:
        """At the end: whether the file in place passes the validation endpoint, logged with what it said."""
        valid, said = self.validate(self.target)
        log(f"the submission in place is {'valid' if valid else 'NOT valid'}: {said[-300:]}")
        return valid


@dataclass
class Start:
    """What a wrapper of a model-driven agent knows once it has begun (:func:`start`)."""

    started: float  # time.monotonic() at the start
    limit: float  # the run's time limit, seconds
    margin: float  # kept back at the end for the submission check
    submission: Submission
    model: str  # "" without one

    def seconds_left(self) -> float:
        """What remains for the agent itself: the limit less the margin less what has passed."""
        return self.limit - self.margin - (time.monotonic() - self.started)


def start(home: Path, model_variable: str, log: Callable[[str], None], min_margin: float = 20.0) -> Start:
    """A wrapper's first steps: the clock; a margin of 3% of the run's limit (``min_margin`` to 300 s) kept for the
    submission check; the sample submission in place; the model (``model_variable``, else the run's first)."""
    started = time.monotonic()
    limit = float(os.environ.get("TIME_LIMIT_SECS") or 3600)
    submission = Submission(home / "submission" / "submission.csv", home / "logs" / "snapshots", started)
    if submission.start_with_sample(home / "data"):
        log("the sample submission is in place")
    models = [m for m in os.environ.get("PODIUM_LLM_MODELS", "").split(",") if m]
    model = os.environ.get(model_variable) or (models[0] if models else "")
    if not model:
        log("no model (podium run --model NAME): the sample submission stays")
    return Start(started, limit, min(300.0, max(min_margin, 0.03 * limit)), submission, model)
