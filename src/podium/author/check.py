"""``podium check ID``: nothing counts until it passes.

The checks, in order, each one line of progress and then its findings (one line each, with the evidence):

- ``raw``: where the raw files come from (:mod:`podium.author.checkraw`), and nothing in them prepare must not
  read (links, FIFOs, devices, zip members leaving the folder);
- ``prepare``: prepared twice, into two temporary folders, with the same checksums (and, from the real data, the
  checksums podium records for it, where it records them);
- ``grading``: MLE-bench's two checks: the sample submission is graded and its score recorded (against the
  declared ``sample_submission_score`` where the data can say); the answers themselves are graded and must reach
  the metric's best score (or the declared ``perfect_below_best``), and gold where there is a leaderboard;
- ``conformance``: the conformance suite over the declaration's generated fixture, every version
  (:mod:`podium.author.conformance`, the checks ``tests/test_conformance.py`` runs);
- ``leaks``: the leak scan (:mod:`podium.author.leakscan`), with its bounds;
- ``baseline``: one run of the built-in baseline agent on the prepared data, in the sandbox, through ``podium
  run``'s own batch; it must make a valid submission, and where it lands on the leaderboard is said.

Everything is prepared and run in one temporary folder of this process (:func:`podium.owner.mkdtemp`), removed
when the check ends however it ends (Ctrl-C included; one a kill -9 leaves is swept by the next podium); the
user's prepared data is never read or written.
"""

from __future__ import annotations

import math
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from podium import owner, registry
from podium.author.checkraw import RawData, find_raw, unsafe_entries
from podium.author.checkreport import CheckReport, CheckResult, Finding
from podium.author.conformance import best_score_problem, gold_problem, run_conformance
from podium.author.leakanswers import text_answers
from podium.author.leakscan import scan_prepared
from podium.competition import Competition
from podium.data.checksums import compare, reference_checksums, without_description
from podium.data.prepare import prepare_competition
from podium.errors import PodiumError
from podium.fixtures import perfect_submission
from podium.grading import grade, write_csv
from podium.paths import CompetitionPaths
from podium.untrusted import printable

__all__ = ["CHECKS", "CheckReport", "Finding", "check_competition"]

#: The checks, in the order they run.
CHECKS = ("raw", "prepare", "grading", "conformance", "leaks", "baseline")


@dataclass
class _Work:
    """What the checks share: the competition, the temporary folder, the raw data, and the first prepare."""

    competition: Competition
    folder: Path
    raw: RawData | None = None
    prepared_in: Path | None = None  # the data dir of the first prepare, once it succeeded

    @property
    def prepared(self) -> Path:
        assert self.prepared_in is not None
        return CompetitionPaths(self.prepared_in, self.competition.id).prepared


def _failure(error: BaseException) -> str:
    text = str(error) if isinstance(error, PodiumError) else f"{type(error).__name__}: {error}"
    return printable(" ".join(text.split()), 1000)


def _check_raw(work: _Work, source: Path | None, data_dir: Path | None) -> CheckResult:
    work.raw = find_raw(work.competition, work.folder, source=source, data_dir=data_dir)
    problems = unsafe_entries(work.raw.path)
    if problems:
        work.raw = None
        return CheckResult("raw", "found", "the raw data holds what prepare must not read", problems)
    return CheckResult("raw", "passed", work.raw.said)


def _check_prepare(work: _Work) -> CheckResult:
    if work.raw is None:
        return CheckResult("prepare", "not run", "no raw data prepare may read (the raw check's findings)")
    comp, records = work.competition, []
    for side in ("first", "second"):
        data_dir = work.folder / f"prepared-{side}"
        try:
            prepare_competition(comp, data_dir, source=work.raw.path, leak_scan=False)
        except Exception as error:  # the declaration's own Python may fail in any way: that is the finding
            return CheckResult("prepare", "found", f"the {side} prepare failed", [f"prepare failed: {_failure(error)}"])
        records.append(CompetitionPaths(data_dir, comp.id).record() or {})
    work.prepared_in = work.folder / "prepared-first"
    first, second = (r.get("checksums", {}) for r in records)
    findings = [f"the second prepare differs from the first: {d}" for d in compare(first, second)]
    reference = reference_checksums(comp) if work.raw.real else None
    if reference:
        findings += [
            f"differs from podium's checksums of the real data: {d}"
            for d in compare(reference, without_description(first))
        ]
    said = f"prepared twice, {len(first)} checksums" + (" and podium's recorded ones" if reference else "")
    return CheckResult(
        "prepare", "found" if findings else "passed", said + (" differ" if findings else " agree"), findings
    )


def _check_grading(work: _Work) -> CheckResult:
    if work.prepared_in is None:
        return CheckResult("grading", "not run", "nothing prepared (the prepare check's findings)")
    comp, prepared = work.competition, work.prepared
    findings, notes = [], []
    sample = grade(comp, prepared / comp.sample_submission, work.prepared_in)
    if not sample.valid_submission:
        findings.append(f"the sample submission is invalid: {printable(str(sample.error), 500)}")
    else:
        notes.append(f"the sample submission scores {sample.score}")
        declared = comp.sample_submission_score
        comparable = (work.raw is not None and work.raw.real) or comp.fixture.get("sample_score")
        if comparable and declared is not None and not _close(sample.score, declared):
            findings.append(
                f"the sample submission scores {sample.score}, the declaration says {declared} (on the real data, "
                "split as declared; another score means other data or another split)"
            )
    answers = text_answers(comp, prepared / "private" / comp.answers)
    path = write_csv(perfect_submission(comp, answers), work.folder / "answers-as-submission.csv")
    perfect = grade(comp, path, work.prepared_in)
    if not perfect.valid_submission:
        findings.append(f"the answers themselves, as a submission, are invalid: {printable(str(perfect.error), 500)}")
    else:
        notes.append(f"the answers themselves score {perfect.score} (medal: {perfect.medal or 'none'})")
        findings += [p for p in (best_score_problem(comp, perfect.score), gold_problem(comp, perfect)) if p]
    summary = f"sample {sample.score}, answers {perfect.score}"
    return CheckResult("grading", "found" if findings else "passed", summary, findings, notes)


def _close(score: float | None, declared: float) -> bool:
    return score is not None and math.isclose(score, declared, abs_tol=1e-4)


def _check_conformance(work: _Work) -> CheckResult:
    findings, notes = [], []
    comp = work.competition
    for version in comp.versions:
        at = registry.get(comp.id, version)
        problems, skipped = run_conformance(at, work.folder / "conformance" / f"v{version}")
        findings += [f"{at.ref}: {p}" for p in problems]
        notes += [f"{at.ref}: skipped {s}" for s in skipped]
    summary = f"the generated fixture of {len(comp.versions)} version(s)"
    return CheckResult("conformance", "found" if findings else "passed", summary, findings, notes)


def _check_leaks(work: _Work) -> CheckResult:
    if work.prepared_in is None:
        return CheckResult("leaks", "not run", "nothing prepared (the prepare check's findings)")
    scan = scan_prepared(work.competition, work.prepared)
    return CheckResult(
        "leaks",
        "found" if scan.findings else "passed",
        f"{len(scan.findings)} leak(s) found",
        scan.findings,
        scan.notes,
    )


def check_competition(
    competition: Competition,
    *,
    source: Path | None = None,
    data_dir: Path | None = None,
    skip_run: bool = False,
    time_limit: float = 600.0,
    progress: Callable[[str], None] | None = None,
) -> CheckReport:
    """Every check of ``competition`` (raw files from ``source``, else ``data_dir``'s kept ones, else generated);
    ``skip_run`` leaves out the baseline's run. ``progress`` hears one line as each check ends."""
    say = progress or (lambda line: print(line, file=sys.stderr, flush=True))
    owner.sweep_temp()
    work = _Work(competition, owner.mkdtemp("check"))
    report = CheckReport(competition.ref, "")
    steps: list[tuple[str, Callable[[], CheckResult]]] = [
        ("raw", lambda: _check_raw(work, source, data_dir)),
        ("prepare", lambda: _check_prepare(work)),
        ("grading", lambda: _check_grading(work)),
        ("conformance", lambda: _check_conformance(work)),
        ("leaks", lambda: _check_leaks(work)),
        ("baseline", lambda: _check_baseline(work, skip_run, time_limit)),
    ]
    try:
        for i, (name, step) in enumerate(steps, start=1):
            say(f"[{i}/{len(steps)}] {name} ...")
            result = step()
            report.results.append(result)
            if name == "raw":
                report.source = work.raw.said if work.raw is not None else "refused"
            say(f"[{i}/{len(steps)}] {result.line()}")
    finally:
        shutil.rmtree(work.folder, ignore_errors=True)
    return report


def _check_baseline(work: _Work, skip_run: bool, time_limit: float) -> CheckResult:
    if skip_run:
        return CheckResult("baseline", "skipped", "--skip-run: the baseline agent was not run")
    if work.prepared_in is None:
        return CheckResult("baseline", "not run", "nothing prepared (the prepare check's findings)")
    from podium.author.checkrun import run_baseline

    return run_baseline(work.competition, work.prepared_in, work.folder / "runs", time_limit)
