"""``--ended-after DATE``: the competitions whose deadline is after a model's training cutoff, so that a model is
measured on competitions whose pages, discussions and winning notebooks it cannot have read (docs/contamination.md,
"Fresh splits").

A competition's deadline is :attr:`Competition.deadline`, and where it comes from :attr:`Competition.deadline_source`
(:data:`podium.competition.DEADLINE_SOURCES`): its declaration's ``deadline:`` (Kaggle's metadata, or the author's
word), else the latest submission on its private leaderboard. A competition without one (a practice competition, a
leaderboard that never closes) is left out of every selection and counted as such. A competition is selected when
its deadline is strictly after the cutoff: one that ended on the cutoff's day may be in the model's data.

A run group made this way records its :class:`Selection` in ``group.json`` (:meth:`Selection.record`), so that a
later command reruns the very competitions it chose, whatever has been declared since (:func:`resume`), and a
command that would mix another selection into it is refused (:func:`check_group`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from podium import registry
from podium.competition import Competition
from podium.errors import PodiumError, UsageError

__all__ = ["RECORD_KEY", "Selection", "check_group", "deadline_of", "resume", "select", "sources_text"]

#: The key of ``group.json`` that holds a group's selection.
RECORD_KEY = "ended_after"


def _names(ids: Sequence[str], most: int = 5) -> str:
    return ", ".join(ids) if len(ids) <= most else f"{', '.join(ids[:most])} and {len(ids) - most} more"


@dataclass(frozen=True)
class Selection:
    """What ``--ended-after cutoff`` kept of the competitions of ``base`` (in words: ``split all``,
    ``--competitions``), and what it left out, each in the order given."""

    cutoff: date
    base: str
    selected: tuple[Competition, ...]
    ended_before: tuple[Competition, ...]
    without_deadline: tuple[Competition, ...]

    @property
    def ids(self) -> list[str]:
        return [c.id for c in self.selected]

    def sentence(self) -> str:
        """One line: how many it kept of how many, what it left out and why, and where the deadlines came from."""
        total = len(self.selected) + len(self.ended_before) + len(self.without_deadline)
        absent = [c.id for c in self.without_deadline]
        return (
            f"--ended-after {self.cutoff}: {len(self.selected)} of the {total} competitions of {self.base} ended after "
            f"it (deadlines: {sources_text(c.deadline_source for c in self.selected)}); left out: "
            f"{len(self.ended_before)} that ended on or before it, {len(absent)} without a deadline"
            + (f" ({_names(absent)})" if absent else "")
        )

    def record(self) -> dict[str, Any]:
        """What ``group.json`` keeps of it (:data:`RECORD_KEY`): enough to rerun and report the same competitions."""
        return {
            "cutoff": self.cutoff.isoformat(),
            "from": self.base,
            "competitions": self.ids,
            "deadlines": {c.id: _deadline(c) for c in self.selected},
            "ended_before": len(self.ended_before),
            "without_deadline": [c.id for c in self.without_deadline],
            "selected_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }


#: How a sentence names each of :data:`podium.competition.DEADLINE_SOURCES`.
_SOURCE_WORDS = {
    "kaggle": "from Kaggle's metadata",
    "declared": "declared",
    "last submission on the private leaderboard": "from the last submission on the private leaderboard",
}


def sources_text(sources: Iterable[str | None]) -> str:
    """Where the deadlines came from, most first: ``8 from the last submission on the private leaderboard, 1 declared``."""
    counts: dict[str, int] = {}
    for source in sources:
        counts[str(source)] = counts.get(str(source), 0) + 1
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return ", ".join(f"{n} {_SOURCE_WORDS.get(source, source)}" for source, n in ranked) or "none"


def _deadline(competition: Competition) -> dict[str, Any]:
    return {
        "deadline": competition.deadline.isoformat() if competition.deadline else None,
        "source": competition.deadline_source,
    }


def select(competitions: Iterable[Competition], cutoff: date, base: str) -> Selection:
    """The competitions whose deadline is after ``cutoff``; none kept is one line naming the latest deadline and
    the fix (nothing is run or prepared)."""
    given = list(competitions)
    selected = tuple(c for c in given if c.deadline is not None and c.deadline > cutoff)
    before = tuple(c for c in given if c.deadline is not None and c.deadline <= cutoff)
    absent = tuple(c for c in given if c.deadline is None)
    if not selected:
        latest = max(before, key=lambda c: (c.deadline, c.id), default=None)
        last = f"; the latest deadline among them is {latest.deadline} ({latest.id})" if latest else ""
        raise UsageError(
            f"--ended-after {cutoff} leaves no competition of {base}: none of its {len(given)} ended after it "
            f"({len(before)} ended on or before it, {len(absent)} without a deadline{last}). Fix: give an earlier date, "
            "or name other competitions"
        )
    return Selection(cutoff, base, selected, before, absent)


def deadline_of(competition_id: str) -> tuple[date | None, str | None]:
    """(deadline, source) of a registered competition; (None, None) for an id the registry does not know (a
    grading report of a competition declared elsewhere)."""
    try:
        competition = registry.get(competition_id)
    except PodiumError:
        return None, None
    return competition.deadline, competition.deadline_source


def check_group(document: Mapping[str, Any] | None, asked: Mapping[str, Any] | None, where: str, used: bool) -> None:
    """Refuse a command whose selection (``asked``: a :meth:`Selection.record`, None without ``--ended-after``)
    is not the one the group was made with (``document``: its ``group.json``; ``used``: it holds runs or a
    ``group.json``), naming both and the fix."""
    recorded = (document or {}).get(RECORD_KEY)
    if recorded is None and asked is None:
        return
    if recorded is None:
        if used:
            raise UsageError(
                f"{where} was made without --ended-after, so its competitions were not chosen by deadline. Fix: pass "
                f"--run-group NAME to start a group for --ended-after {asked['cutoff']}"  # type: ignore[index]
            )
        return
    flag = f"--ended-after {recorded['cutoff']}"
    if asked is None:
        raise UsageError(
            f"{where} was selected by {flag} of {recorded['from']}; this command names no cutoff, so it would add "
            f"competitions the cutoff left out. Fix: pass {flag} to resume it, or --run-group NAME for another group"
        )
    if (asked["cutoff"], asked["from"]) != (recorded["cutoff"], recorded["from"]):
        raise UsageError(
            f"{where} was selected by {flag} of {recorded['from']}; this command asks --ended-after {asked['cutoff']} "
            f"of {asked['from']}. Fix: pass {flag} of {recorded['from']} to resume it, or --run-group NAME for "
            "another group"
        )


def resume(recorded: Mapping[str, Any], today: Selection, group: str) -> tuple[list[str], str]:
    """The competitions a group recorded (a rerun runs those, so the group stays what it was made), and a line
    saying so, with what the same cutoff selects differently today (a competition declared or redated since)."""
    ids = [str(cid) for cid in recorded["competitions"]]
    line = (
        f"run group {group!r}: resuming its selection of {str(recorded.get('selected_at', '?'))[:10]}: the "
        f"{len(ids)} competition(s) that ended after {recorded['cutoff']}"
    )
    added = [cid for cid in today.ids if cid not in ids]
    dropped = [cid for cid in ids if cid not in today.ids]
    if added or dropped:
        line += (
            "; today the same cutoff would"
            + (f" also select {_names(added)}" if added else "")
            + (" and" if added and dropped else "")
            + (f" no longer select {_names(dropped)}" if dropped else "")
            + ", which the group keeps out (--run-group NAME for today's selection)"
        )
    return ids, line
