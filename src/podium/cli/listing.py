"""``podium list`` and ``podium show``: the registered competitions, in a table or one by one (with
``--ended-after``, only those whose deadline is after a model's training cutoff: :mod:`podium.deadlines`)."""

from __future__ import annotations

import argparse
import sys

from podium.cli.printing import print_json, table
from podium.untrusted import printable

__all__ = ["cmd_list", "cmd_show"]


def cmd_list(args: argparse.Namespace) -> int:
    from podium import registry
    from podium.declarations import source_of

    comps = registry.load_all(args.split, latest=args.latest)
    selection = None
    if args.ended_after is not None:
        from podium.deadlines import select

        selection = select(comps, args.ended_after, f"split {args.split}")
        comps = list(selection.selected)
    if args.json:
        print_json([{**c.to_dict(), "source": source_of(c.folder)} for c in comps])
        if selection is not None:  # beside the document, which stays one JSON document
            print(f"podium: {selection.sentence()}", file=sys.stderr)
        return 0
    rows = [
        [
            c.id,
            c.complexity,
            c.metric.name,
            "higher" if c.higher_is_better else "lower",
            str(c.leaderboard.n_teams) if c.leaderboard else "-",
            "yes" if c.awards_medals else "no",
            str(c.version),
            c.deadline.isoformat() if c.deadline else "-",
            _SHORT_SOURCES.get(str(c.deadline_source), "-"),
            printable(source_of(c.folder)),
        ]
        for c in comps
    ]
    header = ["id", "complexity", "metric", "better", "teams", "kaggle medals", "version", "deadline", "from", "source"]
    print(table(rows, header))
    print(f"\n{len(comps)} competition(s) in split {args.split!r}; {_definitions(args.latest)}")
    if selection is not None:
        print(selection.sentence())
    print(_DEADLINES_LEGEND)
    return 0


#: The words of the ``from`` column for :data:`podium.competition.DEADLINE_SOURCES`.
_SHORT_SOURCES = {"kaggle": "kaggle", "declared": "declared", "last submission on the private leaderboard": "last sub."}
_DEADLINES_LEGEND = (
    "deadline from: kaggle = Kaggle's metadata; declared = the declaration's own word; last sub. = the last "
    "submission on the private leaderboard (no deadline recorded); - = none (--ended-after leaves it out)"
)


def _definitions(latest: bool) -> str:
    """How the versions were chosen, in the words every report uses."""
    if latest:
        return "latest definitions (--latest: the newest version of each competition)"
    return "published definitions (version 1 of each competition, as MLE-bench grades it; --latest for the newest)"


def cmd_show(args: argparse.Namespace) -> int:
    from podium import registry
    from podium.declarations import digest, source_of

    comp = registry.get(args.id, latest=args.latest)
    data = {**comp.to_dict(), "source": source_of(comp.folder), "declaration_sha256": digest(comp.folder)}
    if args.json:
        print_json(data)
        return 0
    kind = "the published definition" if comp.is_published else "a corrected definition"
    print(f"{comp.name} ({comp.ref}, {kind}; versions {', '.join(map(str, comp.versions))})")
    for key in (
        "complexity",
        "data_kind",
        "metric",
        "metric_options",
        "higher_is_better",
        "id_columns",
        "target_columns",
        "answers",
        "sample_submission",
        "sample_submission_score",
        "n_teams",
        "gold_threshold",
        "silver_threshold",
        "bronze_threshold",
        "median_threshold",
        "awards_medals",
        "deadline",
        "deadline_source",
        "source",
        "declaration_sha256",
    ):
        print(f"  {key:24} {printable(str(data[key]))}")
    if comp.changes:
        print(f"  {'changes':24} {comp.changes}")
    if not comp.awards_medals:
        print("  Kaggle awarded no medals in this competition; podium places medals by the thresholds all the same,")
        print("  as the published benchmark does")
    for version in comp.versions:
        if version != comp.version:
            other = registry.get(comp.id, version)
            shared = " (grades the same data)" if version in comp.same_data_versions else ""
            what = other.changes or "the published definition"
            print(f"  version {version}{shared}: {what}")
    for note in comp.notes:
        print(f"  note: {note}")
    if comp.leaderboard is None:
        print("  no Kaggle leaderboard: medals and percentiles are unavailable")
    elif comp.leaderboard.source != "kaggle":
        print(f"  leaderboard: {comp.leaderboard.source} (not a Kaggle leaderboard; medals are against it)")
    return 0
