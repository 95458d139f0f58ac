"""Audits: whether a run's result was earned by the rules (``podium audit``, ``RUN/audit.json``).

- :mod:`~podium.audit.types`: :class:`Evidence`, :class:`Flag`, :class:`CheckResult`, :class:`RunAudit`;
- :mod:`~podium.audit.context`: :class:`AuditContext`, one run as a check may read it (no links
  followed, sizes bounded);
- :mod:`~podium.audit.registry`: the :class:`Check` protocol, :func:`register_check`, and the runner
  :func:`audit_run` (cached by content hash, ``audit.json`` written atomically, the grade untouched);
- the built-in checks, which register themselves: ``submission`` and ``answers``
  (:mod:`~podium.audit.submission`), ``external`` (:mod:`~podium.audit.external`), ``oracle``
  (:mod:`~podium.audit.oracle`), ``integrity`` (:mod:`~podium.audit.integrity`), ``plagiarism``
  (:mod:`~podium.audit.plagiarism`, Dolos or :mod:`~podium.audit.winnowing`), ``judge`` (:mod:`~podium.audit.judge`);
- :mod:`~podium.audit.familiarity`: how familiar a model is with each competition's texts
  (contamination, ``podium familiarity``), with :mod:`~podium.audit.logits`: where the token
  probabilities come from (a GGUF model or a server).

The audit reads runs; it imports nothing of :mod:`podium.run` or :mod:`podium.report` (the report
reads ``audit.json`` through this package).
"""

from __future__ import annotations

from podium.audit.context import AuditContext, read_bounded
from podium.audit.familiarity import (
    PUBLISHED_SAMPLES,
    ProbabilityCache,
    competition_documents,
    familiarity,
    familiarity_by_competition,
    load_familiarity,
    sampled_mean,
)
from podium.audit.logits import LlamaCppScorer, ServerScorer, TokenScorer, next_token_probabilities
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
from podium.audit.types import CheckResult, Evidence, Flag, NotApplicable, RunAudit, combine_verdicts

# The built-in checks register themselves, in this order (the order audit.json and the report list them).
from podium.audit import submission, external, oracle, integrity, plagiarism, judge  # noqa: F401  isort: skip
from podium.audit.integrity import known_leakage

__all__ = [
    "AUDIT_FILE", "PUBLISHED_SAMPLES", "AuditContext", "Check", "CheckResult", "Evidence", "Flag", "LlamaCppScorer",
    "NotApplicable", "ProbabilityCache", "RunAudit", "ServerScorer", "TokenScorer", "audit_paths", "audit_run",
    "checks", "combine_verdicts", "competition_documents", "familiarity", "familiarity_by_competition", "find_runs",
    "known_leakage", "load_familiarity", "next_token_probabilities", "read_audit", "read_bounded", "register_check",
    "resolve_checks", "sampled_mean"
]  # fmt: skip
