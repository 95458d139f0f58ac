"""A run group's identity: the settings that change what its runs mean, in ``RUNS/<group>/group.json``.

Runs are comparable only if the same agent ran under the same limits, sandbox and competition
version. The first command that uses a group writes its settings (agent name and a hash of the
agent's folder, sandbox, time limit, memory, CPUs, GPUs, disk) into ``group.json``; a later
command with other settings, or another version of a competition the group already ran, is
refused with the differences named, unless it starts a new group (``--run-group``) or redoes the
runs (``--redo all``). ``--redo failed`` redoes, under the group's own settings, the runs without
a valid submission or whose status is not ``finished``. A run that failed because of the harness
(``status: harness_error``: podium, its data or the Docker engine broke) is not a result: any
rerun runs it again.

A ``--redo all`` that stops half-way (Ctrl-C, kill -9) leaves ``pending_redo`` in ``group.json``:
the runs it named and those it has still to redo (each one leaves the list when its new run lands).
Every later command counts those runs as not done until they are redone, so a group never mixes
old and new settings, and running the interrupted command again resumes it.

``group.json`` also lists the ``competitions`` asked of the group: every id any command in it named
(a group from before this list: the competitions it already held, from then on). ``podium report``
takes them as the group's denominator unless ``--split`` names another. A group made with
``--ended-after`` keeps that selection under ``ended_after`` (:mod:`podium.deadlines`): its cutoff, what it
was taken from, the competitions it chose with their deadlines and what it left out; a command with
another selection, or none, is refused.

A group that grows a run at a time (a gym environment's episodes, :func:`join`) writes the same ``group.json``:
the first episode's settings, and each competition as its first episode starts; an episode under other settings
is refused as a command would be.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from podium import owner
from podium.deadlines import RECORD_KEY, check_group
from podium.errors import UsageError
from podium.paths import write_atomic
from podium.units import size_text, time_text
from podium.untrusted import printable

if TYPE_CHECKING:
    from podium.competition import Competition
    from podium.run.config import RunConfig
    from podium.store import RunStore

__all__ = [
    "LOCK_FILE",
    "SETTINGS",
    "Plan",
    "Redo",
    "batch_lock",
    "check_name",
    "join",
    "landed",
    "plan",
    "records",
    "settings_of",
    "write",
]

Redo = Literal["failed", "all"]

#: The settings that make a run what it is, with their names in messages.
SETTINGS = {
    "agent": "agent",
    "agent_hash": "agent folder (hash of its files)",
    "sandbox": "sandbox",
    "time_limit_s": "time limit",
    "memory_bytes": "memory cap",
    "cpus": "CPUs",
    "gpus": "GPUs",
    "disk_bytes": "disk cap",
    "environment": "agent environment (digest)",
    "model": "model",
}
FILE = "group.json"
#: The lock a batch holds on its group for as long as it runs (``flock``; released when its process ends).
LOCK_FILE = ".batch.lock"
#: A run group's name: one folder name of letters, digits, ``.``, ``_`` and ``-``, not starting with ``.`` or
#: ``-`` (a hidden folder, an option), at most 100 characters.
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,99}")


def check_name(name: str) -> str:
    """``name`` when it can name a run group (:data:`_NAME`), else a :class:`UsageError` naming it and the fix."""
    if not _NAME.fullmatch(name):
        shown = printable(name, limit=120)
        raise UsageError(
            f"--run-group {shown!r} cannot name a run group: use one folder name of letters, digits, '.', '_' and "
            "'-', at most 100 characters, not starting with '.' or '-' (e.g. --run-group exp-1)"
        )
    return name


@contextlib.contextmanager
def batch_lock(group_dir: Path) -> Iterator[None]:
    """Hold the group for one batch: a second batch on the same group (another ``podium run``, here or with
    ``--cluster``) is refused at once with the holder's pid, instead of running the same pairs twice. The lock
    is ``flock`` on :data:`LOCK_FILE`, so it goes with its process, however that ends."""
    group_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(group_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            raise UsageError(
                f"run group {printable(group_dir.name)!r} is being run by another podium (pid {printable(holder)}): "
                "one batch at a time per group. Fix: wait for it to end, or pass another --run-group"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)


def _value(key: str, value: Any) -> str:
    if value is None:
        return {"cpus": "not capped", "memory_bytes": "none", "disk_bytes": "none"}.get(key, "none")
    if key == "time_limit_s":
        return time_text(float(value))
    if key in ("memory_bytes", "disk_bytes"):
        return size_text(int(value))
    if key == "cpus":
        return f"{float(value):g}"
    return str(value)


def settings_of(config: RunConfig) -> dict[str, Any]:
    """The group settings a command asks for."""
    return {
        "agent": config.agent.name,
        "agent_hash": config.agent_hash,
        "sandbox": config.sandbox,
        "time_limit_s": config.time_limit,
        "memory_bytes": config.memory_bytes,
        "cpus": config.cpus,
        "gpus": config.gpus,
        "disk_bytes": config.disk_bytes,
        "environment": config.env_digest,
        "model": _model(config),
    }


def _model(config: RunConfig) -> str | None:
    """The agent's model as the provider knows it: provider, models, base URL (None without an llm: section)."""
    llm = config.agent.llm
    if llm is None:
        return None
    names = ",".join(llm.provider_model(m) for m in llm.models) or "any"
    return f"{llm.provider.name}:{names}@{llm.provider.base_url}"


@dataclass
class Plan:
    """What a command will do in its group."""

    pairs: list[tuple[Competition, int]]  # every (competition, seed) the command names
    todo: list[tuple[Competition, int]]  # those to run now (not done, or to redo)
    redoing: int  # how many of ``todo`` replace a finished run
    document: dict[str, Any]  # what group.json holds from now on
    notes: list[str] = field(default_factory=list)  # lines worth telling the user


def read(group_dir: Path) -> dict[str, Any] | None:
    path = group_dir / FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(
            f"{path} cannot be read ({exc}). Fix: restore it, or delete it to take this command's settings"
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("settings"), dict):
        raise UsageError(f"{path} holds no settings. Fix: delete it to take this command's settings")
    return data


def write(group_dir: Path, document: Mapping[str, Any]) -> None:
    """Write group.json atomically."""
    write_atomic(group_dir / FILE, json.dumps(document, indent=2) + "\n")


def records(rows: Iterable[Mapping[str, Any]]) -> Iterator[tuple[Mapping[str, Any], dict[str, Any]]]:
    """Each index row with its run's record.json (rows whose record cannot be read are left out)."""
    for row in rows:
        try:
            yield row, json.loads(Path(row["record_path"]).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue


def _legacy_settings(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The settings of a group written before group.json existed, from one of its records."""
    for _, record in records(rows):
        limits = record.get("limits") or {}
        settings = {key: record[key] for key in ("agent", "agent_hash", "sandbox") if record.get(key) is not None}
        return settings | {key: limits[key] for key in SETTINGS if key in limits}  # what it does not say: unknown
    return None


def _keys(runs: Sequence[Sequence[Any]]) -> set[tuple[str, int]]:
    return {(str(cid), int(seed)) for cid, seed in runs}


def _stale(pending: Mapping[str, Any] | None, rows: Mapping[tuple[str, int], Any]) -> set[tuple[str, int]]:
    """The finished runs an earlier, unfinished ``--redo all`` has still to redo."""
    return _keys(pending["runs"]) & set(rows) if pending else set()


def _failed(row: Mapping[str, Any]) -> bool:
    return not row["valid_submission"] or row["status"] != "finished"


def plan(config: RunConfig, competitions: Sequence[Competition], store: RunStore, redo: Redo | None = None) -> Plan:
    """Check the command's settings against the group's and decide which runs to do.

    Raises :class:`UsageError` naming every difference when the command would mix settings in the
    group and was not told to redo.
    """
    group, group_dir = config.run_group, config.runs_dir / config.run_group
    rows = {(r["competition_id"], r["seed"]): r for r in store.rows(group)}
    document = read(group_dir)
    current = settings_of(config)
    stored = document["settings"] if document else (_legacy_settings(list(rows.values())) if rows else None)
    pending = document.get("pending_redo") if document else None
    pairs = [(c, s) for c in competitions for s in range(config.seeds)]
    selected = {(c.id, s) for c, s in pairs}
    where = f"run group {group!r} (in {config.runs_dir})"

    check_group(document, config.ended_after, where, used=document is not None or bool(rows))
    agents = {r["agent"] for r in rows.values()} | ({stored.get("agent")} if stored and rows else set())
    others = sorted(str(a) for a in agents - {config.agent.name} if a)
    if others:
        raise UsageError(
            f"{where} already holds runs of agent(s) {others}, and a group is one agent's batch. "
            f"Fix: pass another --run-group for {config.agent.name!r}"
        )
    changed = []
    if rows and stored:
        changed = [
            f"{SETTINGS[key]} {_value(key, stored[key])} (now {_value(key, current[key])})"
            for key in SETTINGS
            if key in stored and stored[key] != current[key]
        ]
    versions = sorted(
        {
            f"{c.id} version {rows[(c.id, s)]['competition_version']} (now {c.version})"
            for c, s in pairs
            if (c.id, s) in rows and rows[(c.id, s)]["competition_version"] != c.version
        }
    )
    if changed or versions:
        said = "; ".join(changed + versions)
        if redo != "all":
            also = " (--redo failed keeps the group's finished runs, so it needs the group's settings)" if redo else ""
            raise UsageError(
                f"{where} was run with other settings: {said}. Its runs would count as done under settings they did "
                f"not have{also}. Fix: pass --run-group NAME to start a new group, or --redo all to redo its runs "
                "with these settings"
            )
        outside = sorted(set(rows) - selected - _stale(pending, rows))
        if changed and outside:
            shown = ", ".join(f"{cid} seed {seed}" for cid, seed in outside[:5]) + (", ..." if len(outside) > 5 else "")
            raise UsageError(
                f"{where} was run with other settings ({said}), and --redo all would redo only this command's runs, "
                f"leaving {len(outside)} run(s) under the old settings: {shown}. Fix: name those competitions and "
                "seeds too, or pass --run-group NAME to start a new group"
            )

    notes = []
    if redo == "all":
        left = _stale(pending, rows)
        if left and pending and not (changed or versions):  # the same command, interrupted: resume it
            notes.append(f"resuming the --redo all begun at {pending['since']}: {len(left)} run(s) still to redo")
            before = _keys(pending.get("named") or pending["runs"])
            since, named, runs = pending["since"], before | selected, left | (selected - before)
        else:
            since, named, runs = datetime.now(UTC).isoformat(timespec="seconds"), left | selected, left | selected
        pending = {
            "since": since,
            "named": [list(k) for k in sorted(named)],
            "runs": [list(k) for k in sorted(runs & set(rows))],
        }
        if not pending["runs"]:  # nothing finished to redo: the runs are simply run
            pending = None
    stale = _stale(pending, rows)
    todo, redoing = [], 0
    for c, s in pairs:
        row = rows.get((c.id, s))
        if row is None:
            todo.append((c, s))
        elif (c.id, s) in stale or (redo == "failed" and _failed(row)) or row["status"] == "harness_error":
            todo.append((c, s))
            redoing += 1
    if stale - selected:
        notes.append(
            f"{len(stale - selected)} run(s) of an unfinished --redo all in this group are not in this command; "
            "they count as not done until a command that names them redoes them"
        )
    created = (document or {}).get("created_at") or datetime.now(UTC).isoformat(timespec="seconds")
    new_document: dict[str, Any] = {
        "run_group": group,
        "created_at": created,
        "settings": current,
        "competitions": _asked(document, rows, pairs),
    }
    if config.ended_after is not None:
        new_document[RECORD_KEY] = dict(config.ended_after)
    if pending:
        new_document["pending_redo"] = pending
    return Plan(pairs, todo, redoing, new_document, notes)


def _asked(
    document: Mapping[str, Any] | None, rows: Mapping[tuple[str, int], Any], pairs: Sequence[tuple[Competition, int]]
) -> list[str]:
    """The competitions asked of the group so far: those group.json lists (for a group from before the list,
    those it holds), and this command's."""
    before = (document or {}).get("competitions")
    known = {str(c) for c in before} if isinstance(before, list) else {cid for cid, _ in rows}
    return sorted(known | {c.id for c, _ in pairs})


#: The short lock of :func:`join` (a batch's lock is held for its whole batch, so it cannot serve here).
JOIN_LOCK_FILE = ".group.lock"


def join(group_dir: Path, settings: Mapping[str, Any], competition_id: str) -> None:
    """One more run of ``competition_id`` under ``settings`` in a group that grows a run at a time (a gym
    environment's episode, declared as it starts): ``group.json`` is written with these settings when the group
    has none, and lists ``competition_id`` from now on. Settings other than the group's are refused with the
    differences named. Runs of several processes (``make_vec``) join one after another under a lock."""
    group_dir.mkdir(parents=True, exist_ok=True)
    with owner.exclusive(group_dir / JOIN_LOCK_FILE):
        document = read(group_dir)
        if document is None:
            now = datetime.now(UTC).isoformat(timespec="seconds")
            document = {"run_group": group_dir.name, "created_at": now, "settings": dict(settings), "competitions": []}
        stored = document["settings"]
        changed = [
            f"{SETTINGS[key]} {_value(key, stored[key])} (now {_value(key, settings.get(key))})"
            for key in SETTINGS
            if key in stored and stored[key] != settings.get(key)
        ]
        if changed:
            raise UsageError(
                f"run group {printable(group_dir.name)!r} (in {group_dir.parent}) was run with other settings: "
                f"{'; '.join(changed)}. Its runs would not be comparable. Fix: pass another run_group= (--run-group)"
            )
        asked = document.get("competitions")
        if not isinstance(asked, list) or competition_id not in asked:
            document["competitions"] = sorted({*(asked if isinstance(asked, list) else []), competition_id})
            write(group_dir, document)


def landed(group_dir: Path, key: tuple[str, int]) -> None:
    """A run has landed: it leaves the list of an unfinished ``--redo all``, which ends with its last run."""
    document = read(group_dir)
    pending = (document or {}).get("pending_redo")
    if not document or not pending or list(key) not in pending["runs"]:
        return
    pending["runs"].remove(list(key))
    if not pending["runs"]:
        del document["pending_redo"]
    write(group_dir, document)
