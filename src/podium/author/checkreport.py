"""What ``podium check`` says: each check's outcome, every finding on one line with its evidence, one verdict.

A check *passed* (nothing found), *found* something (each finding a line), was *not run* (it could not be: the
reason is its line, and it counts against the verdict as a finding does) or was *skipped* (by a flag, which the
verdict names). The verdict passes only when nothing was found and every check that was not skipped ran.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from podium.untrusted import printable

__all__ = ["CheckReport", "CheckResult", "Finding", "Status"]

Status = Literal["passed", "found", "not run", "skipped"]


@dataclass(frozen=True)
class Finding:
    """One thing a check found, in one line with its evidence."""

    check: str
    text: str

    def __str__(self) -> str:
        return f"[{self.check}] {printable(self.text, 2000)}"


@dataclass
class CheckResult:
    """One check's outcome: its status, a summary line, what it found and what it noted (figures, bounds)."""

    name: str
    status: Status
    summary: str
    findings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def line(self) -> str:
        return f"{self.name}: {self.status}: {printable(self.summary, 2000)}"


@dataclass
class CheckReport:
    """Every check of one competition and the verdict."""

    competition: str
    source: str
    results: list[CheckResult] = field(default_factory=list)

    @property
    def findings(self) -> list[Finding]:
        return [Finding(r.name, text) for r in self.results for text in r.findings]

    @property
    def not_run(self) -> list[CheckResult]:
        return [r for r in self.results if r.status == "not run"]

    @property
    def passed(self) -> bool:
        return not self.findings and not self.not_run

    @property
    def exit_status(self) -> int:
        return 0 if self.passed else 1

    def verdict(self) -> str:
        skipped = [r.name for r in self.results if r.status == "skipped"]
        but = f" (skipped: {', '.join(skipped)})" if skipped else ""
        if self.passed:
            return f"podium check {self.competition}: passed, nothing found by {len(self.results) - len(skipped)} checks{but}"
        parts = [f"{len(self.findings)} finding(s)"] if self.findings else []
        if self.not_run:
            parts.append(f"{len(self.not_run)} check(s) not run ({', '.join(r.name for r in self.not_run)})")
        return f"podium check {self.competition}: refused: {' and '.join(parts)}{but}"

    def lines(self) -> list[str]:
        """The findings, each check's notes, and the verdict last."""
        out = [f"note [{r.name}] {printable(n, 2000)}" for r in self.results for n in r.notes]
        out += [f"not run [{r.name}] {printable(r.summary, 2000)}" for r in self.not_run]
        out += [f"finding {finding}" for finding in self.findings]
        return [*out, self.verdict()]

    def to_dict(self) -> dict[str, Any]:
        return {
            "competition": self.competition,
            "source": self.source,
            "checks": [asdict(r) for r in self.results],
            "findings": [asdict(f) for f in self.findings],
            "verdict": "passed" if self.passed else "refused",
            "verdict_line": self.verdict(),
            "exit_status": self.exit_status,
        }
