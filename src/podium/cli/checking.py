"""``podium check ID``: every check of one competition before it counts (docs/declaring.md, "Checking a
competition"); progress on stderr, the findings and the verdict on stdout (or one JSON document)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from podium.cli import values
from podium.cli.exits import EXIT_FAILED

__all__ = ["add_check_parser", "cmd_check"]


def add_check_parser(sub: Any) -> None:
    """``podium check``'s parser, added to the subcommands ``sub``."""
    p = sub.add_parser(
        "check",
        help="check a competition before it counts: prepare twice, grade the sample and the answers, the "
        "conformance fixture, a baseline run and the leak scan",
        epilog=f"exit status 0: nothing found; {EXIT_FAILED}: a finding, or a check that could not run; 2: bad input.",
    )
    p.add_argument("id", help="competition id, optionally id@VERSION")
    p.add_argument(
        "--from",
        dest="source",
        default=None,
        metavar="RAW",
        help="the competition's raw files: its Kaggle zip or extracted folder, or a folder of <id>.zip / <id>/ "
        "(default: the raw files a --keep-raw prepare kept in --data-dir, else the generated fixture)",
    )
    p.add_argument(
        "--data-dir",
        default=None,
        help="a data dir whose kept raw files (ID/raw or ID/ID.zip) are checked; its prepared data is never touched",
    )
    p.add_argument("--skip-run", action="store_true", help="leave out the baseline agent's run")
    p.add_argument(
        "--time-limit", type=values.time_limit, default="10m", help="the baseline run's wall-clock limit, e.g. 10m"
    )
    p.add_argument("--json", action="store_true", help="one JSON document instead of the lines")
    p.set_defaults(fn=cmd_check)


def cmd_check(args: argparse.Namespace) -> int:
    from podium import registry
    from podium.author import check_competition

    competition = registry.get(args.id)
    report = check_competition(
        competition,
        source=Path(args.source) if args.source else None,
        data_dir=Path(args.data_dir) if args.data_dir else None,
        skip_run=args.skip_run,
        time_limit=args.time_limit,
    )
    if args.json:
        print(json.dumps(report.to_dict(), indent=1))
    else:
        print("\n".join(report.lines()))
    sys.stdout.flush()
    return report.exit_status
