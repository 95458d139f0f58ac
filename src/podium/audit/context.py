"""What a check may know about one run, read-only and safe against what the agent left.

Everything under a run's ``code/``, ``logs/`` and ``submission/`` was written by the agent, so it is
hostile input: :class:`AuditContext` never follows a symbolic link (a link is skipped, and files are
opened with ``O_NOFOLLOW``), refuses a file of the run's folder with more than one hard link (it may
be a host file a crafted transfer linked in; :meth:`AuditContext.hard_links` names those it met),
walks at most :data:`MAX_FILES` files and :data:`MAX_DEPTH` folders deep, and reads at most
:data:`MAX_READ` bytes of a file. Checks read the run through it only, never by opening paths
themselves, so these bounds hold for every check.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from podium.audit.run_files import (
    MAX_DEPTH,
    MAX_FILES,
    MAX_HASHED,
    MAX_READ,
    file_sha256,
    is_real_dir,
    logged_calls,
    read_bounded,
    walk_files,
)
from podium.competition import Competition
from podium.paths import CompetitionPaths, RunPaths, default_data_dir
from podium.records import RunRecord
from podium.untrusted import iter_json_lines, loads, loads_object

__all__ = [
    "MAX_DEPTH",
    "MAX_FILES",
    "MAX_HASHED",
    "MAX_READ",
    "AgentFolder",
    "AuditContext",
    "file_sha256",
    "read_bounded",
    "walk_files",
]

#: The largest record or validation log read (written by podium, but beside the agent's folders).
_MAX_RECORD = 64 << 20
#: Prepare markers read so far, by (path, mtime, size).
_MARKERS: dict[tuple[str, int, int], Any] = {}
#: File name endings of logs worth reading as text.
_TEXT_SUFFIXES = (".log", ".txt", ".jsonl", ".json", ".md", ".out", ".err", ".py", ".csv", ".yaml", ".yml", ".sh")


class AuditContext:
    """One run as a check sees it: its folder, record, competition, submission, code, logs and validation calls.

    ``options`` holds check-specific settings (the judge's model flags, a kernels folder, the data
    dir as ``data_dir``, an agent folder as ``agent_dir``); checks read the keys they know.
    """

    def __init__(self, run_dir: Path | str, options: Mapping[str, Any] | None = None) -> None:
        self.run_dir = Path(run_dir)
        self.paths = RunPaths(self.run_dir)
        self.options: Mapping[str, Any] = dict(options or {})
        self._digests: dict[str, str | None] = {}
        self._code: tuple[Path, ...] | None = None
        self._logs: tuple[Path, ...] | None = None
        self._hard_links: list[Path] = []

    # -- what podium wrote ----------------------------------------------------------------------

    @cached_property
    def record(self) -> RunRecord | None:
        """The run's record, or None when it is missing or unreadable."""
        data = read_bounded(self.paths.record, _MAX_RECORD, single_link=True)
        if data is None:
            return None
        try:
            return RunRecord.from_dict(loads_object(data, max_bytes=_MAX_RECORD, what="record.json"))
        except (ValueError, TypeError):
            return None

    @property
    def competition_id(self) -> str:
        return self.record.competition_id if self.record else self.run_dir.parent.name

    @property
    def seed(self) -> int | None:
        if self.record:
            return self.record.seed
        return int(self.run_dir.name) if self.run_dir.name.isdigit() else None

    @cached_property
    def competition(self) -> Competition | None:
        """The competition at the record's version, or None when the registry does not know it."""
        from podium import registry
        from podium.errors import PodiumError

        if self.record is None:
            return None
        try:
            return registry.get(self.record.competition_id, self.record.competition_version)
        except PodiumError:
            return None

    @property
    def data_dir(self) -> Path:
        """Where prepared competitions are: ``options["data_dir"]``, else podium's default."""
        given = self.options.get("data_dir")
        return Path(given).expanduser() if given else default_data_dir()

    @cached_property
    def prepared(self) -> Mapping[str, Any] | None:
        """The marker of the competition's prepare in the data dir (with its files' ``checksums``), or None."""
        marker = CompetitionPaths(self.data_dir, self.competition_id).marker
        try:
            info = os.stat(marker)
        except OSError:
            return None
        key = (str(marker), info.st_mtime_ns, info.st_size)
        if key not in _MARKERS:  # one read per prepare, however many runs of it are audited
            data = read_bounded(marker, _MAX_RECORD)
            try:
                _MARKERS[key] = loads(data, max_bytes=_MAX_RECORD) if data is not None else None
            except ValueError:
                _MARKERS[key] = None
        return _MARKERS[key]

    @cached_property
    def validation_calls(self) -> tuple[Mapping[str, Any], ...]:
        """Every call the run made to the validation endpoint, as the endpoint logged it."""
        if self.record is not None and self.record.validation_calls:
            return tuple(c for c in self.record.validation_calls if isinstance(c, dict))
        return logged_calls(self.paths.validation_log, _MAX_RECORD)

    @cached_property
    def holdout_calls(self) -> tuple[Mapping[str, Any], ...]:
        """Every call the run made to the hold-out scorer (its own predictions against its own labels)."""
        return logged_calls(self.paths.holdout_log, _MAX_RECORD)

    # -- what the agent left --------------------------------------------------------------------

    @cached_property
    def submission(self) -> Path | None:
        """The submission file, when it is a regular file (not a link)."""
        path = self.paths.submission_file
        try:
            info = os.lstat(path)
        except OSError:
            return None
        if not (is_real_dir(self.paths.submission) and stat.S_ISREG(info.st_mode)):
            return None
        if info.st_nlink > 1:
            self._hard_links.append(path)
            return None
        return path

    @cached_property
    def record_sha256(self) -> str | None:
        """The SHA-256 of ``record.json`` (what a check keys its cache by when it reads only the record)."""
        return file_sha256(self.paths.record, single_link=True)

    def hard_links(self) -> tuple[str, ...]:
        """The files of the run (relative to its folder) that were refused for having more than one hard link, among
        the submission, the code and the logs."""
        _ = self.submission, self.code_files(), self.log_files()
        return tuple(sorted({self.relative(p) for p in self._hard_links}))

    def code_files(self) -> tuple[Path, ...]:
        """Python files the agent left: everything under ``code/``, plus the best node's code that AIDE keeps
        among its logs (``logs/aide/*/best_solution.py``)."""
        if self._code is not None:
            return self._code
        files = list(walk_files(self.paths.code, (".py",), self._hard_links))
        aide = self.paths.logs / "aide"
        if is_real_dir(aide):
            files += [p for p in walk_files(aide, (".py",), self._hard_links) if p.name == "best_solution.py"]
        self._code = tuple(files)
        return self._code

    def best_code(self) -> Path | None:
        """The code of the agent's best node where its journal names one (``search``: ``logs/journal.jsonl``;
        AIDE: ``logs/aide/*/best_solution.py``), else None."""
        aide = [p for p in self.code_files() if p.name == "best_solution.py"]
        if aide:
            return aide[-1]
        data = read_bounded(self.paths.logs / "journal.jsonl")
        best: tuple[float, Path] | None = None
        lower: bool | None = None
        for node in iter_json_lines((data or b"").splitlines()):
            if node is None or node.get("is_bug") or not node.get("valid"):
                continue
            metric, code = node.get("metric"), node.get("code_file")
            if not isinstance(metric, (int, float)) or not isinstance(code, str):
                continue
            if lower is None and node.get("lower_is_better") is not None:
                lower = bool(node["lower_is_better"])
            path = self.inside(code)
            rank = float(metric) if lower else -float(metric)
            if path is not None and (best is None or rank < best[0]):
                best = (rank, path)
        return best[1] if best else None

    def log_files(self) -> tuple[Path, ...]:
        """Text files under ``logs/`` (the agent's and its tools' logs), bounded like every walk."""
        if self._logs is None:
            self._logs = walk_files(self.paths.logs, _TEXT_SUFFIXES, self._hard_links)
        return self._logs

    def inside(self, sandbox_path: str) -> Path | None:
        """The run's file for a path the agent saw (``/home/code/...``, ``/home/logs/...``), or None."""
        for prefix, folder in (("/home/code/", self.paths.code), ("/home/logs/", self.paths.logs)):
            if sandbox_path.startswith(prefix):
                relative = Path(sandbox_path[len(prefix) :])
                if ".." in relative.parts or relative.is_absolute():
                    return None
                path = folder / relative
                return path if path in set(walk_files(folder, None, [])) else None
        return None

    def read_text(self, path: Path, limit: int = MAX_READ) -> str:
        """A file of the run as text (undecodable bytes replaced), at most ``limit`` bytes; '' for a link or none."""
        data = read_bounded(path, limit, single_link=self._in_run(path))
        return data.decode("utf-8", "replace") if data is not None else ""

    def read_bytes(self, path: Path, limit: int = MAX_READ) -> bytes | None:
        return read_bounded(path, limit, single_link=self._in_run(path))

    def _in_run(self, path: Path) -> bool:
        """Whether ``path`` is in the run's folder (where a file with two hard links is refused)."""
        return Path(path).is_relative_to(self.run_dir)

    def fingerprint(self, path: Path) -> str:
        """What a check reads of a file, for its cache key: the SHA-256 of its first :data:`MAX_READ` bytes (all a
        check reads) and its size; '' for a link or none. Bounded, however large the agent made the file."""
        key = f"fp:{path}"
        if key not in self._digests:
            data = read_bounded(path, single_link=self._in_run(path))
            try:
                size = os.lstat(path).st_size
            except OSError:
                size = -1
            self._digests[key] = f"{size}:{hashlib.sha256(data).hexdigest()}" if data is not None else ""
        return self._digests[key] or ""

    def files_sha256(self, paths: Iterable[Path]) -> str:
        """One checksum of what a check reads of ``paths``: each file's name (relative to the run) and
        :meth:`fingerprint`, in order; for a cache key and for a result's ``inputs``."""
        text = "|".join(f"{self.relative(p)}:{self.fingerprint(p)}" for p in paths)
        return hashlib.sha256(text.encode()).hexdigest()

    def sha256(self, path: Path) -> str | None:
        """The SHA-256 of a whole regular file of the run (read without following a link), or None; None too for
        a file over :data:`MAX_HASHED` bytes (no submission that large is graded)."""
        key = str(path)
        if key not in self._digests:
            try:
                small = os.lstat(path).st_size <= MAX_HASHED
            except OSError:
                small = False
            self._digests[key] = file_sha256(path, single_link=self._in_run(path)) if small else None
        return self._digests[key]

    def relative(self, path: Path) -> str:
        """``path`` relative to the run's folder, for evidence."""
        try:
            return str(path.relative_to(self.run_dir))
        except ValueError:
            return str(path)

    @cached_property
    def agent_folder(self) -> AgentFolder:
        """The agent's own folder (its scaffold), checked against the record's ``agent_hash`` whenever it is read:
        ``options["agent_dir"]`` when given, else the folder the record names (``agent_folder``, kept since podium
        recorded it), else the built-in agent the record names."""
        given = self.options.get("agent_dir")
        record = self.record
        if given:
            folder, source = Path(given).expanduser(), "--agent-dir"
        elif record is not None and record.agent_folder:
            folder, source = Path(record.agent_folder), "the record"
        elif record is not None and record.agent and "/" not in record.agent and is_real_dir(_builtin(record.agent)):
            folder, source = _builtin(record.agent), "the built-in agents"
        elif record is not None and record.agent and is_real_dir(Path(record.agent).expanduser()):
            folder, source = Path(record.agent).expanduser(), "the record's agent"
        else:
            return AgentFolder(None, "the agent's folder is not known (the record names none; give --agent-dir)")
        if not is_real_dir(folder):
            return AgentFolder(None, f"{folder} (named by {source}) is no folder (give --agent-dir)")
        if read_bounded(folder / "agent.yaml", 1) is None:  # every agent folder has one; no other folder is hashed
            return AgentFolder(None, f"{folder} (named by {source}) holds no agent.yaml: it is no agent folder")
        if record is None or not record.agent_hash:
            return AgentFolder(None, f"{folder} cannot be checked: the record holds no agent_hash")
        from podium.agents import folder_digest

        runs_root = [self.run_dir.parents[2]] if len(self.run_dir.parents) > 2 else []
        found = folder_digest(folder, skip=runs_root)
        if found != record.agent_hash:
            return AgentFolder(
                None,
                f"{folder} (named by {source}) is not the folder that ran: its hash {found} differs from the "
                f"record's agent_hash {record.agent_hash}",
            )
        return AgentFolder(folder, f"{folder} (named by {source}; its hash is the record's agent_hash)")


@dataclass(frozen=True)
class AgentFolder:
    """The agent's folder as the audit found it: ``path`` when it is the folder that ran (its hash is the record's
    ``agent_hash``), else None; ``how`` says where it came from, or why it cannot be used."""

    path: Path | None
    how: str


def _builtin(name: str) -> Path:
    from podium.agents import BUILTIN

    return BUILTIN / name
