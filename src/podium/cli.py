"""The ``podium`` command line.

    podium list [--split NAME] [--json]
    podium show ID[@VERSION] [--json]
    podium grade-sample SUBMISSION.csv ID[@VERSION] [--data-dir DIR]
    podium validate SUBMISSION.csv ID[@VERSION] [--data-dir DIR]
    podium grade --submission RUNS.jsonl --output-dir DIR [--data-dir DIR]
    podium prepare -c ID | --split NAME | --all | --list FILE [--data-dir DIR] [--from PATH] [--keep-raw] [--force]
    podium verify [-c ID | --split NAME] [--data-dir DIR]
    podium run [--agent NAME|PATH] [--competitions ID,... | --split NAME] [--seeds N] [--time-limit 24h]
               [--run-group NAME] [--redo failed|all] ...
    podium example [--split NAME] [--output-dir DIR]
    podium report PATH... [--split NAME] [--pad-missing] [--seeds N] [--format text|md|json] [--output FILE]
    podium --version

Heavy modules are imported inside each command, so ``grade-sample`` loads only what its
competition's metric needs.

Exit status: 0 done; 1 done, but the outcome is a failure (an invalid submission, no run of a batch
made a submission, a run could not run, a verify mismatch, a failed prepare); 2 a usage error or
anything podium refuses with a message (``podium: error: ...``, one line with the fix); 70 a bug
in podium (its traceback, and a line saying so); 130 interrupted (Ctrl-C); 141 the reader of the
output went away (``podium list | head``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from podium import __version__
from podium.errors import PodiumError, UsageError

if TYPE_CHECKING:
    from podium.run import Batch, RunConfig

__all__ = ["main"]

EXIT_FAILED, EXIT_USAGE, EXIT_BUG, EXIT_INTERRUPTED, EXIT_BROKEN_PIPE = 1, 2, 70, 130, 141


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, default=str))  # -inf scores print as -Infinity


def _table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=False)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(r, widths, strict=False)).rstrip() for r in [header, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.5g}"


def cmd_list(args: argparse.Namespace) -> int:
    from podium import competition as registry

    comps = registry.load_all(args.split, latest=args.latest)
    if args.json:
        _print_json([c.to_dict() for c in comps])
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
        ]
        for c in comps
    ]
    print(_table(rows, ["id", "complexity", "metric", "better", "teams", "kaggle medals", "version"]))
    print(f"\n{len(comps)} competition(s) in split {args.split!r}; {_definitions(args.latest)}")
    return 0


def _definitions(latest: bool) -> str:
    """How the versions were chosen, in the words every report uses."""
    if latest:
        return "latest definitions (--latest: the newest version of each competition)"
    return "published definitions (version 1 of each competition, as MLE-bench grades it; --latest for the newest)"


def cmd_show(args: argparse.Namespace) -> int:
    from podium import competition as registry

    comp = registry.get(args.id, latest=args.latest)
    data = comp.to_dict()
    if args.json:
        _print_json(data)
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
    ):
        print(f"  {key:24} {data[key]}")
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


def cmd_grade_sample(args: argparse.Namespace) -> int:
    from podium import competition as registry
    from podium.grading import grade

    report = grade(registry.get(args.id, latest=args.latest), args.submission, args.data_dir)
    _print_json(report.to_dict())
    return 0 if report.valid_submission else 1


def cmd_validate(args: argparse.Namespace) -> int:
    from podium import competition as registry
    from podium.grading import default_data_dir
    from podium.validation import validate

    comp = registry.get(args.id, latest=args.latest)
    data_dir = Path(args.data_dir) if args.data_dir else default_data_dir()
    result = validate(comp, args.submission, data_dir / comp.id / "prepared" / comp.sample_submission)
    _print_json(result.to_dict())
    return 0 if result.valid else 1


def cmd_grade(args: argparse.Namespace) -> int:
    from podium.batch import grade_jsonl

    path = grade_jsonl(Path(args.submission), Path(args.output_dir), args.data_dir, latest=args.latest)
    print(f"wrote {path}")
    return 0


def _selected(args: argparse.Namespace) -> list[str]:
    from podium import competition as registry

    if getattr(args, "list", None):
        if not Path(args.list).is_file():
            raise UsageError(f"--list {args.list}: no such file. Fix: give a file with one competition id per line")
        names = [line.strip() for line in Path(args.list).read_text(encoding="utf-8").splitlines()]
        return [n for n in names if n and not n.startswith("#")]
    if getattr(args, "all", False):
        return registry.ids()
    if args.split:
        return registry.split_ids(args.split)
    if args.competition:
        return list(args.competition)
    raise PodiumError("name what to prepare: -c ID (repeatable), --split NAME, --all or --list FILE")


def cmd_prepare(args: argparse.Namespace) -> int:
    from podium import competition as registry
    from podium.data.prepare import prepare_many
    from podium.grading import default_data_dir

    comps = [registry.get(ref, latest=args.latest) for ref in _selected(args)]
    data_dir = Path(args.data_dir) if args.data_dir else default_data_dir()
    source = Path(args.source) if args.source else None
    download = None
    if source is None:
        from podium.data import kaggle
        from podium.data.prepare import _prepare_module

        # only competitions that will download: not prepared yet (or --force), not already extracted,
        # and not built from package-shipped data (a prepare.py with fetch_raw, the practice suite)
        missing = [
            c
            for c in comps
            if (args.force or not (data_dir / c.id / "prepared").exists())
            and not (data_dir / c.id / "raw").is_dir()
            and not hasattr(_prepare_module(c.folder), "fetch_raw")
        ]
        if missing:
            pending = kaggle.preflight([c.id for c in missing])
            if pending:
                print("Accept the rules of these competitions on Kaggle, then run the command again:", file=sys.stderr)
                for item in pending:
                    print(f"  {item.competition_id}: {item.rules_url}", file=sys.stderr)
                return 2
        download = kaggle.download
    outcomes = prepare_many(
        comps,
        data_dir,
        source_dir=source,
        force=args.force,
        keep_raw=args.keep_raw,
        obfuscated=args.obfuscated,
        download=download,
    )
    rows = [[o.competition_id, o.status, f"{o.seconds:.1f}s", o.detail] for o in outcomes]
    print(_table(rows, ["competition", "status", "time", "detail"]))
    counts = {s: sum(o.status == s for o in outcomes) for s in ("prepared", "skipped", "failed")}
    print(
        f"\n{counts['prepared']} prepared, {counts['skipped']} skipped, {counts['failed']} failed (data in {data_dir})"
    )
    return 1 if counts["failed"] else 0


def cmd_verify(args: argparse.Namespace) -> int:
    from podium import competition as registry
    from podium.data.verify import verify
    from podium.grading import default_data_dir

    data_dir = Path(args.data_dir) if args.data_dir else default_data_dir()
    refs = (
        registry.split_ids(args.split)
        if args.split
        else (list(args.competition) if args.competition else registry.ids())
    )
    results = [verify(registry.get(ref, latest=args.latest), data_dir) for ref in refs]
    results = [r for r in results if args.competition or args.split or r.status != "not prepared"]
    print(
        _table(
            [[r.competition_id, r.status, "; ".join(r.problems)[:160]] for r in results],
            ["competition", "status", "problems"],
        )
    )
    return 1 if any(r.status == "mismatch" for r in results) else 0


def _number(text: str) -> float:
    """A finite number, or NaN for anything else (words, inf, nan)."""
    try:
        value = float(text)
    except ValueError:
        return math.nan
    return value if math.isfinite(value) else math.nan


def _time_limit(text: str) -> float:
    """A wall-clock limit: a positive number with a unit s, m, h or d (seconds without one)."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    value = text.strip().lower()
    unit = value[-1:] if value[-1:] in units else "s"
    number = _number(value[:-1] if value[-1:] in units else value)
    if math.isnan(number):
        raise argparse.ArgumentTypeError(f"cannot read the time limit {text!r}; write it like 24h, 90m, 30s or 2d")
    if number <= 0:
        raise argparse.ArgumentTypeError(f"the time limit must be positive, got {text}")
    return number * units[unit]


def _size(what: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        from podium.agents import parse_size

        try:
            size = parse_size(text)
        except PodiumError:
            raise argparse.ArgumentTypeError(
                f"cannot read the {what} {text!r}; write it like 16G, 512M or a number of bytes"
            ) from None
        if size is None or size <= 0:
            raise argparse.ArgumentTypeError(f"the {what} must be positive, got {text}")
        return size

    return parse


def _cpus(text: str) -> float:
    value = _number(text)
    if math.isnan(value):
        raise argparse.ArgumentTypeError(f"cannot read the CPU count {text!r}; write a number of cores, like 2 or 0.5")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"the CPUs per run must be more than 0, got {text}")
    return value


def _count(least: int, what: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"the {what} must be a whole number, got {text!r}") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"the {what} must be at least {least}, got {text}")
        return value

    return parse


#: Options of `run` whose values may look like options (a negative number): ``--time-limit -5m``.
_VALUE_OPTIONS = ("--time-limit", "--memory", "--disk", "--cpus", "--seeds", "--workers", "--gpus")


def _join_values(argv: Sequence[str]) -> list[str]:
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


def cmd_run(args: argparse.Namespace) -> int:
    from podium import competition as registry
    from podium.agents import load_agent
    from podium.data.prepare import prepare_many
    from podium.grading import default_data_dir
    from podium.run import RunConfig, run_batch

    refs = args.competitions.split(",") if args.competitions else registry.split_ids(args.split)
    comps = [registry.get(ref.strip(), latest=args.latest) for ref in refs if ref.strip()]
    if not comps:
        raise UsageError(f"--competitions {args.competitions!r} names no competition. Fix: give ids like a,b")
    data_dir = Path(args.data_dir) if args.data_dir else default_data_dir()
    agent = load_agent(args.agent)
    cpus = args.cpus if args.cpus is not None else agent.cpus
    here = len(os.sched_getaffinity(0))
    if cpus is not None and cpus > here:
        print(f"podium: warning: {cpus:g} CPUs per run, but this machine gives podium {here}", file=sys.stderr)
    unprepared = [c for c in comps if not (data_dir / c.id / "prepared").is_dir()]
    offline = [
        c
        for c in unprepared
        if (c.folder / "prepare.py").is_file() and "def fetch_raw" in (c.folder / "prepare.py").read_text()
    ]
    missing = [c.id for c in unprepared if c not in offline]
    if missing:
        raise UsageError(
            f"not prepared: {', '.join(missing)}; run `podium prepare -c ID` for each (data dir {data_dir})"
        )
    if offline:
        print(f"preparing {len(offline)} offline competition(s) first ...", file=sys.stderr)
        for outcome in prepare_many(offline, data_dir):
            if outcome.status == "failed":
                raise PodiumError(f"could not prepare {outcome.competition_id}: {outcome.detail}")
    config = RunConfig(
        agent=agent,
        seeds=args.seeds,
        time_limit=args.time_limit,
        sandbox=args.sandbox,
        cpus=cpus,
        memory_bytes=args.memory if args.memory is not None else agent.memory_bytes,
        disk_bytes=args.disk if args.disk is not None else agent.disk_bytes,
        gpus=args.gpus if args.gpus is not None else (agent.gpus or 0),
        run_group=args.run_group,
        data_dir=data_dir,
        runs_dir=Path(args.runs_dir),
        workers=args.workers,
    )
    batch = run_batch(config, comps, redo=args.redo)
    return _report_batch(config, batch)


def _report_batch(config: RunConfig, batch: Batch) -> int:
    """Write and print the group's report (every run in the group); the exit status of the batch."""
    from podium import competition as registry
    from podium.report import write_report
    from podium.run import agent_failures
    from podium.store import RunStore

    rows = RunStore(config.runs_dir).rows(config.run_group)
    boards = {}
    for row in rows:
        comp = registry.get(row["competition_id"], row["competition_version"])
        boards[comp.id] = comp.leaderboard.source if comp.leaderboard else "none"
    failures = agent_failures(rows)
    group_dir = config.runs_dir / config.run_group
    json_path, md_path = write_report(group_dir, config.run_group, rows, boards, failures=failures)
    print(md_path.read_text(encoding="utf-8"))
    print(f"report: {md_path} and {json_path}")
    if batch.interrupted:
        print("interrupted; rerun the same command to resume", file=sys.stderr)
        return EXIT_INTERRUPTED
    if batch.not_run:
        print(
            f"podium: error: {len(batch.not_run)} run(s) could not run ({', '.join(batch.not_run[:5])}; why is "
            "above); rerun the same command to retry them",
            file=sys.stderr,
        )
        return EXIT_FAILED
    named = {(c.id, s) for c, s in batch.pairs}
    mine = [r for r in rows if (r["competition_id"], r["seed"]) in named]
    if mine and not any(r["submission_exists"] for r in mine):
        print(_no_submission(agent_failures(mine), len(mine)), file=sys.stderr)
        return EXIT_FAILED
    return 0


def _no_submission(failures: list[dict[str, Any]], runs: int) -> str:
    """Why no run made a submission, grouped by the last line the agents wrote to stderr."""
    by_last: dict[str, list[dict[str, Any]]] = {}
    for failure in failures:
        last = failure["stderr_tail"][-1] if failure["stderr_tail"] else "(nothing on stderr)"
        by_last.setdefault(last, []).append(failure)
    lines = [f"podium: error: no run made a submission ({runs} run(s)). What the agents wrote to stderr:"]
    for last, group in sorted(by_last.items(), key=lambda item: -len(item[1])):
        first = group[0]
        lines.append(
            f"  {len(group)} run(s) ended with: {last}\n"
            f"    e.g. {first['competition_id']} seed {first['seed']}: the agent {first['ended']}; "
            f"all of its stderr: {first['stderr_log']}"
        )
    return "\n".join(lines)


def cmd_example(args: argparse.Namespace) -> int:
    from podium.batch import run_example

    return run_example(args.split, Path(args.output_dir) if args.output_dir else None, latest=args.latest)


def cmd_report(args: argparse.Namespace) -> int:
    from podium.aggregate import build_report, load_inputs, render
    from podium.report import write_text

    inputs = load_inputs(args.paths, args.label or ())
    report = build_report(inputs, split=args.split, seeds=args.seeds, pad_missing=args.pad_missing)
    text = render(report, args.format)
    if args.output:
        write_text(Path(args.output), text)
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def _latest_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--latest",
        action="store_true",
        help="an id without @N means its newest version (corrected data and metric); default: version 1, "
        "the published definition",
    )


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


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="podium", description="Benchmark harness for ML-engineering agents.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("list", help="list competitions")
    p.add_argument("--split", default="all", help="low (lite), medium, high, split75, dev, systemcard, practice, all")
    p.add_argument("--json", action="store_true")
    _latest_flag(p)
    p.set_defaults(fn=cmd_list)

    p = sub.add_parser("show", help="show one competition")
    p.add_argument("id", help="competition id, optionally id@VERSION")
    p.add_argument("--json", action="store_true")
    _latest_flag(p)
    p.set_defaults(fn=cmd_show)

    p = sub.add_parser("grade-sample", help="grade one submission file and print the report as JSON")
    p.add_argument("submission", help="the submission CSV")
    p.add_argument("id", help="competition id, optionally id@VERSION")
    p.add_argument("--data-dir", default=None, help="prepared data (default: $PODIUM_DATA_DIR or the user cache dir)")
    _latest_flag(p)
    p.set_defaults(fn=cmd_grade_sample)

    p = sub.add_parser(
        "validate", help="check a submission's format against the sample submission (no answers, no score)"
    )
    p.add_argument("submission", help="the submission CSV")
    p.add_argument("id", help="competition id, optionally id@VERSION")
    p.add_argument("--data-dir", default=None, help="prepared data (default: $PODIUM_DATA_DIR or the user cache dir)")
    _latest_flag(p)
    p.set_defaults(fn=cmd_validate)

    p = sub.add_parser("grade", help="grade every submission listed in a JSONL file")
    p.add_argument(
        "--submission", required=True, help='JSONL: one {"competition_id": ..., "submission_path": ...} per line'
    )
    p.add_argument("--output-dir", required=True, help="where the grading report is written")
    p.add_argument("--data-dir", default=None, help="prepared data (default: $PODIUM_DATA_DIR or the user cache dir)")
    _latest_flag(p)
    p.set_defaults(fn=cmd_grade)

    p = sub.add_parser(
        "run", help="run an agent on competitions in a sandbox, grade, and report (default: the offline practice suite)"
    )
    p.add_argument("--agent", default="baseline", help="a built-in agent (dummy, baseline) or a folder with agent.yaml")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--competitions", help="comma-separated competition ids")
    which.add_argument("--split", default="practice", help="a named split (default: practice, the offline suite)")
    p.add_argument("--seeds", type=_count(1, "number of seeds"), default=1, help="runs per competition")
    p.add_argument(
        "--time-limit", type=_time_limit, default="24h", help="wall-clock limit per run, e.g. 24h, 90m, 30s, 2d"
    )
    p.add_argument("--workers", type=_count(1, "number of workers"), default=1, help="runs at once")
    p.add_argument(
        "--sandbox",
        default="bwrap",
        choices=["bwrap", "docker", "local"],
        help="isolation: bwrap (default), docker (a local engine, found through DOCKER_HOST), local (none: debugging)",
    )
    p.add_argument("--cpus", type=_cpus, default=None, help="CPU cores per run (a CFS quota; default: the agent's)")
    p.add_argument(
        "--memory", type=_size("memory cap"), default=None, help="memory cap per run, e.g. 16G (default: the agent's)"
    )
    p.add_argument(
        "--disk",
        type=_size("disk cap"),
        default=None,
        help="cap on what a run writes to /home/submission, code and logs, e.g. 50G (default: the agent's)",
    )
    p.add_argument(
        "--gpus",
        type=_count(0, "number of GPUs"),
        default=None,
        help="GPUs per run; each run gets its own (default: the agent's, else 0)",
    )
    p.add_argument(
        "--run-group",
        default="default",
        help="name of this batch of runs; a rerun skips its finished runs and refuses other settings",
    )
    p.add_argument(
        "--redo",
        choices=["failed", "all"],
        default=None,
        help="run again the group's runs without a valid submission (failed), or every run (all, also to change "
        "the group's settings); each new run replaces the old one",
    )
    p.add_argument("--runs-dir", default="runs", help="where run folders and the index live")
    p.add_argument("--data-dir", default=None, help="prepared data (default: $PODIUM_DATA_DIR or the user cache dir)")
    _latest_flag(p)
    p.set_defaults(fn=cmd_run)

    p = sub.add_parser("prepare", help="prepare competitions: Kaggle files -> public/ and private/")
    which = p.add_mutually_exclusive_group()
    which.add_argument(
        "-c", "--competition", action="append", help="competition id (repeatable), optionally id@VERSION"
    )
    which.add_argument(
        "--split", help="every competition of a split (low/lite, medium, high, split75, dev, systemcard)"
    )
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
    p.add_argument("--keep-raw", action="store_true", help="keep raw/ after a successful prepare")
    p.add_argument("--force", action="store_true", help="prepare again even if prepared")
    p.add_argument("--obfuscated", action="store_true", help="give the agent the description that names no competition")
    _latest_flag(p)
    p.set_defaults(fn=cmd_prepare)

    p = sub.add_parser("verify", help="check prepared data against its recorded checksums")
    which = p.add_mutually_exclusive_group()
    which.add_argument("-c", "--competition", action="append", help="competition id (repeatable)")
    which.add_argument("--split", help="every competition of a split")
    p.add_argument("--data-dir", default=None)
    _latest_flag(p)
    p.set_defaults(fn=cmd_verify)

    p = sub.add_parser(
        "example", help="grade generated example submissions for every competition of a split (offline, no data needed)"
    )
    p.add_argument("--split", default="lite")
    p.add_argument("--output-dir", default=None, help="keep the generated data and reports here")
    _latest_flag(p)
    p.set_defaults(fn=cmd_example)

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
        help="only this split: low (lite), medium, high, all (= split75), dev, practice, or a .txt file of ids "
        "(default: low, medium, high and all, plus dev/practice when run)",
    )
    p.add_argument(
        "--pad-missing", action="store_true", help="count missing runs as failures instead of keeping complete seeds"
    )
    p.add_argument("--seeds", type=int, default=-1, metavar="N", help="use the first N seeds (default: -1, every seed)")
    p.add_argument("--format", default="text", choices=["text", "md", "json"], help="output format (default: text)")
    p.add_argument("--output", default=None, metavar="FILE", help="write to FILE instead of standard output")
    p.add_argument(
        "--label",
        action="append",
        metavar="NAME",
        help="the label of the rows: once for all PATHs (pooled, read in sorted path order) or once per PATH",
    )
    p.set_defaults(fn=cmd_report)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one podium command; returns its exit status (see the module docstring)."""
    try:
        try:
            code = _main(sys.argv[1:] if argv is None else argv)
        except SystemExit as exit_:  # argparse: --help, --version, a usage error
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else EXIT_USAGE)
        sys.stdout.flush()
        return code
    except BrokenPipeError:  # the reader went away (podium list | head): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def _main(argv: Sequence[str]) -> int:
    try:
        args = _parser().parse_args(_join_values(argv))
        code: int = args.fn(args)
        return code
    except PodiumError as exc:
        print(f"podium: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("\npodium: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        raise
    except Exception:
        traceback.print_exc()
        print(
            "podium: internal error: the traceback above is a bug in podium, not a problem with your input; "
            "please report it with the command you ran",
            file=sys.stderr,
        )
        return EXIT_BUG


if __name__ == "__main__":
    raise SystemExit(main())
