"""What each ``podium`` command does: one function per command, which calls the package that does the
work and prints what it returns. Heavy modules are imported inside each command, so ``grade-sample``
loads only what its competition's metric needs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from podium.cli.exits import (
    EXIT_BROKEN_PIPE,
    EXIT_BUG,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_NOTHING_CHECKED,
    EXIT_USAGE,
)
from podium.cli.listing import cmd_list, cmd_show
from podium.cli.outputs import output_dir, output_file
from podium.cli.printing import print_json as _print_json
from podium.cli.printing import table as _table
from podium.cli.running import cmd_run
from podium.errors import UsageError
from podium.untrusted import printable

if TYPE_CHECKING:
    pass

__all__ = [
    "EXIT_BROKEN_PIPE",
    "EXIT_BUG",
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_USAGE",
    "cmd_env_build",
    "cmd_env_list",
    "cmd_env_rm",
    "cmd_example",
    "cmd_grade",
    "cmd_grade_sample",
    "cmd_list",
    "cmd_prepare",
    "cmd_report",
    "cmd_run",
    "cmd_serve",
    "cmd_show",
    "cmd_validate",
    "cmd_verify",
    "write_output",
]


def cmd_grade_sample(args: argparse.Namespace) -> int:
    from podium import registry
    from podium.grading import grade

    report = grade(registry.get(args.id, latest=args.latest), args.submission, args.data_dir)
    _print_json(report.to_dict())
    return 0 if report.valid_submission else 1


def cmd_validate(args: argparse.Namespace) -> int:
    from podium import registry
    from podium.grading import validate
    from podium.paths import CompetitionPaths, default_data_dir

    comp = registry.get(args.id, latest=args.latest)
    data_dir = Path(args.data_dir) if args.data_dir else default_data_dir()
    sample = CompetitionPaths(data_dir, comp.id).prepared / comp.sample_submission
    if not sample.is_file():
        raise UsageError(
            f"{comp.id} is not prepared in {printable(str(data_dir))} (no {comp.sample_submission}): run podium "
            f"prepare -c {comp.id}, or pass --data-dir where it is prepared (or set PODIUM_DATA_DIR)"
        )
    result = validate(comp, args.submission, sample)
    _print_json(result.to_dict())
    return 0 if result.valid else 1


def cmd_grade(args: argparse.Namespace) -> int:
    from podium.grading import grade_jsonl

    if Path(args.submission).is_dir():
        raise UsageError(
            f"--submission {printable(args.submission)} is a folder: give the JSONL file listing the submissions "
            '(one {"competition_id": ..., "submission_path": ...} per line)'
        )
    folder = output_dir(args.output_dir, "--output-dir")
    path = grade_jsonl(Path(args.submission), folder, args.data_dir, latest=args.latest)
    print(f"wrote {path}")
    return 0


def _selected(args: argparse.Namespace) -> list[str]:
    from podium import registry

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
    raise UsageError("name what to prepare: -c ID (repeatable), --split NAME, --all or --list FILE")


def _prepared_refs(args: argparse.Namespace) -> list[str] | None:
    """The competitions prepare names (None: --from-mlebench's folder's, or none named), those whose deadline is
    after ``--ended-after`` with it (alone: of every registered competition, or of what --from-mlebench holds)."""
    from podium import registry

    named = args.competition or args.split or args.all or args.list
    refs = _selected(args) if named else None
    if args.ended_after is None:
        return refs
    if refs is None and args.from_mlebench is not None and Path(args.from_mlebench).expanduser().is_dir():
        from podium.data.mlebench import competitions_in

        source = Path(args.from_mlebench).expanduser()
        refs, base = list(competitions_in(source, registry.ids())), "--from-mlebench's folder"
    elif refs is None:
        refs, base = registry.ids(), "the registry"
    else:
        named_by = ((args.split, f"split {args.split}"), (args.all, "--all"), (args.list, f"--list {args.list}"))
        base = printable(next((words for given, words in named_by if given), "-c"))
    from podium.deadlines import select

    comps = [registry.get(ref, latest=args.latest) for ref in refs]
    chosen = select(comps, args.ended_after, base)
    print(f"podium: {chosen.sentence()}", file=sys.stderr)
    kept = set(chosen.ids)
    return [ref for ref, comp in zip(refs, comps, strict=True) if comp.id in kept]


def cmd_prepare(args: argparse.Namespace) -> int:
    from podium import registry
    from podium.data.prepare import needs_download, prepare_many
    from podium.paths import default_data_dir

    data_dir = Path(args.data_dir) if args.data_dir else default_data_dir()
    refs = _prepared_refs(args)
    if args.from_mlebench is not None:
        from podium.cli.mlebench import prepare_from_mlebench

        return prepare_from_mlebench(args, data_dir, refs)
    comps = [registry.get(ref, latest=args.latest) for ref in refs or _selected(args)]
    source = Path(args.source) if args.source else None
    if source is not None and not source.exists():
        raise UsageError(
            f"--from {printable(args.source)}: no such file or folder; give the competition's Kaggle zip or a folder "
            "of raw files (or of <id>.zip / <id>/ for several competitions)"
        )
    download = None
    if source is None:
        from podium.data import kaggle

        missing = needs_download(comps, data_dir, force=args.force)
        if missing:
            pending = kaggle.preflight([c.id for c in missing])
            if pending:
                print(kaggle.rules_message(pending), file=sys.stderr)
                return EXIT_USAGE
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
    from podium import registry
    from podium.data.verify import verify
    from podium.paths import default_data_dir

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
    if any(r.status == "mismatch" for r in results):
        return EXIT_FAILED
    if not any(r.status == "ok" for r in results):
        print(
            f"nothing verified: no competition asked for is prepared in {printable(str(data_dir))}; "
            "run podium prepare first (or pass --data-dir where the data is)",
            file=sys.stderr,
        )
        return EXIT_NOTHING_CHECKED
    return 0


def cmd_example(args: argparse.Namespace) -> int:
    from podium.example import run_example

    folder = output_dir(args.output_dir, "--output-dir") if args.output_dir else None
    return run_example(args.split, folder, latest=args.latest)


def cmd_report(args: argparse.Namespace) -> int:
    from podium.paths import default_data_dir, write_atomic
    from podium.report import build_report, load_inputs, render
    from podium.report.training import training_roots

    fmt = args.format
    if fmt is None:
        suffix = Path(args.output).suffix.lower().lstrip(".") if args.output else ""
        fmt = {"htm": "html", "markdown": "md", "txt": "text"}.get(suffix, suffix)
        fmt = fmt if fmt in ("text", "md", "json", "csv", "html") else "text"
    if fmt == "html" and not args.output:
        raise UsageError("--format html writes one file: name it with --output FILE.html")
    if args.output:
        output_file(args.output, "--output")
    if args.hours and not args.time_scaling:
        raise UsageError("--hours sets the time points of --time-scaling: pass --time-scaling too")
    by = [part.strip() for part in args.by.split(",") if part.strip()] if args.by else []
    inputs = load_inputs(args.paths, args.label or (), by)
    data_dir = Path(args.data_dir) if args.data_dir else default_data_dir()
    report = build_report(
        inputs,
        split=args.split,
        seeds=args.seeds,
        pad_missing=args.pad_missing,
        compare=args.compare or (),
        time_scaling=data_dir if args.time_scaling else None,
        hours=args.hours,
        familiarity=Path(args.familiarity) if args.familiarity else None,
        mixed_hardware=args.mixed_hardware,
        training_roots=training_roots(args.paths, args.training_runs),
        ended_after=args.ended_after,
    )
    links_from = str(Path(args.output).resolve().parent) if args.output else None
    if fmt == "html":  # written as it is made: the page of 10,000 runs never sits in memory whole
        from podium.report.html import html_pieces

        write_atomic(Path(args.output), html_pieces(report, links_from=links_from), mode=0o644)
        print(f"wrote {args.output}", file=sys.stderr)
        return 0
    write_output(render(report, fmt, links_from=links_from), args.output)
    return 0


def write_output(text: str, output: str | None) -> None:
    """``text`` to the file ``output`` (atomically, readable by all; a line on stderr says so), else to stdout."""
    from podium.paths import write_atomic

    if output:
        write_atomic(Path(output), text, mode=0o644)
        print(f"wrote {output}", file=sys.stderr)
    else:
        sys.stdout.write(text)


def cmd_serve(args: argparse.Namespace) -> int:
    import importlib

    for name in ("starlette", "uvicorn", "jinja2"):
        try:
            importlib.import_module(name)
        except ImportError:
            raise UsageError(
                f"podium serve needs {name}, which is not installed: pip install 'podium[serve]'"
            ) from None
    from podium.serve import serve

    return serve(Path(args.runs_dir), args.host, args.port, args.token)


def cmd_env_build(args: argparse.Namespace) -> int:
    from podium.environments import build, load_profile

    env = build(load_profile(args.profile, gpu=args.gpu, extra=args.requirement or ()), force=args.force)
    print(f"{env.name} {env.digest} {env.size_bytes / 2**20:.0f} MiB {env.path}")
    return 0


def cmd_env_list(args: argparse.Namespace) -> int:
    from podium.environments import env_root, list_environments

    envs = list_environments()
    if args.json:
        _print_json(
            [{**e.summary(), "path": str(e.path), "size_bytes": e.size_bytes, "lock": list(e.lock)} for e in envs]
        )
        return 0
    rows = [[e.name, e.digest, "yes" if e.gpu else "no", f"{e.size_bytes / 2**20:.0f} MiB", e.created_at] for e in envs]
    print(_table(rows, ["name", "digest", "gpu", "size", "built"]))
    print(f"\n{len(envs)} environment(s) in {env_root()}")
    return 0


def cmd_env_rm(args: argparse.Namespace) -> int:
    from podium.environments import remove

    for name in args.names:
        for env in remove(name):
            print(f"removed {env.name} {env.digest} ({env.path})")
    return 0
