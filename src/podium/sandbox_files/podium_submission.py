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
from pathlib import Path

__all__ = ["Submission"]

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
