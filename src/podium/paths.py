"""Where podium's files live: the data dir, a competition's folders in it, a run's folder.

    DIR/ID/raw/                    the Kaggle files (extracted zip), or --from PATH used in place
    DIR/ID/prepared/public/        what the agent sees
    DIR/ID/prepared/private/       the answers
    DIR/ID/prepared/podium.json    written last inside the staging folder: version and checksums

``prepared/`` appears only by an atomic rename of a finished staging folder, so a folder that
exists is complete; staging folders (``.prepared.tmp-*``) of an interrupted run are removed by
the next one. ``DIR`` is :func:`default_data_dir` unless a command is given ``--data-dir``.

A run's folder (``RUNS/<group>/<competition>/<seed>/``, see :mod:`podium.store`) holds the names of
:class:`RunPaths`.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "MARKER",
    "CompetitionPaths",
    "RunPaths",
    "default_data_dir",
    "exchange_folders",
    "fsync_dir",
    "write_atomic",
    "write_durably",
]

#: The record of a finished prepare, inside ``prepared/``.
MARKER = "podium.json"


def default_data_dir() -> Path:
    """Where prepared competitions live: ``$PODIUM_DATA_DIR``, else the per-user cache dir."""
    if env := os.environ.get("PODIUM_DATA_DIR"):
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "podium" / "data"


@dataclass(frozen=True)
class CompetitionPaths:
    """A competition's folders under the data dir."""

    data_dir: Path
    competition_id: str

    @property
    def root(self) -> Path:
        return self.data_dir / self.competition_id

    @property
    def raw(self) -> Path:
        return self.root / "raw"

    @property
    def zip(self) -> Path:
        return self.root / f"{self.competition_id}.zip"

    @property
    def prepared(self) -> Path:
        return self.root / "prepared"

    @property
    def public(self) -> Path:
        return self.prepared / "public"

    @property
    def private(self) -> Path:
        return self.prepared / "private"

    @property
    def marker(self) -> Path:
        return self.prepared / MARKER

    @property
    def prepare_lock(self) -> Path:
        """The lock a prepare of this competition holds (one at a time; podium.owner.exclusive)."""
        return self.root / ".prepare.lock"

    def staging(self, tag: str) -> Path:
        return self.root / f".prepared.tmp-{tag}"

    def stale_staging(self) -> list[Path]:
        return sorted(self.root.glob(".prepared.tmp-*")) + sorted(self.root.glob(".raw.tmp-*"))

    def record(self) -> dict[str, Any] | None:
        """The marker of a finished prepare, or None if there is none."""
        if not self.marker.is_file():
            return None
        data: dict[str, Any] = json.loads(self.marker.read_text(encoding="utf-8"))
        return data


@dataclass(frozen=True)
class RunPaths:
    """The names in one run's folder (a finished run's, or its staging folder while it runs).

    ``submission/``, ``code/`` and ``logs/`` are the agent's writable folders (``/home/...`` inside
    the sandbox); ``home/`` holds what podium writes for the agent (the instructions).
    """

    root: Path

    @property
    def submission(self) -> Path:
        return self.root / "submission"

    @property
    def submission_file(self) -> Path:
        return self.submission / "submission.csv"

    @property
    def code(self) -> Path:
        return self.root / "code"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def instructions(self) -> Path:
        return self.home / "instructions.md"

    @property
    def stdout(self) -> Path:
        return self.logs / "agent.stdout.log"

    @property
    def stderr(self) -> Path:
        return self.logs / "agent.stderr.log"

    @property
    def record(self) -> Path:
        return self.root / "record.json"

    @property
    def validation_log(self) -> Path:
        return self.root / "validation_calls.jsonl"

    @property
    def holdout_log(self) -> Path:
        """The hold-out scorer's calls (``/home/score_holdout.py``), apart from the validation calls."""
        return self.root / "holdout_calls.jsonl"

    @property
    def llm_log(self) -> Path:
        return self.root / "llm_calls.jsonl"

    @property
    def transcript(self) -> Path:
        """The LLM proxy's full transcript of the run's model calls (interface I1: one JSON line a call, written by
        the harness outside every folder the agent can write; :mod:`podium.services.llm.transcript`)."""
        return self.root / "llm_transcript.jsonl"

    @property
    def resources(self) -> Path:
        """The run's resource samples as they come (JSON lines), beside the record: outside every folder the
        agent can write, so the harness never writes through a link the agent planted."""
        return self.root / "resources.jsonl"

    def folders(self) -> dict[str, Path]:
        """The folders a run starts with, by name."""
        return {"submission": self.submission, "code": self.code, "logs": self.logs, "home": self.home}


def write_atomic(path: Path, text: str | Iterable[str], *, mode: int | None = None) -> Path:
    """Write ``text`` (a string, or its pieces in order) to ``path`` so that a reader sees the old file or
    the whole new one, never half (readable by its owner only, unless ``mode`` says otherwise, e.g. 0o644
    for a report to share)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    if mode is not None:
        os.fchmod(fd, mode)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            if isinstance(text, str):
                handle.write(text)
            else:
                handle.writelines(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def write_durably(path: Path, data: bytes) -> None:
    """``path`` holds ``data`` entirely or not at all, also after a crash: a temporary file, fsync, rename."""
    partial = path.with_name(f".{path.name}.partial")
    with open(partial, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(partial, path)


def fsync_dir(folder: Path) -> None:
    """Make a rename or a new entry in ``folder`` durable."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def exchange_folders(first: Path, second: Path) -> bool:
    """Swap two folders atomically (Linux renameat2 RENAME_EXCHANGE); False where the system cannot."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(first), at_fdcwd, os.fsencode(second), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(first))
