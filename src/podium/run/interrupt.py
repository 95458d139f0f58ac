"""Ctrl-C during a batch: no run starts any more, and the running ones are killed within seconds.

The first SIGINT sets :attr:`Stop.event` (every run checks it before it starts and after its
sandbox returns, and then leaves nothing behind) and kills the running sandboxes through their own
kill paths: the process trees that bwrap and local sandboxes start as sessions of their own under
podium, and the containers labelled with this podium process under docker. Each sandbox then
returns as for a killed agent and removes what it set up (cgroups, containers). The batch ends with
the runs that finished, and the command writes the report.

A second SIGINT quits at once: the sandboxes are killed again, this process's staging folders are
removed (never while a finished run is being moved into place), and podium exits 130.

SIGTERM (what ``kill``, a batch scheduler's cancel, ``docker stop`` and systemd send) is taken the same
way, and the command then exits 143 (128 + 15): without it the runs under docker would outlive podium
until the next podium swept them, and their time limits with them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

from podium.run.config import RunConfig
from podium.store import RunStore

__all__ = ["Stop"]


class Stop:
    """A batch's Ctrl-C handling (see the module docstring); ``running`` counts the runs going now."""

    def __init__(self, config: RunConfig, running: Callable[[], int]) -> None:
        self.config = config
        self.running = running
        self.event = threading.Event()
        self.landing = threading.Lock()  # held while a finished run is moved into place
        self.finished = threading.Event()
        self.signals = 0
        self.signum = signal.SIGINT  # the first signal taken (the command's exit status is 128 + it)

    @property
    def exit_status(self) -> int:
        """The command's exit status once stopped: 130 after Ctrl-C, 143 after SIGTERM."""
        return 128 + int(self.signum)

    @contextlib.contextmanager
    def installed(self) -> Iterator[Stop]:
        """Catch SIGINT and SIGTERM while the batch runs (only in the main thread, and each unless it is ignored)."""
        previous: dict[signal.Signals, Any] = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                handler = signal.getsignal(sig)
                if handler is not signal.SIG_IGN:
                    previous[sig] = handler
                    signal.signal(sig, self._on_signal)
        try:
            yield self
        finally:
            self.finished.set()
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _on_signal(self, signum: int, frame: object) -> None:
        self.signals += 1
        if self.signals == 1:
            self.signum = signal.Signals(signum)
            self.event.set()
            threading.Thread(target=self._stop_runs, name="podium-stop", daemon=True).start()
            return
        # Runs in the main thread between two bytecodes, maybe inside a print: write to the fd directly.
        with contextlib.suppress(OSError):
            os.write(2, b"\ninterrupted again: quitting now; rerun the same command to resume\n")
        self.kill_running()
        if self.landing.acquire(timeout=10):
            RunStore(self.config.runs_dir).discard_own_staging(self.config.run_group)
        os._exit(self.exit_status)

    def _stop_runs(self) -> None:
        with contextlib.suppress(OSError):  # stderr may be a closed pipe; the runs are stopped all the same
            by = "" if self.signum == signal.SIGINT else f" ({signal.Signals(self.signum).name})"
            print(
                f"\nstopping{by}: no new runs; killing the {self.running()} running run(s) (Ctrl-C again to quit at "
                "once)",
                file=sys.stderr,
                flush=True,
            )
        while not self.finished.is_set():  # again and again: a run may have started its sandbox just now
            self.kill_running()
            self.finished.wait(0.5)

    def kill_running(self) -> None:
        """Kill every sandbox this process is running, through the sandboxes' own kill paths."""
        from podium.sandbox import get_sandbox, kill_tree

        for pid in _own_sessions():
            with contextlib.suppress(OSError):
                kill_tree(pid)
        if self.config.sandbox == "docker":
            with contextlib.suppress(Exception):
                get_sandbox("docker", image=self.config.image).kill_own()  # type: ignore[attr-defined]


def _own_sessions() -> list[int]:
    """This process's children that lead sessions of their own: the sandboxes' commands (bwrap, local)."""
    from podium.sandbox import stat_fields

    me, found = os.getpid(), []
    for entry in os.scandir("/proc"):
        stat = stat_fields(int(entry.name)) if entry.name.isdigit() else None
        if stat is not None and int(stat[1]) == me and int(stat[3]) == int(entry.name):  # ppid, session
            found.append(int(entry.name))
    return found
