"""The ``podium`` command line.

    podium list [--split NAME] [--json]
    podium show ID[@VERSION] [--json]
    podium grade-sample SUBMISSION.csv ID[@VERSION] [--data-dir DIR]
    podium validate SUBMISSION.csv ID[@VERSION] [--data-dir DIR]
    podium grade --submission RUNS.jsonl --output-dir DIR [--data-dir DIR]
    podium prepare -c ID | --split NAME | --all | --list FILE [--data-dir DIR] [--from PATH] [--keep-raw] [--force]
    podium verify [-c ID | --split NAME] [--data-dir DIR]
    podium run [--agent NAME|PATH] [--competitions ID,... | --split NAME] [--seeds N] [--time-limit 24h] ...
    podium example [--split NAME] [--output-dir DIR]
    podium report PATH... [--split NAME] [--pad-missing] [--seeds N] [--format text|md|json] [--output FILE]

Heavy modules are imported inside each command, so ``grade-sample`` loads only what its
competition's metric needs.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from podium.errors import PodiumError

__all__ = ["main"]


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


def _seconds(text: str) -> float:
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    value = text.strip().lower()
    try:
        return float(value[:-1]) * units[value[-1]] if value and value[-1] in units else float(value)
    except ValueError:
        raise PodiumError(f"cannot read the time limit {text!r}; write it like 24h, 90m or 3600") from None


def cmd_run(args: argparse.Namespace) -> int:
    from podium import competition as registry
    from podium.agents import load_agent, parse_size
    from podium.data.prepare import prepare_many
    from podium.grading import default_data_dir
    from podium.report import write_report
    from podium.run import RunConfig, run_all
    from podium.store import RunStore

    for flag, value, least in (("--seeds", args.seeds, 1), ("--workers", args.workers, 1), ("--gpus", args.gpus, 0)):
        if value < least:
            raise PodiumError(f"{flag} must be at least {least}, got {value}")
    refs = args.competitions.split(",") if args.competitions else registry.split_ids(args.split)
    comps = [registry.get(ref.strip(), latest=args.latest) for ref in refs if ref.strip()]
    data_dir = Path(args.data_dir) if args.data_dir else default_data_dir()
    agent = load_agent(args.agent)
    unprepared = [c for c in comps if not (data_dir / c.id / "prepared").is_dir()]
    offline = [
        c
        for c in unprepared
        if (c.folder / "prepare.py").is_file() and "def fetch_raw" in (c.folder / "prepare.py").read_text()
    ]
    if offline:
        print(f"preparing {len(offline)} offline competition(s) first ...", file=sys.stderr)
        for outcome in prepare_many(offline, data_dir):
            if outcome.status == "failed":
                raise PodiumError(f"could not prepare {outcome.competition_id}: {outcome.detail}")
    missing = [c.id for c in unprepared if c not in offline]
    if missing:
        raise PodiumError(
            f"not prepared: {', '.join(missing)}; run `podium prepare -c ID` for each (data dir {data_dir})"
        )
    config = RunConfig(
        agent=agent,
        seeds=args.seeds,
        time_limit=_seconds(args.time_limit),
        sandbox=args.sandbox,
        cpus=args.cpus if args.cpus is not None else agent.cpus,
        memory_bytes=parse_size(args.memory) if args.memory else agent.memory_bytes,
        disk_bytes=parse_size(args.disk) if args.disk else agent.disk_bytes,
        gpus=args.gpus,
        run_group=args.run_group,
        data_dir=data_dir,
        runs_dir=Path(args.runs_dir),
        workers=args.workers,
    )
    run_all(config, comps)
    store = RunStore(config.runs_dir)
    rows = [r for r in store.rows(config.run_group) if r["competition_id"] in {c.id for c in comps}]
    boards = {c.id: (c.leaderboard.source if c.leaderboard else "none") for c in comps}
    json_path, md_path = write_report(config.runs_dir / config.run_group, config.run_group, rows, boards)
    print(md_path.read_text(encoding="utf-8"))
    print(f"report: {md_path} and {json_path}")
    return 0


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


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="podium", description="Benchmark harness for ML-engineering agents.")
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
    p.add_argument("--seeds", type=int, default=1, help="runs per competition")
    p.add_argument("--time-limit", default="24h", help="wall-clock limit per run, e.g. 24h, 30m")
    p.add_argument("--workers", type=int, default=1, help="runs at once")
    p.add_argument(
        "--sandbox",
        default="bwrap",
        choices=["bwrap", "docker", "local"],
        help="isolation: bwrap (default), docker (a local engine, found through DOCKER_HOST), local (none: debugging)",
    )
    p.add_argument("--cpus", type=float, default=None, help="CPU cores per run (a CFS quota)")
    p.add_argument("--memory", default=None, help="memory cap per run, e.g. 16G")
    p.add_argument("--disk", default=None, help="cap on what a run writes to /home/submission, code and logs, e.g. 50G")
    p.add_argument("--gpus", type=int, default=0, help="GPUs per run; each run gets its own (default: 0)")
    p.add_argument("--run-group", default="default", help="name of this batch of runs (reruns skip finished ones)")
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
    args = _parser().parse_args(argv)
    try:
        code: int = args.fn(args)
        return code
    except PodiumError as exc:
        print(f"podium: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
