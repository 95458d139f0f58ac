"""The audit's checks and the runner that applies them to runs.

A check is any object with the :class:`Check` protocol; :func:`register_check` adds it to the
checks :func:`checks` lists (the deterministic and integrity checks register themselves when
:mod:`podium.audit` is imported). :func:`audit_run` runs the checks on one run and writes
``RUN/audit.json`` atomically beside its record; it never touches the record or the grade.

Results are cached by content hash: each check names, in :meth:`Check.cache_key`, a hash of
everything it reads; the runner keys the result by that hash, the check's name and version and
podium's version, and a rerun whose key matches the one in ``audit.json`` reuses the result
without running the check. Results of checks not asked for this time are kept.
"""

from __future__ import annotations

import hashlib
import json
import os
import traceback
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from podium.audit.context import AuditContext, read_bounded
from podium.audit.types import CheckResult, Flag, RunAudit, combine_verdicts
from podium.errors import UsageError
from podium.paths import write_atomic

__all__ = [
    "AUDIT_FILE",
    "Check",
    "audit_paths",
    "audit_run",
    "checks",
    "find_runs",
    "read_audit",
    "register_check",
    "resolve_checks",
]

#: The audit's file in a run's folder, beside ``record.json``.
AUDIT_FILE = "audit.json"
_CHECKS: dict[str, Check] = {}


@runtime_checkable
class Check(Protocol):
    """One audit check.

    ``name`` is what ``--checks`` and ``audit.json`` call it. :meth:`skip_reason` says why it cannot run
    on a run (no model named, no kernels found), None when it can; :meth:`cache_key` is a hash of the
    contents it will read (a rerun with the same key reuses the result); :meth:`run` does the work and
    never raises for anything the agent left (an unreadable file is evidence or ``unclear``).
    """

    name: str

    def skip_reason(self, ctx: AuditContext) -> str | None: ...

    def cache_key(self, ctx: AuditContext) -> str: ...

    def run(self, ctx: AuditContext) -> CheckResult: ...


def register_check(check: Check) -> Check:
    """Add ``check`` to the registered checks (replacing one of the same name); returns it."""
    if not isinstance(check, Check) or not getattr(check, "name", ""):
        raise TypeError(f"{check!r} is not an audit check (name, skip_reason, cache_key, run)")
    _CHECKS[check.name] = check
    return check


def checks() -> tuple[Check, ...]:
    """Every registered check, in the order they were registered."""
    return tuple(_CHECKS.values())


def resolve_checks(names: Iterable[str] | None) -> tuple[Check, ...]:
    """The checks named (all when ``names`` is None); an unknown name is a usage error naming the known ones."""
    if names is None:
        return checks()
    chosen = []
    for name in names:
        if name not in _CHECKS:
            known = ", ".join(_CHECKS) or "none"
            raise UsageError(f"no audit check {name!r}. Fix: --checks takes a comma-separated list of: {known}")
        chosen.append(_CHECKS[name])
    return tuple(chosen)


def read_audit(run_dir: Path | str) -> RunAudit | None:
    """The run's ``audit.json``, or None when it has none (or an unreadable one)."""
    data = read_bounded(Path(run_dir) / AUDIT_FILE, 64 << 20)
    if data is None:
        return None
    try:
        return RunAudit.from_json(json.loads(data))
    except (ValueError, TypeError, AttributeError):
        return None


def _key(check: Check, ctx: AuditContext) -> str:
    from podium import __version__

    version = str(getattr(check, "version", ""))
    return hashlib.sha256(f"{__version__}\0{check.name}\0{version}\0{check.cache_key(ctx)}".encode()).hexdigest()


def _failed(check: Check, error: BaseException) -> CheckResult:
    """A check that crashed on this run: ``unclear``, with the error as a note."""
    detail = "".join(traceback.format_exception_only(error)).strip().splitlines()[-1][:300]
    return CheckResult(check.name, "unclear", (Flag(check.name, f"the check failed: {detail}", violation=False),))


def audit_run(
    run_dir: Path | str,
    names: Sequence[str] | None = None,
    options: Mapping[str, Any] | None = None,
    *,
    write: bool = True,
) -> RunAudit:
    """Audit one run with the checks ``names`` (all registered when None; those that cannot run are skipped
    with their reason), reusing cached results, and write ``RUN/audit.json`` (unless ``write`` is false)."""
    ctx = AuditContext(run_dir, options)
    selected = resolve_checks(names)
    previous = read_audit(ctx.run_dir)
    cached = {r.check: r for r in previous.results} if previous else {}
    results: dict[str, CheckResult] = dict(cached)  # checks not asked for this time keep their results
    skipped: dict[str, str] = {}
    for check in selected:
        reason = check.skip_reason(ctx)
        if reason is not None:
            skipped[check.name] = reason
            continue
        try:
            key = _key(check, ctx)
        except Exception as error:  # an input it could not hash: run it uncached
            key = f"uncached-{type(error).__name__}"
        old = cached.get(check.name)
        if old is not None and old.key == key and not key.startswith("uncached"):
            results[check.name] = old
            continue
        try:
            result = check.run(ctx)
        except Exception as error:
            result = _failed(check, error)
        results[check.name] = replace(result, check=check.name, key=key)
    order = [c.name for c in checks()]
    ordered = sorted(results.values(), key=lambda r: order.index(r.check) if r.check in order else len(order))
    from podium import __version__

    audit = RunAudit(
        run_dir=str(ctx.run_dir),
        competition_id=ctx.competition_id,
        seed=ctx.seed,
        verdict=combine_verdicts(r.verdict for r in ordered),
        results=tuple(ordered),
        skipped=skipped,
        podium_version=__version__,
        audited_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    if write and (previous is None or _changed(previous, audit)):
        write_atomic(ctx.run_dir / AUDIT_FILE, json.dumps(audit.to_json(), indent=1) + "\n", mode=0o644)
    elif previous is not None:
        audit = replace(audit, audited_at=previous.audited_at)
    return audit


def _changed(old: RunAudit, new: RunAudit) -> bool:
    """Whether two audits differ in more than their time (an unchanged rerun leaves the file alone)."""
    return replace(old, audited_at="") != replace(new, audited_at="")


def find_runs(path: Path | str) -> list[Path]:
    """The finished runs under ``path``: the run itself (a folder with ``record.json``), a run group's runs, or
    every group's runs in a runs folder; staging folders (names starting with '.') are never runs."""
    root = Path(path)
    if not root.is_dir():
        raise UsageError(f"{root}: no such folder. Fix: give a run, a run group or a runs folder")
    if (root / "record.json").is_file():
        return [root]
    found: list[Path] = []
    for depth in (1, 2, 3):  # competition/seed, group/competition/seed, runs/group/competition/seed
        pattern = "/".join(["*"] * depth) + "/record.json"
        for record in root.glob(pattern):
            parts = record.relative_to(root).parts
            if not any(p.startswith(".") for p in parts) and not os.path.islink(record.parent):
                found.append(record.parent)
        if found:
            break
    return sorted(set(found))


def audit_paths(
    paths: Sequence[Path | str], names: Sequence[str] | None = None, options: Mapping[str, Any] | None = None
) -> list[RunAudit]:
    """Audit every run under ``paths`` (see :func:`find_runs`); a path with no run is a usage error."""
    resolve_checks(names)  # an unknown name fails before any run is read
    runs: list[Path] = []
    for path in paths:
        found = find_runs(path)
        if not found:
            raise UsageError(
                f"{path}: no finished run (no record.json) in it. Fix: give a run, a run group or a runs folder"
            )
        runs += found
    return [audit_run(run, names, options) for run in dict.fromkeys(runs)]
