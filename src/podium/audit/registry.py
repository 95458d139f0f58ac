"""The audit's checks and the runner that applies them to runs.

A check is any object with the :class:`Check` protocol; :func:`register_check` adds it to the
checks :func:`checks` lists (the deterministic and integrity checks register themselves when
:mod:`podium.audit` is imported). :func:`audit_run` runs the checks on one run and writes
``RUN/audit.json`` atomically beside its record; it never touches the record or the grade.

Results are cached by content hash: each check names, in :meth:`Check.cache_key`, a hash of
everything it reads; the runner keys the result by that hash, the check's name and version and
podium's version, and a rerun whose key matches the one in ``audit.json`` reuses the result
without running the check. Results of checks not asked for this time are kept; ``redo`` drops
those of the checks asked for. A check that raises :class:`~podium.errors.HarnessError` (no API
key, an unreachable model, a crashed Dolos) leaves no result: the run says so in
``harness_errors`` and is ``incomplete``, and the next audit tries it again.
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

from podium.audit.context import AuditContext
from podium.audit.types import CheckResult, Flag, NotApplicable, RunAudit, combine_verdicts
from podium.errors import HarnessError, UsageError
from podium.paths import write_atomic
from podium.untrusted import loads, read_bounded

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
    on a run (no model named, no kernels found: the run is then ``incomplete``; a
    :class:`~podium.audit.types.NotApplicable` reason, such as no submission to compare with, leaves
    it complete), None when it can; :meth:`cache_key` is a hash of the contents it will read (a rerun
    with the same key reuses the result); :meth:`run` does the work and never raises for anything the
    agent left (an unreadable file is evidence or ``unclear``). It raises
    :class:`~podium.errors.HarnessError` when it could not run for a reason of the harness (no API
    key, an unreachable model, a crashed tool), and :class:`~podium.errors.UsageError` for options
    that cannot work (the audit stops with exit status 2).
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
    """The run's ``audit.json``, or None when it has none (or an unreadable one). One written before podium told
    incomplete runs apart is read as it would be written now: a registered check without a result (skipped, or
    never asked for) makes it ``incomplete``, never ``clean``."""
    data = read_bounded(Path(run_dir) / AUDIT_FILE, 64 << 20)
    if data is None:
        return None
    try:
        raw = loads(data, max_bytes=64 << 20, what="audit.json")  # a deep one is refused, not a RecursionError
        audit = RunAudit.from_json(raw)
    except (ValueError, TypeError, AttributeError):
        return None
    if "incomplete" in raw:
        return audit
    ran = {r.check for r in audit.results}
    missing = tuple(c.name for c in checks() if c.name not in ran)
    verdict = combine_verdicts((r.verdict for r in audit.results), missing)
    return replace(audit, verdict=verdict, incomplete=missing)


def _key(check: Check, ctx: AuditContext) -> str:
    from podium import __version__

    version = str(getattr(check, "version", ""))
    return hashlib.sha256(f"{__version__}\0{check.name}\0{version}\0{check.cache_key(ctx)}".encode()).hexdigest()


def _one_line(error: BaseException) -> str:
    """An exception as one line: its last line, at most 300 characters."""
    lines = "".join(traceback.format_exception_only(error)).strip().splitlines()
    return (lines[-1] if lines else type(error).__name__)[:300]


def _failed(check: Check, error: BaseException) -> CheckResult:
    """A check that crashed on this run (on something the agent left, or a bug): ``unclear``, with the error as a
    note. A harness error is not this: it is never a result (see :func:`audit_run`)."""
    return CheckResult(
        check.name, "unclear", (Flag(check.name, f"the check failed: {_one_line(error)}", violation=False),)
    )


def _run_check(check: Check, ctx: AuditContext, old: CheckResult | None) -> CheckResult:
    """The check's result on this run: ``old`` when its key matches, else a fresh one (a crash is ``unclear``).
    A :class:`~podium.errors.HarnessError` or a :class:`~podium.errors.UsageError` propagates."""
    try:
        key = _key(check, ctx)
    except (HarnessError, UsageError):
        raise
    except Exception as error:  # an input it could not hash: run it uncached
        key = f"uncached-{type(error).__name__}"
    if old is not None and old.key == key and not key.startswith("uncached"):
        return old
    try:
        result = check.run(ctx)
    except (HarnessError, UsageError):
        raise
    except Exception as error:
        result = _failed(check, error)
    return replace(result, check=check.name, key=key)


def _why_not(check: Check, ctx: AuditContext) -> str:
    """Why a check not asked for this time has no result on the run."""
    try:
        reason = check.skip_reason(ctx)
    except Exception as error:
        return f"not run: {_one_line(error)}"
    return reason if reason is not None else "not run (not among --checks)"


def audit_run(
    run_dir: Path | str,
    names: Sequence[str] | None = None,
    options: Mapping[str, Any] | None = None,
    *,
    write: bool = True,
    redo: bool = False,
) -> RunAudit:
    """Audit one run with the checks ``names`` (all registered when None; those that cannot run are skipped
    with their reason), reusing cached results, and write ``RUN/audit.json`` (unless ``write`` is false).

    ``redo`` drops what was cached for the checks asked for, so each runs afresh (or, skipped now, has no
    result). The run is ``clean`` only when every registered check that applies to it has a result: a check
    skipped for any reason but :class:`~podium.audit.types.NotApplicable`, not asked for, or stopped by a
    :class:`~podium.errors.HarnessError` makes it ``incomplete``. A harness error is kept in ``harness_errors``
    and is never a result, so it is never cached; a :class:`~podium.errors.UsageError` stops the audit before
    anything of the run is written."""
    ctx = AuditContext(run_dir, options)
    selected = resolve_checks(names)
    chosen = {c.name for c in selected}
    previous = read_audit(ctx.run_dir)
    cached = {r.check: r for r in previous.results} if previous else {}
    # checks not asked for this time keep their results; with redo, those asked for start afresh
    results = {name: r for name, r in cached.items() if not (redo and name in chosen)}
    reasons: dict[str, str] = {}
    errors: dict[str, str] = {}
    for check in selected:
        try:
            reason = check.skip_reason(ctx)
            if reason is None:
                results[check.name] = _run_check(check, ctx, None if redo else cached.get(check.name))
            elif check.name not in results:
                reasons[check.name] = reason
        except HarnessError as error:  # its message says what failed: the key, the model, the tool
            errors[check.name] = (" ".join(str(error).split()) or type(error).__name__)[:300]
            results.pop(check.name, None)  # a result for other inputs is no answer for these
    skipped: dict[str, str] = {}
    incomplete: list[str] = []
    for check in checks():
        if check.name in results:
            continue
        if check.name in errors:
            incomplete.append(check.name)
            continue
        reason = reasons[check.name] if check.name in chosen else _why_not(check, ctx)
        skipped[check.name] = str(reason)
        if not isinstance(reason, NotApplicable):
            incomplete.append(check.name)
    order = [c.name for c in checks()]
    ordered = sorted(results.values(), key=lambda r: order.index(r.check) if r.check in order else len(order))
    from podium import __version__

    audit = RunAudit(
        run_dir=str(ctx.run_dir),
        competition_id=ctx.competition_id,
        seed=ctx.seed,
        verdict=combine_verdicts((r.verdict for r in ordered), incomplete),
        results=tuple(ordered),
        skipped=skipped,
        podium_version=__version__,
        audited_at=datetime.now(UTC).isoformat(timespec="seconds"),
        incomplete=tuple(incomplete),
        harness_errors=errors,
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
    paths: Sequence[Path | str],
    names: Sequence[str] | None = None,
    options: Mapping[str, Any] | None = None,
    *,
    redo: bool = False,
) -> list[RunAudit]:
    """Audit every run under ``paths`` (see :func:`find_runs`; ``redo`` as for :func:`audit_run`); a path with no
    run is a usage error."""
    resolve_checks(names)  # an unknown name fails before any run is read
    runs: list[Path] = []
    for path in paths:
        found = find_runs(path)
        if not found:
            raise UsageError(
                f"{path}: no finished run (no record.json) in it. Fix: give a run, a run group or a runs folder"
            )
        runs += found
    return [audit_run(run, names, options, redo=redo) for run in dict.fromkeys(runs)]
