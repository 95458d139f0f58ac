"""What podium writes down: a grade, a validation verdict, a run. Typed, with one serialisation each.

:class:`GradeReport` keeps MLE-bench's grading-report field names (so MLE-bench's tools read
podium's reports and podium reads theirs) and adds a few. :class:`RunRecord` is a run's
``record.json``; the index (:mod:`podium.store`) and the reports (:mod:`podium.report`) read it back
with :meth:`RunRecord.from_dict`, which also reads records written by older podiums.

The flags a grade sets, in the one order every table uses, are :data:`RUN_FLAGS`; the medal flags
are exclusive (a gold is not also a silver), and ``any_medal`` is their union.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import MISSING, asdict, dataclass, field, fields
from typing import Any

__all__ = [
    "MEDALS",
    "MEDAL_FLAGS",
    "RUN_FLAGS",
    "SUMMARY_FIELDS",
    "GradeReport",
    "RunRecord",
    "ValidationResult",
    "compute_profile",
    "definitions",
    "medal_of",
]

#: The medals, best first.
MEDALS = ("gold", "silver", "bronze")
#: The medal flags of a grade, best first.
MEDAL_FLAGS = tuple(f"{medal}_medal" for medal in MEDALS)


def medal_of(flags: Mapping[str, Any]) -> str | None:
    """The medal named by a grade's (or an index row's) exclusive flags ("gold", "silver", "bronze"), or None."""
    return next((m for m, flag in zip(MEDALS, MEDAL_FLAGS, strict=True) if flags.get(flag)), None)


def definitions(rows: Iterable[Mapping[str, Any]]) -> str:
    """Which definitions grades (or index rows) were graded by, in words: the published ones, with the
    competitions graded at a later version named (``grade-jsonl`` and the reports say it the same way)."""
    later = sorted({f"{r['competition_id']}@{r['competition_version']}" for r in rows if r["competition_version"] != 1})
    if not later:
        return "published definitions (version 1 of every competition, as MLE-bench grades them)"
    return f"published definitions except {', '.join(later)}"


#: Every flag of a grade that the published aggregation counts, in its order.
RUN_FLAGS = ("submission_exists", "valid_submission", "above_median", *MEDAL_FLAGS)
#: What a field missing from a partial grade reads as, by its type.
_EMPTY: dict[str, Any] = {"bool": False, "str": "", "int": 0}


@dataclass
class GradeReport:
    """One graded submission. Field names follow MLE-bench's grading report, plus a few more."""

    competition_id: str
    competition_version: int
    score: float | None
    gold_threshold: float | None
    silver_threshold: float | None
    bronze_threshold: float | None
    median_threshold: float | None
    any_medal: bool
    gold_medal: bool
    silver_medal: bool
    bronze_medal: bool
    above_median: bool
    submission_exists: bool
    valid_submission: bool
    is_lower_better: bool
    created_at: str
    submission_path: str
    error: str | None = None
    percentile: float | None = None
    rank: int | None = None
    n_teams: int | None = None
    leaderboard: str | None = None
    warnings: list[str] = field(default_factory=list)
    #: The same submission graded by the competition's other versions that share its data (a version
    #: that corrects only the metric), so the published and the corrected score sit side by side.
    other_versions: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GradeReport:
        """A report as :meth:`to_dict` writes it, or a partial one (an older or foreign report): keys it does
        not know are left out, and a missing field is empty (no score, no threshold, every flag false)."""
        values: dict[str, Any] = {}
        for f in fields(cls):
            if f.name in data:
                values[f.name] = data[f.name]
            elif f.default is MISSING and f.default_factory is MISSING:
                values[f.name] = _EMPTY.get(str(f.type))
        return cls(**values)

    def summary(self) -> dict[str, Any]:
        """The version, score and placement only (what ``other_versions`` holds for each version)."""
        return {key: getattr(self, key) for key in SUMMARY_FIELDS}

    @property
    def medal(self) -> str | None:
        """The medal this grade earned ("gold", "silver", "bronze"), or None."""
        return medal_of({flag: getattr(self, flag) for flag in MEDAL_FLAGS})


#: The fields of a grade that ``GradeReport.summary`` keeps.
SUMMARY_FIELDS = (
    "competition_version",
    "score",
    "valid_submission",
    "error",
    "any_medal",
    *MEDAL_FLAGS,
    "above_median",
    "percentile",
    "rank",
)


@dataclass
class ValidationResult:
    """Whether a submission would be accepted for grading, and why not."""

    valid: bool
    error: str | None = None
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class RunRecord:
    """One run's ``record.json``: what ran, under which settings, how the agent ended, and its grade.

    ``status`` is ``finished`` for a run the agent finished (whatever it left), ``harness_error``
    for a run that failed because of podium, its data or the Docker engine (then ``error`` says
    what, and there is no grade). ``agent_result`` is the sandbox's result (exit code, time, peak
    memory, resource samples, warnings) as JSON.
    """

    run_group: str
    competition_id: str
    competition_version: int
    seed: int
    agent: str
    agent_hash: str | None = None
    #: The absolute path of the agent folder that ran (its hash is ``agent_hash``), for the audit to read and check.
    agent_folder: str | None = None
    status: str = "finished"
    sandbox: str | None = None
    image: str | None = None
    environment: dict[str, Any] | None = None
    podium_version: str | None = None
    started_at: str | None = None
    limits: dict[str, Any] = field(default_factory=dict)
    description: str | None = None  # the description the agent was given: original | obfuscated | other
    error: str | None = None
    finished_at: str | None = None
    agent_result: dict[str, Any] | None = None
    agent_stderr_tail: list[str] = field(default_factory=list)
    validation_calls: list[dict[str, Any]] = field(default_factory=list)
    llm: dict[str, Any] | None = None
    #: What the sandbox showed the agent (sandbox, network, mounts, where the answers were), for the audit.
    isolation: dict[str, Any] | None = None
    grade: GradeReport | None = None
    node: str | None = None  # the cluster node that ran the agent (``--cluster``); None for a local run
    cluster: dict[str, Any] | None = None  # the cluster's address, the node's id, every attempt's node
    #: The compute the run had and used (CPU model, CPUs and memory given, GPUs, CPU-seconds, peak memory,
    #: GPU-hours; :func:`podium.sandbox.run_compute`); None in records of older podiums and of failed runs.
    compute: dict[str, Any] | None = None
    #: A Gymnasium episode's own facts (task, model, reward, steps, budgets, whether a sealed test was touched,
    #: which signals of the hidden answers the policy could see; :mod:`podium.gym`); None for any other run.
    gym: dict[str, Any] | None = None
    #: The declaration that graded the run: ``{"sha256": ..., "source": "built-in" | "user"}``, the digest of its
    #: competition's folder (:func:`podium.declarations.digest`); None in records of older podiums.
    declaration: dict[str, Any] | None = None

    @property
    def finished(self) -> bool:
        return self.status == "finished"

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON: ``error`` only for a run that failed; for one the harness failed, the validation and
        LLM calls only where they were gathered (a run whose model calls all failed keeps its ``llm`` summary)."""
        data = asdict(self)
        if self.error is None:
            del data["error"]
        for key in ("node", "cluster", "compute", "gym", "declaration"):  # a local run's record is as it always was
            if data[key] is None:
                del data[key]
        if self.status == "harness_error":  # what was gathered before the harness failed is kept
            if not self.validation_calls:
                del data["validation_calls"]
            if self.llm is None:
                del data["llm"]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunRecord:
        """A record as :meth:`to_dict` writes it, or as an older podium wrote it (missing keys take their defaults)."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        grade = values.get("grade")
        values["grade"] = GradeReport.from_dict(grade) if isinstance(grade, dict) else None
        return cls(**values)

    @property
    def compute_profile(self) -> str | None:
        """The compute this run was given, in words (:func:`compute_profile`); None for a record without it."""
        return compute_profile(self.compute)

    def harness_failure(self) -> str | None:
        """Why the run failed because of the harness, not the agent; None for a run the agent finished."""
        if self.status != "finished":
            detail = self.error or (self.agent_result or {}).get("error")
            return f"status {self.status!r}" + (f": {str(detail).strip().splitlines()[0][:200]}" if detail else "")
        if self.agent_result is None:
            return "no agent result (the agent never ran)"
        return None


def compute_profile(compute: Mapping[str, Any] | None) -> str | None:
    """The compute a run was given, in words that are equal exactly when two runs had the same setting:
    '2 CPUs, 2 GiB, no GPU', '36 CPUs, 440 GiB, 1 x NVIDIA A10 (24 GiB)'. None for a record without its
    compute (an older podium's, a failed run's). What was used is not part of it."""
    if not compute:
        return None
    cpus, memory = compute.get("cpus"), compute.get("memory_bytes")
    parts = [
        f"{_number(cpus)} CPU{'' if cpus == 1 else 's'}" if isinstance(cpus, (int, float)) else "CPUs unknown",
        f"{_gib(memory)} GiB" if isinstance(memory, int) else "memory unknown",
    ]
    count = compute.get("gpu_count") or 0
    if count:
        gpu_memory = compute.get("gpu_memory_bytes")
        each = f" ({_gib(gpu_memory)} GiB)" if isinstance(gpu_memory, int) else ""
        parts.append(f"{count} x {compute.get('gpu_model') or 'GPU'}{each}")
    else:
        parts.append("no GPU")
    return ", ".join(parts)


def _gib(size: int) -> str:
    return _number(round(size / 2**30, 1))


def _number(value: float) -> str:
    return f"{value:g}"
