"""Starts AIDE's own command line (``aide.run.run``) in this process, seeded, with two differences, both
so that a weak model cannot stall a run:

- AIDE 0.2.2 reads the feedback model's review from a forced tool call with ``json.loads`` and lets a
  malformed one escape from the step, which ends the search and leaves AIDE's code interpreter running,
  so the process never exits until the run's time is up. Here a review whose arguments are not JSON is
  asked for once more; a second bad one makes the node buggy (its review says why) and the search goes
  on. ``AIDE_TOLERATE_BAD_REVIEWS=0`` turns this off (AIDE's own behaviour).
- Whatever ends AIDE, the process exits: an exception is printed and the exit status is 1.

AIDE's files are not changed; only its agent module's reference to the query function is wrapped.

The seed: AIDE draws from Python's ``random`` (whether to debug, which buggy node, the order of the
packages its prompt lists), so ``random`` (and numpy's global generator, where numpy is there) is
seeded from the run's ``SEED`` before AIDE starts. The model's sampling is AIDE's and is not seeded:
AIDE 0.2.2 sends no seed, and MLE-bench's AIDE neither.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import sys
import traceback
from typing import Any


def _tolerant(query: Any) -> Any:
    def reviewed(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("func_spec") is None:
            return query(*args, **kwargs)
        for attempt in (1, 2):
            try:
                return query(*args, **kwargs)
            except json.JSONDecodeError as error:
                print(f"[aide launcher] review {attempt} of 2 was not valid JSON ({error})", flush=True)
                problem = error
        return {
            "is_bug": True,
            "summary": f"the feedback model's review was not valid JSON twice ({problem}); counted as a bug",
            "metric": None,
            "lower_is_better": True,
        }

    return reviewed


def seed_from_run() -> int:
    """Seed ``random`` and numpy's global generator from the run's ``SEED`` (0 outside podium); the seed."""
    seed = int(os.environ.get("SEED") or 0)
    random.seed(seed)
    with contextlib.suppress(ImportError):
        import numpy

        numpy.random.seed(seed)
    return seed


def main() -> int:
    print(f"[aide launcher] random seeded with the run's seed, {seed_from_run()}", flush=True)
    import aide.agent
    import aide.run

    if os.environ.get("AIDE_TOLERATE_BAD_REVIEWS", "1") != "0":
        aide.agent.query = _tolerant(aide.agent.query)
    sys.argv = ["aide", *sys.argv[1:]]
    try:
        aide.run.run()
    except BaseException:
        traceback.print_exc()
        return 1
    return 0


if __name__ == "__main__":
    sys.stdout.flush()
    os._exit(main())  # not sys.exit: AIDE's interpreter process must not keep this one alive
