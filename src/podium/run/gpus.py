"""GPUs for concurrent runs: each run gets GPUs of its own, and waits while too few are free."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from podium.errors import PodiumError
from podium.run.config import RunConfig

__all__ = ["GpuPool", "RunInterrupted"]


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
        from podium.sandbox import list_gpus

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
