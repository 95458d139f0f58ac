"""For agents in podium's sandbox (at /home/podium_journal.py): a command-line agent's JSON events, kept and drawn.

    import sys; sys.path.insert(0, "/home"); from podium_journal import Journal, run_events

:func:`run_events` starts a command-line agent that prints one JSON event a line (Claude Code's
``stream-json``, Codex's ``exec --json``), keeps every line in an events file under ``/home/logs``,
hands each parsed event to a callback, and ends the agent (its whole process group: SIGTERM, then
SIGKILL) when its time is up. :class:`Journal` writes ``/home/logs/journal.jsonl`` in the form
``podium serve`` draws: a node per tool call (its tool, the model's words before it, its input), the
node's line written again once its result comes (output tail, seconds, whether it failed); the last
line of a node counts. Standard library only (Python >= 3.8).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["Journal", "run_events", "task"]

_OUTPUT_CHARS = 4000
_SUMMARY_CHARS = 2000
_LINE_BYTES = 8 << 20  # an event line longer than this is kept cut, and not parsed
_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_CODE_FILE = re.compile(r"/home/code/[\w./-]+\.py\b")


def task(home: Path) -> str:
    """The agent's task: MLE-bench's instructions, then the competition's description."""
    parts = []
    for path in (home / "instructions.md", home / "data" / "description.md"):
        if path.is_file():
            parts.append(path.read_text(encoding="utf-8", errors="replace"))
    return "\n\n".join(parts) or f"See the files in {home}/data."


def _log(name: str, message: str) -> None:
    print(f"[{name} {time.strftime('%H:%M:%S')}] {message}", flush=True)


class Journal:
    """``journal.jsonl``: one node per tool call, its line written again when the call's result comes."""

    def __init__(self, path: Path, started: float) -> None:
        self.path = path
        self.started = started
        self.nodes: dict[str, dict[str, Any]] = {}
        self.lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)

    def _write(self, node: dict[str, Any]) -> None:
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(node) + "\n")

    def action(self, key: str, operator: str, plan: str, arguments: Any, code_file: str | None = None) -> None:
        """A tool call the model made (``key``: its call id); its code file is ``code_file``, else the first script
        under ``/home/code`` its input names (a command that writes or runs one)."""
        if code_file is None:
            named = _CODE_FILE.search(json.dumps(arguments))
            code_file = named.group(0) if named else None
        with self.lock:
            node = {
                "id": len(self.nodes), "parent": len(self.nodes) - 1 if self.nodes else None, "operator": operator,
                "plan": plan[-_SUMMARY_CHARS:], "summary": json.dumps(arguments)[:_SUMMARY_CHARS],
                "started_s": round(time.monotonic() - self.started, 2), "output_tail": "", "is_bug": False,
                "code_file": code_file,
            }  # fmt: skip
            self.nodes[key] = node
            self._write(node)

    def result(self, key: str, output: str, failed: bool) -> None:
        """The result of the tool call ``key``: its node's line again, with the output's tail."""
        with self.lock:
            node = self.nodes.get(key)
            if node is None:
                return
            node["output_tail"] = _ESCAPES.sub("", output)[-_OUTPUT_CHARS:]
            node["seconds"] = round(time.monotonic() - self.started - node["started_s"], 2)
            node["is_bug"] = failed
            self._write(node)


def _stop(process: subprocess.Popen, name: str, why: str) -> None:
    if process.poll() is not None:
        return
    _log(name, f"{why}: stopping it")
    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(process.pid, sig)
        except OSError:
            return
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def run_events(
    name: str,
    command: list[str],
    env: dict[str, str],
    events: Path,
    on_event: Callable[[dict[str, Any]], None],
    seconds: float,
    stdin: Path | None = None,
    cwd: str = "/home",
) -> int | None:
    """Run ``command`` for at most ``seconds`` (its standard input the file ``stdin``, else none), its stdout's
    events kept in ``events`` and given to ``on_event``; its exit status (None when it had to be stopped)."""
    events.parent.mkdir(parents=True, exist_ok=True)
    with open(stdin or os.devnull, "rb") as given:
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stdin=given, env=env, cwd=cwd, start_new_session=True
        )
    stopped: list[str] = []

    def deadline() -> None:
        try:
            process.wait(timeout=max(1.0, seconds))
        except subprocess.TimeoutExpired:
            stopped.append("time")
            _stop(process, name, "time is nearly up")

    threading.Thread(target=deadline, daemon=True).start()
    assert process.stdout is not None
    with open(events, "ab") as kept:
        while True:
            line = process.stdout.readline(_LINE_BYTES)
            if not line:
                break
            kept.write(line if line.endswith(b"\n") else line + b"\n")
            kept.flush()
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict):
                try:
                    on_event(event)
                except Exception as error:  # a journal that cannot follow must not stop the agent
                    _log(name, f"event not journaled ({type(error).__name__}: {error})")
    code = process.wait()
    return None if stopped else code
