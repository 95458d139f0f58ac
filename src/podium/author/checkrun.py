"""``podium check``'s one run of the baseline agent: ``podium run``'s own batch, in a temporary runs folder.

The built-in ``baseline`` agent (no model: gradient-boosted trees on tables and small images, else the sample
submission) runs once in the bubblewrap sandbox on the checked data, and is graded as any run is. It must make a
valid submission; where its score lands on the leaderboard is said (or that there is none). Ctrl-C stops the run
as it stops ``podium run``, and the check stops with it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from podium.agents import load_agent
from podium.author.checkreport import CheckResult
from podium.competition import Competition
from podium.records import GradeReport
from podium.run import RunConfig, run_batch
from podium.run.outcome import outcome
from podium.untrusted import printable

__all__ = ["run_baseline", "where_it_lands"]


def where_it_lands(competition: Competition, grade: GradeReport) -> str:
    """A grade's place on the competition's leaderboard, in words."""
    board = competition.leaderboard
    if board is None or grade.score is None:
        return f"score {grade.score}; no leaderboard to place it on"
    place = board.place(grade.score)
    medal = f"a {place.medal} medal" if place.medal else "no medal"
    median = "above" if place.above_median else "not above"
    return (
        f"score {grade.score}: rank {place.rank} of {board.n_teams} teams (beats {place.percentile:.0%}), {medal}, "
        f"{median} the median {board.median}"
    )


def run_baseline(competition: Competition, data_dir: Path, runs_dir: Path, time_limit: float) -> CheckResult:
    """One baseline run on ``competition`` prepared in ``data_dir``; its runs go to ``runs_dir``."""
    if shutil.which("bwrap") is None:
        return CheckResult(
            "baseline",
            "not run",
            "bubblewrap is not installed (apt-get install bubblewrap); --skip-run leaves the run out",
        )
    agent = load_agent("baseline")
    config = RunConfig(
        agent=agent,
        seeds=1,
        time_limit=time_limit,
        sandbox="bwrap",
        cpus=agent.cpus,
        memory_bytes=agent.memory_bytes,
        disk_bytes=agent.disk_bytes,
        gpus=0,
        run_group="check",
        data_dir=data_dir,
        runs_dir=runs_dir,
    )
    batch = run_batch(config, [competition])
    if batch.interrupted:
        raise KeyboardInterrupt
    if batch.not_run or not batch.records:
        return CheckResult("baseline", "not run", "the run could not run (a harness error: why is above)")
    record = batch.records[0]
    grade = record.grade
    if grade is None or not grade.submission_exists:
        said = " | ".join(line.strip() for line in outcome(record).splitlines()) if grade is not None else record.status
        return CheckResult("baseline", "found", "no submission", [f"the baseline made {printable(said, 1000)}"])
    if not grade.valid_submission:
        problem = f"the baseline's submission is invalid: {printable(str(grade.error), 500)}"
        return CheckResult("baseline", "found", "an invalid submission", [problem])
    lands = where_it_lands(competition, grade)
    return CheckResult("baseline", "passed", f"a valid submission, {lands}", notes=[f"the baseline lands at {lands}"])
