"""What an audit writes down: evidence, flags, one check's result, one run's audit (``RUN/audit.json``).

Every type is a frozen dataclass with ``to_json`` (plain JSON values) and ``from_json`` (the inverse,
tolerant of keys it does not know, so an older podium reads a newer audit).

A :class:`Flag` is either a violation (``violation=True``: the run is ``flagged``) or a note that
is none (``sample submission``, ``no code to audit``: the run stays ``clean``). A check that could
not decide says ``unclear``. A run is ``clean`` only when every check that applies to it ran; a
check that applies but did not run (no judge model named, no notebooks found, a harness error)
makes it ``incomplete`` (:attr:`RunAudit.incomplete` names which). A skip reason given as
:class:`NotApplicable` says the check has nothing to judge on that run (no submission to compare
with), which leaves the run complete.

Every figure a flag's sentence states (a similarity, a count, a share) is also in its ``figures``
as a JSON number at full precision, so nothing has to be parsed back out of the prose.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

__all__ = [
    "FRAGMENT_CHARS",
    "CheckResult",
    "Evidence",
    "Figure",
    "Flag",
    "NotApplicable",
    "RunAudit",
    "RunVerdict",
    "Verdict",
    "combine_verdicts",
]

#: A check's verdict.
Verdict = Literal["clean", "flagged", "unclear"]
#: A run's verdict: a check's, or ``incomplete`` when a check that applies did not run.
RunVerdict = Literal["clean", "flagged", "unclear", "incomplete"]
#: A number a sentence states, kept as a number.
Figure = int | float
#: The longest quoted fragment evidence keeps (characters); longer ones are cut with an ellipsis.
FRAGMENT_CHARS = 240
_VERDICTS: tuple[Verdict, ...] = ("clean", "flagged", "unclear")
_RUN_VERDICTS: tuple[RunVerdict, ...] = (*_VERDICTS, "incomplete")


class NotApplicable(str):
    """A skip reason saying the check has nothing to judge on this run (``answers`` without a submission): unlike
    any other skip, it leaves the run's verdict complete."""

    __slots__ = ()


def _verdict(value: Any) -> Verdict:
    if value not in _VERDICTS:
        raise ValueError(f"verdict {value!r} is none of {', '.join(_VERDICTS)}")
    return cast(Verdict, value)


def _run_verdict(value: Any) -> RunVerdict:
    if value not in _RUN_VERDICTS:
        raise ValueError(f"verdict {value!r} is none of {', '.join(_RUN_VERDICTS)}")
    return cast(RunVerdict, value)


def combine_verdicts(verdicts: Iterable[Verdict], incomplete: Iterable[str] = ()) -> RunVerdict:
    """One run's verdict from its checks': ``flagged`` if any is, else ``unclear`` if any is, else ``incomplete``
    when a check that applies did not run (``incomplete`` names them), else ``clean``."""
    seen = set(verdicts)
    if "flagged" in seen:
        return "flagged"
    if "unclear" in seen:
        return "unclear"
    return "incomplete" if any(True for _ in incomplete) else "clean"


def _figures(data: Any) -> dict[str, Figure]:
    """The numbers of a JSON object (booleans and anything else left out)."""
    if not isinstance(data, Mapping):
        return {}
    return {str(k): v for k, v in data.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


def _input(value: Any) -> str | Figure:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


@dataclass(frozen=True)
class Evidence:
    """Where a flag's reason can be seen: a file of the run (relative to its folder), a line (1-based) and a quote."""

    file: str
    line: int | None
    fragment: str

    def __post_init__(self) -> None:
        fragment = self.fragment.replace("\x00", "")
        if len(fragment) > FRAGMENT_CHARS:
            fragment = fragment[: FRAGMENT_CHARS - 1] + "…"
        object.__setattr__(self, "fragment", fragment)

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "fragment": self.fragment}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Evidence:
        line = data.get("line")
        return cls(str(data.get("file", "")), int(line) if line is not None else None, str(data.get("fragment", "")))


@dataclass(frozen=True)
class Flag:
    """One finding of a check: its reason and evidence; ``violation=False`` makes it a note. ``figures`` holds the
    numbers its reason states (``{"similarity": 0.9003...}``), at full precision."""

    check: str
    reason: str
    evidence: tuple[Evidence, ...] = ()
    violation: bool = True
    figures: Mapping[str, Figure] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "reason": self.reason,
            "figures": dict(self.figures),
            "violation": self.violation,
            "evidence": [e.to_json() for e in self.evidence],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Flag:
        return cls(
            check=str(data.get("check", "")),
            reason=str(data.get("reason", "")),
            evidence=tuple(Evidence.from_json(e) for e in data.get("evidence") or ()),
            violation=bool(data.get("violation", True)),
            figures=_figures(data.get("figures")),
        )


@dataclass(frozen=True)
class CheckResult:
    """One check on one run: its verdict, its flags (violations and notes) and the versions or checksums of
    what it read (``inputs``: podium's version, a model, Dolos's version, kernels' checksums...; a count or a
    measure among them is a number).

    ``key`` is the content hash the runner cached it under (:func:`podium.audit.registry.audit_run`).
    """

    check: str
    verdict: Verdict
    flags: tuple[Flag, ...] = ()
    inputs: Mapping[str, str | Figure] = field(default_factory=dict)
    key: str = ""

    def __post_init__(self) -> None:
        _verdict(self.verdict)

    @classmethod
    def from_flags(cls, check: str, flags: Iterable[Flag], inputs: Mapping[str, str | Figure]) -> CheckResult:
        """``flagged`` when any flag is a violation, else ``clean``."""
        flags = tuple(flags)
        verdict: Verdict = "flagged" if any(f.violation for f in flags) else "clean"
        return cls(check, verdict, flags, dict(inputs))

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "verdict": self.verdict,
            "flags": [f.to_json() for f in self.flags],
            "inputs": dict(self.inputs),
            "key": self.key,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CheckResult:
        return cls(
            check=str(data.get("check", "")),
            verdict=_verdict(data.get("verdict")),
            flags=tuple(Flag.from_json(f) for f in data.get("flags") or ()),
            inputs={str(k): _input(v) for k, v in (data.get("inputs") or {}).items()},
            key=str(data.get("key", "")),
        )


@dataclass(frozen=True)
class RunAudit:
    """One run's audit: what ``RUN/audit.json`` holds.

    ``skipped`` names each check without a result, and why; ``incomplete`` those of them that apply to the
    run (the verdict is ``incomplete`` when nothing worse was found); ``harness_errors`` the checks that could
    not run for a reason of the harness (no API key, an unreachable model, a crashed Dolos), with the error:
    never a verdict and never cached, so the next audit tries them again.
    """

    run_dir: str
    competition_id: str
    seed: int | None
    verdict: RunVerdict
    results: tuple[CheckResult, ...] = ()
    skipped: Mapping[str, str] = field(default_factory=dict)
    podium_version: str = ""
    audited_at: str = ""
    incomplete: tuple[str, ...] = ()
    harness_errors: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _run_verdict(self.verdict)

    @property
    def summary(self) -> str:
        """The verdict as a line says it: ``clean``, ``flagged``, ``unclear`` or ``incomplete: judge, plagiarism``
        (an unclear run names the checks that did not run too: ``unclear (incomplete: judge)``)."""
        names = ", ".join(self.incomplete)
        if self.verdict == "incomplete":
            return f"incomplete: {names}"
        return f"unclear (incomplete: {names})" if self.verdict == "unclear" and names else self.verdict

    @property
    def flags(self) -> tuple[Flag, ...]:
        """Every flag of every check, violations and notes, in the checks' order."""
        return tuple(f for r in self.results for f in r.flags)

    @property
    def violations(self) -> tuple[Flag, ...]:
        return tuple(f for f in self.flags if f.violation)

    @property
    def notes(self) -> tuple[Flag, ...]:
        return tuple(f for f in self.flags if not f.violation)

    def result(self, check: str) -> CheckResult | None:
        """The result of the check named ``check``, or None when it did not run."""
        return next((r for r in self.results if r.check == check), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "run_dir": self.run_dir,
            "competition_id": self.competition_id,
            "seed": self.seed,
            "verdict": self.verdict,
            "incomplete": list(self.incomplete),
            "harness_errors": dict(self.harness_errors),
            "flags": [f.to_json() for f in self.flags],
            "results": [r.to_json() for r in self.results],
            "skipped": dict(self.skipped),
            "podium_version": self.podium_version,
            "audited_at": self.audited_at,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunAudit:
        seed = data.get("seed")
        return cls(
            run_dir=str(data.get("run_dir", "")),
            competition_id=str(data.get("competition_id", "")),
            seed=int(seed) if seed is not None else None,
            verdict=_run_verdict(data.get("verdict")),
            results=tuple(CheckResult.from_json(r) for r in data.get("results") or ()),
            skipped={str(k): str(v) for k, v in (data.get("skipped") or {}).items()},
            podium_version=str(data.get("podium_version", "")),
            audited_at=str(data.get("audited_at", "")),
            incomplete=tuple(str(c) for c in data.get("incomplete") or ()),
            harness_errors={str(k): str(v) for k, v in (data.get("harness_errors") or {}).items()},
        )
