"""`podium run`: one run group per agent, each run in the sandbox, then the report of each group and, for
several agents, the comparison across them."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from podium.cli.exits import EXIT_FAILED
from podium.cli.outputs import output_dir
from podium.errors import UsageError

if TYPE_CHECKING:
    from podium.agents import AgentSpec
    from podium.cluster import ClusterSpec
    from podium.competition import Competition
    from podium.run import Batch, RunConfig
    from podium.sandbox import Hardware

__all__ = ["cmd_run"]


def cmd_run(args: argparse.Namespace) -> int:
    from podium import registry
    from podium.data.prepare import prepare_offline
    from podium.paths import default_data_dir
    from podium.run import run_batch

    if args.competitions is not None and not args.competitions.strip(", "):
        raise UsageError(f"--competitions {args.competitions!r} names no competition. Fix: give ids like a,b")
    split = args.split or ("practice" if args.ended_after is None else "all")
    refs = args.competitions.split(",") if args.competitions else registry.split_ids(split)
    comps = [registry.get(ref.strip(), latest=args.latest) for ref in refs if ref.strip()]
    if not comps:
        raise UsageError(f"--competitions {args.competitions!r} names no competition. Fix: give ids like a,b")
    data_dir = Path(args.data_dir) if args.data_dir else default_data_dir()
    agents = [_agent(args, name) for name in (args.agent or ["baseline"])]
    groups = _groups(args.run_group, [a.name for a in agents])
    comps, selections = _by_deadline(args, comps, "--competitions" if args.competitions else f"split {split}", groups)
    cluster = _cluster(args)
    hardware = _hardware(args)
    output_dir(args.runs_dir, "--runs-dir")
    for agent, group in zip(agents, groups, strict=True):  # refused before anything is prepared or said to run
        if agent.llm is not None and _runs_to_do(Path(args.runs_dir), group, comps, args.seeds, args.redo):
            agent.llm.check_prices()
            agent.llm.api_key()
    shared = _shared_compute(args, agents) if hardware is None else None
    prepare_offline(comps, data_dir)
    status = 0
    for agent, group in zip(agents, groups, strict=True):
        if len(agents) > 1:
            print(f"== agent {agent.name}: run group {group} ==", flush=True)
        config = _run_config(args, agent, group, data_dir, hardware, shared, ended_after=selections[group])
        if cluster is not None:
            from podium.cluster import run_cluster_batch

            batch = run_cluster_batch(config, comps, cluster, redo=args.redo)
        else:
            batch = run_batch(config, comps, redo=args.redo)
        status = max(status, _report_batch(config, batch))
        if batch.interrupted:
            return batch.exit_status
    if len(agents) > 1:
        named = args.competitions or args.ended_after is not None
        _compare_groups(Path(args.runs_dir), groups, [c.id for c in comps] if named else split)
    return status


def _by_deadline(
    args: argparse.Namespace, comps: list[Competition], base: str, groups: list[str]
) -> tuple[list[Competition], dict[str, dict[str, Any] | None]]:
    """The competitions to run and each group's ``group.json`` record of its selection (None without
    ``--ended-after``). A group made with the same cutoff keeps the competitions it recorded, whatever the
    registry selects today; a group made with another selection, or none, is refused before anything is done."""
    from podium import registry
    from podium.deadlines import RECORD_KEY, check_group, resume, select
    from podium.run.group import read

    selection = None
    if args.ended_after is not None:
        selection = select(comps, args.ended_after, base)
        print(f"podium: {selection.sentence()}", file=sys.stderr)
        comps = list(selection.selected)
    asked = selection.record() if selection is not None else None
    records: dict[str, dict[str, Any] | None] = {}
    kept: dict[str, list[str]] = {}
    for group in groups:
        document = read(Path(args.runs_dir) / group)
        check_group(document, asked, f"run group {group!r} (in {args.runs_dir})", used=document is not None)
        recorded = (document or {}).get(RECORD_KEY)
        records[group] = recorded if recorded is not None else asked
        if recorded is not None and selection is not None:
            kept[group], line = resume(recorded, selection, group)
            print(f"podium: {line}", file=sys.stderr)
    if len({tuple(ids) for ids in kept.values()}) > 1:
        raise UsageError(
            f"the run groups {', '.join(kept)} recorded different selections for --ended-after {args.ended_after}, "
            "and one command runs the same competitions for every agent. Fix: run each agent's group on its own"
        )
    if kept:  # a new group beside a resumed one runs, and records, the resumed one's selection
        resumed = next(iter(kept))
        comps = [registry.get(cid, latest=args.latest) for cid in kept[resumed]]
        records = {group: records[group if group in kept else resumed] for group in groups}
    return comps, records


def _runs_to_do(runs_dir: Path, group: str, comps: list[Competition], seeds: int, redo: str | None) -> bool:
    """Whether the command has runs to do in the group (a redo, or a pair without a run that counts), so that
    its model access must be there; a command that only reports a finished group needs none."""
    from podium.store import INDEX_NAME, RunStore

    if redo is not None or not (runs_dir / INDEX_NAME).is_file():
        return True
    done = {(r["competition_id"], r["seed"]) for r in RunStore(runs_dir).rows(group) if r["status"] != "harness_error"}
    return any((c.id, seed) not in done for c in comps for seed in range(seeds))


def _cluster(args: argparse.Namespace) -> ClusterSpec | None:
    """The Ray cluster of ``--cluster`` (with ``--ray-resource`` and ``--node-data-dir``), or None for local runs."""
    if args.cluster is None:
        if args.ray_resource or args.node_data_dir:
            raise UsageError("--ray-resource and --node-data-dir go with --cluster. Fix: add --cluster ray")
        return None
    from podium.cluster import ClusterSpec, connect, parse_cluster, parse_resource

    resources: dict[str, float] = {}
    for value in args.ray_resource or []:
        name, amount = parse_resource(value)
        resources[name] = resources.get(name, 0) + amount
    node_data = Path(args.node_data_dir) if args.node_data_dir else None
    spec = ClusterSpec(parse_cluster(args.cluster), resources, node_data)
    connect(spec.address)  # a wrong address is refused before anything is prepared
    return spec


def _agent(args: argparse.Namespace, name: str) -> AgentSpec:
    """The agent ``name`` with the command's model options applied."""
    from podium.agents import load_agent

    agent = load_agent(name)
    chosen = {
        "provider": args.provider,
        "model": args.model,
        "base_url": args.base_url,
        "max_cost_usd": args.max_cost,
        "max_answer_tokens": args.max_answer_tokens,
    }
    if any(v is not None for v in chosen.values()):
        from dataclasses import replace

        from podium.agents import LLMConfig

        llm = agent.llm.override(**chosen) if agent.llm is not None else LLMConfig.from_options(**chosen)
        agent = replace(agent, llm=llm)
    if agent.llm is not None:
        agent.llm.check_served(agent.name)
    return agent


def _groups(run_group: str, names: list[str]) -> list[str]:
    """One run group per agent: the group itself for one agent, ``GROUP-NAME`` for each of several."""
    from podium.run.group import check_name

    check_name(run_group)
    if len(names) == 1:
        return [run_group]
    if len(set(names)) != len(names):
        repeated = sorted({n for n in names if names.count(n) > 1})
        raise UsageError(f"--agent names {', '.join(repeated)} more than once; give each agent once")
    return [check_name(f"{run_group}-{name}") for name in names]


def _hardware(args: argparse.Namespace) -> Hardware | None:
    """The setting ``--hardware`` names, as this machine can give it (what it cannot is said on stderr); None
    without the flag. It replaces --cpus, --memory and --gpus, so naming them too is a usage error."""
    if args.hardware is None:
        return None
    from podium.sandbox import HARDWARE, shortfalls

    flags = (("--cpus", args.cpus), ("--memory", args.memory), ("--gpus", args.gpus))
    named = [flag for flag, value in flags if value is not None]
    if named:
        raise UsageError(
            f"--hardware {args.hardware} sets the CPUs, memory and GPUs of each run, and so does {', '.join(named)}. "
            f"Fix: drop {' and '.join(named)}, or --hardware"
        )
    hardware, missing = shortfalls(HARDWARE[args.hardware])
    for line in missing:
        print(f"podium: warning: --hardware {args.hardware}: {line}", file=sys.stderr)
    if not missing:
        print(f"podium: --hardware {args.hardware}: this machine gives each run all of it", file=sys.stderr)
    return hardware


def _shared_compute(args: argparse.Namespace, agents: list[AgentSpec]) -> tuple[Any, Any, Any] | None:
    """Several agents in one command are compared in its report, which refuses runs of different compute: each
    limit the command leaves to the agents (--cpus, --memory, --gpus) is the largest any of them declares, said in
    one line when their declarations differ. None for one agent."""
    if len(agents) < 2:
        return None
    cpus = args.cpus if args.cpus is not None else _largest([a.cpus for a in agents])
    memory = args.memory if args.memory is not None else _largest([a.memory_bytes for a in agents])
    gpus = args.gpus if args.gpus is not None else max(a.gpus or 0 for a in agents)
    declared = {(a.cpus, a.memory_bytes, a.gpus or 0) for a in agents}
    unset = [
        flag
        for flag, value in (("--cpus", args.cpus), ("--memory", args.memory), ("--gpus", args.gpus))
        if value is None
    ]
    if len(declared) > 1 and unset:
        from podium.units import size_text

        given = f"{cpus:g} CPUs" if cpus is not None else "the machine's CPUs"
        given += f", {size_text(memory)}" if memory is not None else ", no memory cap"
        given += f", {gpus} GPU(s)" if gpus else ", no GPU"
        print(
            f"podium: the agents declare different resources; every run gets the same for a fair comparison: {given} "
            f"(the largest each declares; {', '.join(unset)} choose otherwise)",
            file=sys.stderr,
        )
    return cpus, memory, gpus


def _largest(values: list[Any]) -> Any:
    """The largest of the agents' declared limits, or None (no cap) when any of them declares none."""
    return None if any(v is None for v in values) else max(values)


def _run_config(
    args: argparse.Namespace,
    agent: AgentSpec,
    group: str,
    data_dir: Path,
    hardware: Hardware | None = None,
    shared: tuple[Any, Any, Any] | None = None,
    *,
    ended_after: dict[str, Any] | None = None,
) -> RunConfig:
    from podium.run import RunConfig

    cpus = args.cpus if args.cpus is not None else agent.cpus
    memory = args.memory if args.memory is not None else agent.memory_bytes
    gpus = args.gpus if args.gpus is not None else (agent.gpus or 0)
    if shared is not None:
        cpus, memory, gpus = shared
    if hardware is not None:
        cpus, memory, gpus = hardware.cpus, hardware.memory_bytes, hardware.gpus
    here = len(os.sched_getaffinity(0))
    if cpus is not None and cpus > here and hardware is None:
        print(f"podium: warning: {cpus:g} CPUs per run, but this machine gives podium {here}", file=sys.stderr)
    return RunConfig(
        agent=agent,
        seeds=args.seeds,
        time_limit=args.time_limit,
        sandbox=args.sandbox,
        cpus=cpus,
        memory_bytes=memory,
        disk_bytes=args.disk if args.disk is not None else agent.disk_bytes,
        gpus=gpus,
        run_group=group,
        data_dir=data_dir,
        runs_dir=Path(args.runs_dir),
        workers=args.workers,
        env_profile=args.env,
        ended_after=ended_after,
    )


def _compare_groups(runs_dir: Path, groups: list[str], split: str | list[str]) -> None:
    """After a run of several agents: `podium report` over their groups (pass@k, the comparisons) on what
    they ran: the split, or the competitions named (as a split file, ``competitions.txt``)."""
    import tempfile

    from podium.report import build_report, load_inputs, render

    paths = [str(runs_dir / group) for group in groups]
    with tempfile.TemporaryDirectory() as folder:
        if isinstance(split, list):
            listed = Path(folder) / "competitions.txt"
            listed.write_text("\n".join(split) + "\n", encoding="utf-8")
            split = str(listed)
        try:
            report = build_report(load_inputs(paths), split=split)
        except UsageError as exc:
            print(f"podium: no report across the agents: {exc}", file=sys.stderr)
            return
    print(render(report, "text"))
    named = f" --split {split}" if not split.endswith(".txt") else ""
    print(f"the same, with every run and an HTML file: podium report {' '.join(paths)}{named} --output report.html")


def _report_batch(config: RunConfig, batch: Batch) -> int:
    """Write and print the group's report (every run in the group); the exit status of the batch."""
    from podium.report.group import write_group_report
    from podium.run.outcome import agent_failures, no_submission_message

    json_path, md_path, rows = write_group_report(config.runs_dir, config.run_group)
    print(md_path.read_text(encoding="utf-8"))
    print(f"report: {md_path} and {json_path}")
    if batch.interrupted:
        print("interrupted; rerun the same command to resume", file=sys.stderr)
        return batch.exit_status
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
