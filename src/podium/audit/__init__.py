"""Audits: whether a run's result was earned by the rules (``podium audit``, ``RUN/audit.json``).

- :mod:`~podium.audit.types`: :class:`Evidence`, :class:`Flag`, :class:`CheckResult`, :class:`RunAudit`;
- :mod:`~podium.audit.context`: :class:`AuditContext`, one run as a check may read it (no links
  followed, sizes bounded);
- :mod:`~podium.audit.registry`: the :class:`Check` protocol, :func:`register_check`, and the runner
  :func:`audit_run` (cached by content hash, ``audit.json`` written atomically, the grade untouched);
- the built-in checks, which register themselves: ``submission`` and ``answers``
  (:mod:`~podium.audit.submission`), ``external`` (:mod:`~podium.audit.external`), ``oracle``
  (:mod:`~podium.audit.oracle`), ``integrity`` (:mod:`~podium.audit.integrity`), ``plagiarism``
  (:mod:`~podium.audit.plagiarism`, Dolos or :mod:`~podium.audit.winnowing`), ``judge`` (:mod:`~podium.audit.judge`).

The audit reads runs; it imports nothing of :mod:`podium.run` or :mod:`podium.report` (the report
reads ``audit.json`` through this package).
"""

from __future__ import annotations

from podium.audit.context import AuditContext, read_bounded
from podium.audit.registry import (
    AUDIT_FILE,
    Check,
    audit_paths,
    audit_run,
    checks,
    find_runs,
    read_audit,
    register_check,
    resolve_checks,
)
from podium.audit.types import CheckResult, Evidence, Flag, RunAudit, combine_verdicts

# The built-in checks register themselves, in this order (the order audit.json and the report list them).
from podium.audit import submission, external, oracle, integrity, plagiarism, judge  # noqa: F401  isort: skip
from podium.audit.integrity import known_leakage

__all__ = [
    "AUDIT_FILE",
    "AuditContext",
    "Check",
    "CheckResult",
    "Evidence",
    "Flag",
    "RunAudit",
    "audit_paths",
    "audit_run",
    "checks",
    "combine_verdicts",
    "find_runs",
    "known_leakage",
    "read_audit",
    "read_bounded",
    "register_check",
    "resolve_checks",
]
