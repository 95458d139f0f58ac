"""The ``podium`` command line's parser: every command, its flags and their defaults, and the value checks.

Every limit is checked here, before anything is created, with one line that names the value and the
fix; every help shows its defaults.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any, NoReturn

from podium import __version__
from podium.cli import commands, kernels, values
from podium.cli.auditing import add_audit_parser
from podium.cli.authoring import add_new_parser
from podium.cli.checking import add_check_parser
from podium.cli.contamination import add_familiarity_parser
from podium.cli.exits import EXIT_FAILED, EXIT_NOTHING_CHECKED, EXIT_USAGE
from podium.cli.gym import add_gym_parsers
from podium.cli.judging import add_judge_and_kernels_flags
from podium.cli.publishing import add_publishing_parsers
from podium.cli.run_parser import add_run_parser, ended_after_flag
from podium.cli.run_parser import latest_flag as _latest_flag
from podium.environments import PROFILES

__all__ = ["build_parser", "join_values"]


#: Options of `run` whose values may look like options (a negative number): ``--time-limit -5m``.
_VALUE_OPTIONS = ("--time-limit", "--memory", "--disk", "--cpus", "--seeds", "--workers", "--gpus")


def join_values(argv: Sequence[str]) -> list[str]:
    """``--time-limit -5m`` -> ``--time-limit=-5m``, so that argparse hands the value to our check."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return out + list(argv[i:])
        following = argv[i + 1] if i + 1 < len(argv) else ""
        if arg in _VALUE_OPTIONS and following.startswith("-") and not following.startswith("--") and following != "-":
            out.append(f"{arg}={following}")
            i += 2
            continue
        out.append(arg)
        i += 1
    return out


def _competition_or_split(parser: argparse.ArgumentParser) -> None:
    which = parser.add_mutually_exclusive_group()
    which.add_argument("-c", "--competition", action="append", help="competition id (repeatable)")
    which.add_argument("--split", help=f"every competition of a split: {values.SPLIT_NAMES}")


class _HelpFormatter(argparse.HelpFormatter):
    """Help that names each option's default, unless its text already does."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if not action.option_strings or "default" in text or action.default in (None, False, argparse.SUPPRESS):
            return text
        return text + " (default: %(default)s)"


class _Parser(argparse.ArgumentParser):
    """argparse with defaults in every help and errors on one line (subcommands' parsers are of this class too)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"podium: error: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="podium", description="Benchmark harness for ML-engineering agents.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("list", help="list competitions")
    p.add_argument("--split", default="all", help=f"the competitions of one split: {values.SPLIT_NAMES}")
    p.add_argument("--json", action="store_true", help="one JSON document instead of the table")
    ended_after_flag(p, "of --split")
    _latest_flag(p)
    p.set_defaults(fn=commands.cmd_list)

    p = sub.add_parser("show", help="show one competition")
    p.add_argument("id", help="competition id, optionally id@VERSION")
    p.add_argument("--json", action="store_true", help="one JSON document instead of the text")
    _latest_flag(p)
    p.set_defaults(fn=commands.cmd_show)

    p = sub.add_parser("grade-sample", help="grade one submission file and print the report as JSON")
    p.add_argument("submission", help="the submission CSV")
    p.add_argument("id", help="competition id, optionally id@VERSION")
    p.add_argument("--data-dir", default=None, help="prepared data (default: $PODIUM_DATA_DIR or the user cache dir)")
    _latest_flag(p)
    p.set_defaults(fn=commands.cmd_grade_sample)

    p = sub.add_parser(
        "validate", help="check a submission's format against the sample submission (no answers, no score)"
    )
    p.add_argument("submission", help="the submission CSV")
    p.add_argument("id", help="competition id, optionally id@VERSION")
    p.add_argument("--data-dir", default=None, help="prepared data (default: $PODIUM_DATA_DIR or the user cache dir)")
    _latest_flag(p)
    p.set_defaults(fn=commands.cmd_validate)

    p = sub.add_parser("grade", help="grade every submission listed in a JSONL file")
    p.add_argument(
        "--submission", required=True, help='JSONL: one {"competition_id": ..., "submission_path": ...} per line'
    )
    p.add_argument("--output-dir", required=True, help="where the grading report is written")
    p.add_argument("--data-dir", default=None, help="prepared data (default: $PODIUM_DATA_DIR or the user cache dir)")
    _latest_flag(p)
    p.set_defaults(fn=commands.cmd_grade)

    add_run_parser(sub)

    p = sub.add_parser("env", help="build, list and remove the environments agents' code runs with")
    env_sub = p.add_subparsers(dest="env_command", required=True)
    q = env_sub.add_parser("build", help="build an environment from a profile (cached by its digest)")
    q.add_argument(
        "--profile",
        default="minimal",
        help=f"{', '.join(PROFILES)} (openhands and coding-agents are Debian 13 root filesystems), "
        "a requirements .txt or a rootfs .yaml",
    )
    q.add_argument("--gpu", action="store_true", help="the profile's GPU (CUDA) variant")
    q.add_argument("--requirement", action="append", default=None, metavar="PKG==VER", help="an extra pinned package")
    q.add_argument("--force", action="store_true", help="build again even if built")
    q.set_defaults(fn=commands.cmd_env_build)
    q = env_sub.add_parser("list", help="list the built environments")
    q.add_argument("--json", action="store_true", help="one JSON document instead of the table")
    q.set_defaults(fn=commands.cmd_env_list)
    q = env_sub.add_parser("rm", help="remove built environments")
    q.add_argument("names", nargs="+", metavar="NAME", help="a name (minimal), a folder name or a digest prefix")
    q.set_defaults(fn=commands.cmd_env_rm)

    p = sub.add_parser("prepare", help="prepare competitions: Kaggle files -> public/ and private/")
    which = p.add_mutually_exclusive_group()
    which.add_argument(
        "-c", "--competition", action="append", help="competition id (repeatable), optionally id@VERSION"
    )
    which.add_argument("--split", help=f"every competition of a split: {values.SPLIT_NAMES}")
    which.add_argument("--all", action="store_true", help="every registered competition")
    which.add_argument("--list", help="a file with one competition id per line")
    p.add_argument(
        "--data-dir",
        default=None,
        help="where DIR/ID/{raw,prepared} live (default: $PODIUM_DATA_DIR or the user cache dir)",
    )
    p.add_argument(
        "--from",
        dest="source",
        default=None,
        help="already downloaded data: a Kaggle zip or extracted folder (or a folder of <id>.zip / <id>/)",
    )
    p.add_argument(
        "--from-mlebench",
        dest="from_mlebench",
        default=None,
        metavar="DIR",
        help="take the data MLE-bench prepared (DIR/<id>/prepared/{public,private}, e.g. ~/.cache/mle-bench/data): "
        "checked against podium's checksums, linked where the filesystem allows, else copied; without -c/--split, "
        "every competition DIR holds",
    )
    p.add_argument("--keep-raw", action="store_true", help="keep raw/ after a successful prepare")
    p.add_argument("--force", action="store_true", help="prepare again even if prepared")
    p.add_argument("--obfuscated", action="store_true", help="give the agent the description that names no competition")
    ended_after_flag(p, "of those named; alone, of every registered competition")
    _latest_flag(p)
    p.set_defaults(fn=commands.cmd_prepare)

    add_new_parser(sub)

    p = sub.add_parser("kernels", help="the competitions' top public notebooks, for `podium audit --checks plagiarism`")
    kernels_sub = p.add_subparsers(dest="kernels_command", required=True)
    q = kernels_sub.add_parser(
        "download", help="fetch each competition's listed notebooks with the Kaggle client into DIR/ID/kernels/"
    )
    _competition_or_split(q)
    q.add_argument(
        "--data-dir", default=None, help="where DIR/ID/kernels/ live (default: $PODIUM_DATA_DIR or the user cache dir)"
    )
    q.add_argument("--from", dest="source", help="notebooks already downloaded: a folder of <id>/ folders (no Kaggle)")
    q.add_argument("--force", action="store_true", help="fetch every notebook again")
    q.set_defaults(fn=kernels.cmd_kernels_download)

    p = sub.add_parser(
        "verify",
        help="check prepared data against its recorded checksums",
        epilog=f"exit status 0: every prepared competition matched; {EXIT_FAILED}: a file differs; "
        f"{EXIT_NOTHING_CHECKED}: nothing verified (no competition asked for is prepared).",
    )
    _competition_or_split(p)
    p.add_argument(
        "--data-dir",
        default=None,
        help="where the prepared data is (default: $PODIUM_DATA_DIR, else ~/.cache/podium/data)",
    )
    _latest_flag(p)
    p.set_defaults(fn=commands.cmd_verify)

    add_check_parser(sub)

    p = sub.add_parser(
        "example", help="grade generated example submissions for every competition of a split (offline, no data needed)"
    )
    p.add_argument("--split", default="lite", help=f"the split whose competitions get examples: {values.SPLIT_NAMES}")
    p.add_argument("--output-dir", default=None, help="keep the generated data and reports here")
    _latest_flag(p)
    p.set_defaults(fn=commands.cmd_example)

    p = sub.add_parser(
        "report",
        help="aggregate run groups and MLE-bench grading reports with the published rules, per split",
        description="Medal rates per label and split, exactly as MLE-bench's aggregate_grading_reports.py computes "
        "them (seed i = each competition's i-th report; complete seeds only unless --pad-missing; mean, SEM, "
        "mean +- 1.96 SEM), beside podium's own view (harness failures apart, t intervals). See docs/reporting.md.",
    )
    p.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="a podium run group folder (RUNS/<group>), a runs folder, an MLE-bench grading-report JSON file, "
        "or a folder of them",
    )
    p.add_argument(
        "--split",
        default=None,
        metavar="NAME",
        help=f"only this split: {values.SPLIT_NAMES} (lite = low, all = split75), or a .txt file of ids "
        "(default: low, medium, high and all, plus dev/practice when run)",
    )
    p.add_argument(
        "--pad-missing", action="store_true", help="count missing runs as failures instead of keeping complete seeds"
    )
    p.add_argument("--seeds", type=int, default=-1, metavar="N", help="use the first N seeds (default: -1, every seed)")
    p.add_argument(
        "--format",
        default=None,
        choices=["text", "md", "json", "csv", "html"],
        help="output format: text, md, json, csv (one row per run) or html (one self-contained file) "
        "(default: text, or the --output file's suffix)",
    )
    p.add_argument("--output", default=None, metavar="FILE", help="write to FILE instead of standard output")
    p.add_argument(
        "--label",
        action="append",
        metavar="NAME",
        help="the label of the rows: once for all PATHs (pooled, read in sorted path order) or once per PATH",
    )
    p.add_argument(
        "--by",
        default=None,
        metavar="FIELDS",
        help="label every run by these of its settings instead, pooling runs of any PATH that share them: "
        "comma-separated, of agent, group, model, time_limit, hardware, description",
    )
    p.add_argument(
        "--compare",
        action="append",
        metavar="A,B",
        help="compare label A with label B on the competitions both ran (repeatable; default: every label "
        "against the first)",
    )
    p.add_argument(
        "--time-scaling",
        action="store_true",
        help="grade each run's best-so-far snapshots at each hour (needs the prepared answers; see --data-dir)",
    )
    p.add_argument(
        "--hours",
        default=None,
        metavar="H,H,...",
        type=values.hours,
        help="the time points of --time-scaling, in hours, e.g. 1,2,4,8,24 (default: every hour of the time "
        "limit, or ten even steps of a limit under two hours)",
    )
    p.add_argument("--data-dir", default=None, help="prepared data (default: $PODIUM_DATA_DIR or the user cache dir)")
    p.add_argument(
        "--familiarity",
        default=None,
        metavar="FILE",
        help="a `podium familiarity` file: familiarity against performance per competition, with the correlation",
    )
    p.add_argument(
        "--training-runs",
        action="append",
        default=[],
        metavar="DIR",
        help="also search DIR (a runs folder; repeatable) for sealed training episodes of the evaluated models; the "
        "runs folders of the PATHs are always searched (docs/gym.md)",
    )
    p.add_argument(
        "--mixed-hardware",
        action="store_true",
        help="put labels whose runs had different compute (CPUs, memory, GPUs; 'unknown' for records without it) "
        "in one comparison; without it such a report is refused",
    )
    ended_after_flag(p, "of the runs' competitions; every split narrowed to those")
    p.set_defaults(fn=commands.cmd_report)
    add_judge_and_kernels_flags(add_audit_parser(sub))
    add_familiarity_parser(sub)
    add_publishing_parsers(sub)
    add_gym_parsers(sub)
    p = sub.add_parser("serve", help="a live, read-only dashboard of the runs folder in the browser (docs/serving.md)")
    p.add_argument("--runs-dir", default="runs", help="the runs folder to show")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on; any but loopback needs --token")
    p.add_argument("--port", type=values.count(0, "--port"), default=8000, help="port to listen on (0: any free one)")
    p.add_argument("--token", nargs="?", const="", metavar="T", help="require T on every request; alone: a random T")
    p.set_defaults(fn=commands.cmd_serve)
    _competitions_dir_everywhere(sub, skip=("env",))
    return parser


def _competitions_dir_everywhere(sub: argparse._SubParsersAction, skip: Sequence[str]) -> None:
    """``--competitions-dir`` on every command (and sub-command) that reads competitions: all but ``skip``."""
    for name, command in sub.choices.items():
        if name in skip:
            continue
        nested = [a for a in command._actions if isinstance(a, argparse._SubParsersAction)]
        if nested:
            _competitions_dir_everywhere(nested[0], skip=())
        else:
            command.add_argument(
                "--competitions-dir",
                action="append",
                metavar="DIR",
                help="a folder of your own competition declarations, one sub-folder each, or one declaration "
                "(repeatable; also $PODIUM_COMPETITIONS_PATH, colon-separated; docs/declaring.md)",
            )
