"""The batch's main thread hears a signal the kernel gave another thread (podium.run.schedule._completed).

A process-directed SIGTERM or SIGINT may land on any thread; Python runs its handler only when the main thread
runs again. Waiting for the runs with ``as_completed`` left the main thread asleep in a lock until a run ended, so
under load `podium run` heard a SIGTERM minutes late (tests/test_run.py's SIGTERM test waited out its 120 s)."""

from __future__ import annotations

import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from podium.run.schedule import _completed


def test_a_signal_landing_on_a_worker_thread_is_handled_before_the_runs_end() -> None:
    heard: list[bool] = []
    slow_started, release = threading.Event(), threading.Event()

    def slow_run() -> str:
        slow_started.set()
        release.wait(30)  # ends only when the handler has run (or after 30 s, which fails the test)
        return "done"

    def handler(signum: int, frame: object) -> None:
        heard.append(not future.done())
        release.set()

    previous = signal.signal(signal.SIGUSR1, handler)
    try:
        with ThreadPoolExecutor(max_workers=1) as pool:
            future = pool.submit(slow_run)
            slow_started.wait(10)
            worker = next(t for t in threading.enumerate() if t is not threading.main_thread() and t.is_alive())
            threading.Timer(0.2, lambda: signal.pthread_kill(worker.ident, signal.SIGUSR1)).start()
            started = time.monotonic()
            finished = list(_completed([future]))
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert heard == [True], "the handler ran only after the run had ended"
    assert finished == [future] and future.result() == "done" and time.monotonic() - started < 30
