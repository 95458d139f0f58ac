"""Two podium processes preparing the same competition into one data dir at the same time (two `podium run`s on the
default cache, or the test suite's workers): one prepares, the other waits for it and takes its data. Before, both
prepared, and each swept the other's staging folder as stale and replaced the prepared folder under the other."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from podium import registry
from podium.data.verify import verify
from podium.paths import CompetitionPaths

PREPARE = """
import json, sys, time
from pathlib import Path
from podium import registry
from podium.data.prepare import prepare_competition
go = Path(sys.argv[2])
while not go.exists():  # both start at once
    time.sleep(0.005)
outcome = prepare_competition(registry.get("practice-wine"), Path(sys.argv[1]))
print(json.dumps(outcome.status))
"""


def test_two_prepares_at_once_prepare_once_and_both_end_well(tmp_path: Path) -> None:
    data, go = tmp_path / "data", tmp_path / "go"
    both = [
        subprocess.Popen([sys.executable, "-c", PREPARE, str(data), str(go)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]  # fmt: skip
    time.sleep(3)  # both have imported podium and wait for the word
    go.touch()
    ended = [process.communicate(timeout=300) for process in both]
    assert [p.returncode for p in both] == [0, 0], ended
    assert sorted(json.loads(out) for out, _ in ended) == ["prepared", "skipped"], ended
    root = CompetitionPaths(data, "practice-wine")
    assert root.record() is not None and not root.stale_staging()
    assert verify(registry.get("practice-wine"), data).status == "ok"  # the data is whole: its checksums hold
