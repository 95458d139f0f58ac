"""``podium audit``: its flags (added to the parser by :func:`add_audit_parser`) and :func:`cmd_audit`.

The command audits every run under its PATHs with :mod:`podium.audit`, writes each run's
``audit.json``, and prints one block per run (text) or one object per run (JSON). Its exit status is
0 whenever it ran, whatever it found; 1 when a check could not run for a reason of the harness (one
line each on standard error; nothing of it cached); 2 for a usage error.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from podium.cli.outputs import output_file
from podium.errors import UsageError
from podium.untrusted import printable

__all__ = ["add_audit_parser", "audit_json", "audit_text", "cmd_audit", "harness_error_lines", "options_of"]


def add_audit_parser(sub: Any) -> argparse.ArgumentParser:
    """Add ``audit`` to the subcommands ``sub``; returns its parser (so further checks can add their flags)."""
    p: argparse.ArgumentParser = sub.add_parser(
        "audit",
        help="check runs for rule violations and test-signal integrity; writes RUN/audit.json (docs/auditing.md)",
        description="Run the audit's checks on every run under PATH (a run, a run group or a runs folder) and "
        "write each run's verdict and evidence to RUN/audit.json; the grade is never changed. Without --checks "
        "every check whose inputs are there runs, and a line says which were skipped and why. A rerun reuses "
        "what is cached by content hash (--redo runs the checks afresh). Exit status 0 when it ran, whatever it "
        "found; 1 when a check could not run for a reason of the harness (no API key, an unreachable model).",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="a run folder, a run group (RUNS/<group>) or a runs folder")
    p.add_argument(
        "--checks",
        default=None,
        metavar="LIST",
        help="comma-separated checks to run (default: every check whose inputs are there); see docs/auditing.md",
    )
    p.add_argument("--format", default="text", choices=["text", "json"], help="output format")
    p.add_argument("--output", default=None, metavar="FILE", help="write to FILE instead of standard output")
    p.add_argument("--data-dir", default=None, help="prepared data (default: $PODIUM_DATA_DIR or the user cache dir)")
    p.add_argument(
        "--agent-dir",
        default=None,
        metavar="DIR",
        help="the agent's folder, for the integrity check of a run whose agent is not built in",
    )
    p.add_argument(
        "--redo",
        action="store_true",
        help="run the checks asked for afresh: what audit.json cached for them is dropped (a check skipped now "
        "keeps no earlier result)",
    )
    p.set_defaults(fn=cmd_audit, audit_options=[])
    return p


def _names(text: str | None) -> list[str] | None:
    if text is None:
        return None
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise UsageError(f"--checks {text!r} names no check. Fix: a comma-separated list such as integrity,external")
    return names


def options_of(args: argparse.Namespace) -> dict[str, Any]:
    """The checks' options from the command's flags (``data_dir``, ``agent_dir``, and any a check added)."""
    options: dict[str, Any] = {}
    if args.data_dir:
        options["data_dir"] = args.data_dir
    if args.agent_dir:
        folder = Path(args.agent_dir).expanduser()
        if not folder.is_dir():
            raise UsageError(f"--agent-dir {args.agent_dir}: no such folder. Fix: give the agent's folder")
        options["agent_dir"] = str(folder)
    for key in args.audit_options:  # flags a check's own module added to the parser
        options[key] = getattr(args, key, None)
    kernels = options.get("kernels")
    if kernels and not Path(kernels).expanduser().is_dir():
        raise UsageError(
            f"--kernels {kernels}: no such folder. Fix: give a folder holding DIR/<competition>/*.py or *.ipynb, "
            "or leave --kernels out to use `podium kernels download`'s notebooks"
        )
    return options


def cmd_audit(args: argparse.Namespace) -> int:
    from podium.audit import audit_paths
    from podium.paths import write_atomic

    if args.output:
        output_file(args.output, "--output")
    audits = audit_paths(args.paths, _names(args.checks), options_of(args), redo=args.redo)
    text = audit_json(audits) if args.format == "json" else audit_text(audits)
    if args.output:
        write_atomic(Path(args.output), text, mode=0o644)
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    skipped = _skipped_line(audits)
    if skipped and (args.output or args.format == "json"):
        print(skipped, file=sys.stderr)
    errors = harness_error_lines(audits)
    for line in errors:
        print(line, file=sys.stderr)
    return 1 if errors else 0


def _run_name(run_dir: str) -> str:
    parts = Path(run_dir).parts
    return printable("/".join(parts[-3:]))


def _grouped(items: Sequence[tuple[str, str, str]]) -> list[tuple[str, str, int, list[str]]]:
    """(check, reason, runs, competitions) for (check, reason, competition) items, one per check and reason once
    each run's competition id is taken out of its reason (so seven runs of seven competitions make one clause)."""
    groups: dict[tuple[str, str], list[str]] = {}
    for check, reason, competition in items:
        shape = reason.replace(competition, "\0") if competition else reason
        groups.setdefault((check, shape), []).append(competition)
    out = []
    for (check, shape), competitions in sorted(groups.items()):
        distinct = sorted(set(competitions))
        reason = shape.replace("\0", distinct[0] if len(distinct) == 1 else "ID")
        out.append((check, printable(reason), len(competitions), distinct if "\0" in shape else []))
    return out


def _clause(check: str, reason: str, runs: int, competitions: list[str]) -> str:
    ids = ""
    if len(competitions) > 1:
        shown = ", ".join(printable(c) for c in competitions[:3])
        ids = f" (ID: {shown}{f' and {len(competitions) - 3} more' if len(competitions) > 3 else ''})"
    return f"{check} on {runs} run(s){ids}: {reason}"


def _skipped_line(audits: Sequence[Any]) -> str:
    """One line naming each check skipped, and why: runs whose reasons differ only by competition are one clause,
    and so are checks skipped for one reason on the same runs."""
    items = [(check, reason, a.competition_id) for a in audits for check, reason in a.skipped.items()]
    if not items:
        return ""
    merged: dict[tuple[str, int, tuple[str, ...]], list[str]] = {}
    for check, reason, runs, competitions in _grouped(items):
        merged.setdefault((reason, runs, tuple(competitions)), []).append(check)
    clauses = [_clause(", ".join(names), reason, runs, list(ids)) for (reason, runs, ids), names in merged.items()]
    return "skipped: " + "; ".join(clauses)


def harness_error_lines(audits: Sequence[Any]) -> list[str]:
    """One line per check that could not run for a reason of the harness (no API key, an unreachable model, a
    crashed Dolos), with the runs it left incomplete; none when every check ran or was skipped."""
    items = [(check, error, a.competition_id) for a in audits for check, error in a.harness_errors.items()]
    return [
        f"podium: harness error: {_clause(*group)} (not a verdict: nothing was cached, these runs are incomplete; "
        "fix the cause and audit again)"
        for group in _grouped(items)
    ]


def _evidence(flag: Any) -> str:
    if not flag.evidence:
        return ""
    e = flag.evidence[0]
    return f" [{printable(e.file)}{f':{e.line}' if e.line else ''}: {printable(e.fragment)}]"


def audit_text(audits: Sequence[Any]) -> str:
    """One block per run: its verdict, then each violation and note with its first evidence, and the integrity
    statement where it is not clean (or the run is the only one); then the counts. Every name and quote is
    escaped (:func:`podium.errors.printable`): what the agent left cannot move the cursor or start a line."""
    lines: list[str] = []
    for audit in audits:
        lines.append(f"{_run_name(audit.run_dir)}: {audit.summary}")
        for flag in audit.flags:
            if flag.check == "integrity" and not flag.violation:
                continue  # the statement: one line below
            kind = "VIOLATION" if flag.violation else "note"
            lines.append(f"  {kind} {printable(flag.check)}: {printable(flag.reason)}{_evidence(flag)}")
        integrity = audit.result("integrity")
        if integrity is not None and (integrity.verdict != "clean" or len(audits) == 1):
            statement = "; ".join(f.reason for f in integrity.flags if not f.violation)
            lines.append(f"  integrity ({integrity.verdict}): {printable(statement)}")
    verdicts = Counter(a.verdict for a in audits)
    integrity_verdicts = Counter(r.verdict for a in audits if (r := a.result("integrity")) is not None)
    if integrity_verdicts and len(audits) > 1:
        counts = ", ".join(f"{integrity_verdicts[v]} {v}" for v in ("clean", "flagged", "unclear"))
        lines.append(f"integrity: {counts} (the statement of each run is in its audit.json and in podium report)")
    lines.append(
        f"{len(audits)} run(s): {verdicts['clean']} clean, {verdicts['flagged']} flagged, {verdicts['unclear']} unclear, "
        f"{verdicts['incomplete']} incomplete"
    )
    if skipped := _skipped_line(audits):
        lines.append(skipped)
    return "\n".join(lines) + "\n"


def audit_json(audits: Sequence[Any]) -> str:
    """One object per run: ``competition_id``, ``seed``, ``verdict``, ``incomplete`` (the checks that apply but did
    not run), ``harness_errors``, ``flags`` (``{check, reason, figures, violation, evidence}``: every figure a
    reason states is a number in ``figures``), ``skipped`` and the folder."""
    rows = [
        {
            "run_dir": a.run_dir,
            "competition_id": a.competition_id,
            "seed": a.seed,
            "verdict": a.verdict,
            "incomplete": list(a.incomplete),
            "harness_errors": dict(a.harness_errors),
            "flags": [f.to_json() for f in a.flags],
            "skipped": dict(a.skipped),
        }
        for a in audits
    ]
    return json.dumps(rows, indent=1) + "\n"
