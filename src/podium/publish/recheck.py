"""What ``podium bundle verify`` checks in each unpacked run, never taking the bundle's word for it.

- :func:`find_runs`: the runs are every ``record.json`` unpacked, at ``runs/<group>/<competition>/<seed>/``;
  the manifest only has to agree with them. A ``record.json`` anywhere else is a difference.
- :func:`regrade`: the submission graded again, the whole grade compared field by field with the record's
  (only :data:`MAY_DIFFER` may differ: when it was graded and where the submission lay).
- :func:`reaudit`: every deterministic check (:data:`AUDIT_CHECKS`) run again; the bundle's ``audit.json`` must
  hold the same verdict for each, and a check it leaves out is a difference; the run's verdict must be the one its
  checks' results make. The judge and plagiarism verdicts
  need a model or other programs: they are carried from the bundle, not verified, and counted as such.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from podium.errors import PodiumError
from podium.publish.unpack import shown
from podium.untrusted import UntrustedJSONError, loads_object, read_bounded

__all__ = ["AUDIT_CHECKS", "CARRIED_CHECKS", "MAY_DIFFER", "find_runs", "read_json", "reaudit", "regrade"]

#: The audit checks run again: those that need no model and no other program.
AUDIT_CHECKS = ("submission", "answers", "external", "oracle", "integrity")
#: The audit checks whose verdicts are carried from the bundle as they are: never verified here.
CARRIED_CHECKS = ("judge", "plagiarism")
#: The grade's fields that may differ when graded again: when it was graded, and where the submission lay
#: (the author's run folder, the verifier's temporary one). Every other field must be equal.
MAY_DIFFER = frozenset({"created_at", "submission_path"})
#: The largest record.json or audit.json read from a bundle.
MAX_DOCUMENT = 4 << 20
_MISSING = object()


def read_json(path: Path) -> dict[str, Any] | None:
    """A JSON object from the bundle (a record, an audit): bounded in size and depth, one key once; else None."""
    data = read_bounded(path, MAX_DOCUMENT)
    if data is None:
        return None
    try:
        return loads_object(data, max_bytes=MAX_DOCUMENT, unique_keys=True, what=path.name)
    except UntrustedJSONError:
        return None


def find_runs(files: Iterable[str], differ: Callable[[str], None]) -> list[str]:
    """The run folders (``runs/<group>/<competition>/<seed>``) that hold a ``record.json``, sorted."""
    runs = []
    for name in sorted(files):
        parts = name.split("/")
        if parts[-1] != "record.json":
            continue
        if len(parts) == 5 and parts[0] == "runs":
            runs.append("/".join(parts[:-1]))
        elif parts[0] != "agents":
            differ(f"record.json outside a run's place (runs/GROUP/COMPETITION/SEED/): {shown(name)}")
    return runs


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON values, numbers to within rounding, dictionaries without :data:`MAY_DIFFER`."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(a, dict) and isinstance(b, dict):
        keys = (a.keys() | b.keys()) - MAY_DIFFER
        return all(_same(a.get(k, _MISSING), b.get(k, _MISSING)) for k in keys)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def _text(value: Any) -> str:
    return "(absent)" if value is _MISSING else shown(json.dumps(value, sort_keys=True, default=str), 120)


def regrade(
    where: str, run_dir: Path, record: Mapping[str, Any], data_dir: Path, differ: Callable[[str], None]
) -> None:
    """Grade the run's submission again and compare every field of the grade with the record's."""
    from podium import registry
    from podium.grading import grade_isolated

    grade = record.get("grade")
    if grade is None and record.get("status") != "finished":
        return  # a run the harness failed: nothing was graded, and it counts as a failure
    if not isinstance(grade, dict):
        differ(f"{where}: the record holds no grade to compare")
        return
    try:
        competition = registry.get(str(record.get("competition_id")), int(record.get("competition_version") or 1))
        again = grade_isolated(competition, run_dir / "submission", data_dir).to_dict()
    except (PodiumError, ValueError, TypeError, OverflowError) as exc:
        differ(f"not verified: cannot re-grade {where}: {shown(exc)}")
        return
    for key in sorted((grade.keys() | again.keys()) - MAY_DIFFER):
        theirs, mine = grade.get(key, _MISSING), again.get(key, _MISSING)
        if not _same(theirs, mine):
            differ(f"{where}: grade {shown(key, 60)} {_text(theirs)} in the record, {_text(mine)} graded again")


def reaudit(
    where: str, run_dir: Path, data_dir: Path, agent_dir: Path | None, differ: Callable[[str], None]
) -> tuple[bool, list[str]]:
    """Run the deterministic checks again on an unpacked run and require the bundle's ``audit.json`` to hold the
    same verdict for each. Returns (whether ``integrity`` ran again: it reads the agent's folder, which only the
    bundle can carry; the carried checks with a verdict in ``audit.json``)."""
    from podium.audit import AuditContext, RunAudit, combine_verdicts, resolve_checks

    raw = read_json(run_dir / "audit.json")
    try:
        bundled = RunAudit.from_json(raw) if raw is not None else None
    except (ValueError, TypeError, AttributeError, KeyError):
        bundled = None
    if bundled is None:
        differ(f"{where}: no readable audit.json: its audit is not verified")
        return False, []
    options = {"data_dir": str(data_dir)} | ({"agent_dir": str(agent_dir)} if agent_dir is not None else {})
    context = AuditContext(run_dir, options)
    names = [c for c in AUDIT_CHECKS if agent_dir is not None or c != "integrity"]
    for check in resolve_checks(names):
        theirs = bundled.result(check.name)
        said = "none" if theirs is None else theirs.verdict
        try:
            reason = check.skip_reason(context)
            mine = f"skipped ({reason})" if reason is not None else check.run(context).verdict
        except Exception as exc:  # a check that fails on this run says so, as the audit runner does
            mine = f"unclear (the check failed: {type(exc).__name__})"
        if theirs is None and mine.startswith("skipped"):
            continue
        if theirs is None:
            differ(f"{where}: audit {check.name} missing from audit.json, {mine} run again")
        elif mine != said:
            differ(f"{where}: audit {check.name} {shown(said)} in audit.json, {shown(mine)} run again")
    combined = combine_verdicts([r.verdict for r in bundled.results], bundled.incomplete)
    if bundled.verdict != combined:
        differ(f"{where}: audit verdict {shown(bundled.verdict)} in audit.json, its checks' results make it {combined}")
    carried = [c for c in CARRIED_CHECKS if bundled.result(c) is not None]
    return agent_dir is not None, carried
