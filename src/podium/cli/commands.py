"""What each ``podium`` command does: one function per command, which calls the package that does the
work and prints what it returns. Heavy modules are imported inside each command, so ``grade-sample``
loads only what its competition's metric needs."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from podium.errors import UsageError

if TYPE_CHECKING:
    from podium.agents import AgentSpec
    from podium.run import Batch, RunConfig

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
]

EXIT_FAILED, EXIT_USAGE, EXIT_BUG, EXIT_INTERRUPTED, EXIT_BROKEN_PIPE = 1, 2, 70, 130, 141


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, default=str))  # -inf scores print as -Infinity


def _table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=False)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(r, widths, strict=False)).rstrip() for r in [header, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def cmd_list(args: argparse.Namespace) -> int:
    from podium import registry

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
    from podium import registry

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
    result = validate(comp, args.submission, CompetitionPaths(data_dir, comp.id).prepared / comp.sample_submission)
    _print_json(result.to_dict())
    return 0 if result.valid else 1


def cmd_grade(args: argparse.Namespace) -> int:
    from podium.grading import grade_jsonl

    path = grade_jsonl(Path(args.submission), Path(args.output_dir), args.data_dir, latest=args.latest)
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


def cmd_prepare(args: argparse.Namespace) -> int:
    from podium import registry
    from podium.data.prepare import needs_download, prepare_many
    from podium.paths import default_data_dir

    comps = [registry.get(ref, latest=args.latest) for ref in _selected(args)]
    data_dir = Path(args.data_dir) if args.data_dir else default_data_dir()
    source = Path(args.source) if args.source else None
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
    return 1 if any(r.status == "mismatch" for r in results) else 0


def cmd_run(args: argparse.Namespace) -> int:
    from podium import registry
    from podium.data.prepare import prepare_offline
    from podium.paths import default_data_dir
    from podium.run import run_batch

    refs = args.competitions.split(",") if args.competitions else registry.split_ids(args.split)
    comps = [registry.get(ref.strip(), latest=args.latest) for ref in refs if ref.strip()]
    if not comps:
        raise UsageError(f"--competitions {args.competitions!r} names no competition. Fix: give ids like a,b")
    data_dir = Path(args.data_dir) if args.data_dir else default_data_dir()
    agents = [_agent(args, name) for name in (args.agent or ["baseline"])]
    groups = _groups(args.run_group, [a.name for a in agents])
    prepare_offline(comps, data_dir)
    status = 0
    for agent, group in zip(agents, groups, strict=True):
        if len(agents) > 1:
            print(f"== agent {agent.name}: run group {group} ==", flush=True)
        config = _run_config(args, agent, group, data_dir)
        batch = run_batch(config, comps, redo=args.redo)
        status = max(status, _report_batch(config, batch))
        if batch.interrupted:
            return EXIT_INTERRUPTED
    if len(agents) > 1:
        _compare_groups(Path(args.runs_dir), groups)
    return status


def _agent(args: argparse.Namespace, name: str) -> AgentSpec:
    """The agent ``name`` with the command's model options applied."""
    from podium.agents import load_agent

    agent = load_agent(name)
    chosen = {"provider": args.provider, "model": args.model, "base_url": args.base_url, "max_cost_usd": args.max_cost}
    if any(v is not None for v in chosen.values()):
        from dataclasses import replace

        from podium.agents import LLMConfig

        llm = agent.llm.override(**chosen) if agent.llm is not None else LLMConfig.from_options(**chosen)
        agent = replace(agent, llm=llm)
    return agent


def _groups(run_group: str, names: list[str]) -> list[str]:
    """One run group per agent: the group itself for one agent, ``GROUP-NAME`` for each of several."""
    if len(names) == 1:
        return [run_group]
    if len(set(names)) != len(names):
        repeated = sorted({n for n in names if names.count(n) > 1})
        raise UsageError(f"--agent names {', '.join(repeated)} more than once; give each agent once")
    return [f"{run_group}-{name}" for name in names]


def _run_config(args: argparse.Namespace, agent: AgentSpec, group: str, data_dir: Path) -> RunConfig:
    from podium.run import RunConfig

    cpus = args.cpus if args.cpus is not None else agent.cpus
    here = len(os.sched_getaffinity(0))
    if cpus is not None and cpus > here:
        print(f"podium: warning: {cpus:g} CPUs per run, but this machine gives podium {here}", file=sys.stderr)
    return RunConfig(
        agent=agent,
        seeds=args.seeds,
        time_limit=args.time_limit,
        sandbox=args.sandbox,
        cpus=cpus,
        memory_bytes=args.memory if args.memory is not None else agent.memory_bytes,
        disk_bytes=args.disk if args.disk is not None else agent.disk_bytes,
        gpus=args.gpus if args.gpus is not None else (agent.gpus or 0),
        run_group=group,
        data_dir=data_dir,
        runs_dir=Path(args.runs_dir),
        workers=args.workers,
        env_profile=args.env,
    )


def _compare_groups(runs_dir: Path, groups: list[str]) -> None:
    """After a run of several agents: `podium report` over their groups (pass@k, the comparisons)."""
    from podium.report import build_report, load_inputs, render

    paths = [str(runs_dir / group) for group in groups]
    try:
        report = build_report(load_inputs(paths))
    except UsageError as exc:
        print(f"podium: no report across the agents: {exc}", file=sys.stderr)
        return
    print(render(report, "text"))
    print(f"the same, with every run and an HTML file: podium report {' '.join(paths)} --output report.html")


def _report_batch(config: RunConfig, batch: Batch) -> int:
    """Write and print the group's report (every run in the group); the exit status of the batch."""
    from podium.report.group import write_group_report
    from podium.run.outcome import agent_failures, no_submission_message

    json_path, md_path, rows = write_group_report(config.runs_dir, config.run_group)
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
        print(no_submission_message(agent_failures(mine), len(mine)), file=sys.stderr)
        return EXIT_FAILED
    return 0


def cmd_example(args: argparse.Namespace) -> int:
    from podium.grading import run_example

    return run_example(args.split, Path(args.output_dir) if args.output_dir else None, latest=args.latest)


def cmd_report(args: argparse.Namespace) -> int:
    from podium.paths import default_data_dir, write_atomic
    from podium.report import build_report, load_inputs, render

    fmt = args.format
    if fmt is None:
        suffix = Path(args.output).suffix.lower().lstrip(".") if args.output else ""
        fmt = {"htm": "html", "markdown": "md", "txt": "text"}.get(suffix, suffix)
        fmt = fmt if fmt in ("text", "md", "json", "csv", "html") else "text"
    if fmt == "html" and not args.output:
        raise UsageError("--format html writes one file: name it with --output FILE.html")
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
    )
    links_from = str(Path(args.output).resolve().parent) if args.output else None
    text = render(report, fmt, links_from=links_from)
    if args.output:
        write_atomic(Path(args.output), text, mode=0o644)
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


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
