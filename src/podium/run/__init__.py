"""`podium run`: agents in sandboxes on competitions; submissions graded outside; runs in the store.

- :mod:`~podium.run.config`: what a command asks for (:class:`RunConfig`);
- :mod:`~podium.run.group`: a run group's identity and which runs a command does;
- :mod:`~podium.run.execute`: one run, from the sandbox to its :class:`~podium.records.RunRecord`;
- :mod:`~podium.run.sandboxed`: a run's sandbox (folders, mounts, environment, limits), its services, the command;
- :mod:`~podium.run.schedule`: the batch on its workers, each run landed in the store;
- :mod:`~podium.run.gpus`, :mod:`~podium.run.images`, :mod:`~podium.run.interrupt` (Ctrl-C),
  :mod:`~podium.run.outcome` (how runs ended, in words).
"""

from __future__ import annotations

from podium.run.config import RunConfig, hardware
from podium.run.gpus import GpuPool, RunInterrupted
from podium.run.images import resolve_image
from podium.run.outcome import agent_end, agent_failures, crashed, outcome
from podium.run.schedule import Batch, run_all, run_batch, run_one, sweep_leftovers

__all__ = [
    "Batch",
    "GpuPool",
    "RunConfig",
    "RunInterrupted",
    "agent_end",
    "agent_failures",
    "crashed",
    "hardware",
    "outcome",
    "resolve_image",
    "run_all",
    "run_batch",
    "run_one",
    "sweep_leftovers",
]
