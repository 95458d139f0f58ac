"""``podium audit``: its flags (added to the parser by :func:`add_audit_parser`) and :func:`cmd_audit`.

The command audits every run under its PATHs with :mod:`podium.audit`, writes each run's
``audit.json``, and prints one block per run (text) or one object per run (JSON). Its exit status is
0 whenever it ran, whatever it found; 2 for a usage error.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from podium.errors import UsageError

__all__ = ["add_audit_parser", "audit_json", "audit_text", "cmd_audit", "options_of"]


def add_audit_parser(sub: Any) -> argparse.ArgumentParser:
    """Add ``audit`` to the subcommands ``sub``; returns its parser (so further checks can add their flags)."""
    p: argparse.ArgumentParser = sub.add_parser(
        "audit",
        help="check runs for rule violations and test-signal integrity; writes RUN/audit.json (docs/auditing.md)",
        description="Run the audit's checks on every run under PATH (a run, a run group or a runs folder) and "
        "write each run's verdict and evidence to RUN/audit.json; the grade is never changed. Without --checks "
        "every check whose inputs are there runs, and a line says which were skipped and why. A rerun reuses "
        "what is cached by content hash. Exit status 0 when it ran, whatever it found.",
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
    return options


def cmd_audit(args: argparse.Namespace) -> int:
    from podium.audit import audit_paths
    from podium.paths import write_atomic

    audits = audit_paths(args.paths, _names(args.checks), options_of(args))
    text = audit_json(audits) if args.format == "json" else audit_text(audits)
    if args.output:
        write_atomic(Path(args.output), text, mode=0o644)
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    skipped = _skipped_line(audits)
    if skipped and (args.output or args.format == "json"):
        print(skipped, file=sys.stderr)
    return 0


def _run_name(run_dir: str) -> str:
    parts = Path(run_dir).parts
    return "/".join(parts[-3:])


def _skipped_line(audits: Sequence[Any]) -> str:
    counts = Counter((check, reason) for a in audits for check, reason in a.skipped.items())
    if not counts:
        return ""
    parts = [f"{check} on {n} run(s): {reason}" for (check, reason), n in sorted(counts.items())]
    return "skipped: " + "; ".join(parts)


def audit_text(audits: Sequence[Any]) -> str:
    """One block per run: its verdict, then each violation and note with its first evidence, and the integrity
    statement where it is not clean (or the run is the only one); then the counts."""
    lines: list[str] = []
    for audit in audits:
        lines.append(f"{_run_name(audit.run_dir)}: {audit.verdict}")
        for flag in audit.flags:
            if flag.check == "integrity" and not flag.violation:
                continue  # the statement: one line below
            where = ""
            if flag.evidence:
                e = flag.evidence[0]
                where = f" [{e.file}{f':{e.line}' if e.line else ''}: {e.fragment}]"
            lines.append(f"  {'VIOLATION' if flag.violation else 'note'} {flag.check}: {flag.reason}{where}")
        integrity = audit.result("integrity")
        if integrity is not None and (integrity.verdict != "clean" or len(audits) == 1):
            statement = "; ".join(f.reason for f in integrity.flags if not f.violation)
            lines.append(f"  integrity ({integrity.verdict}): {statement}")
    verdicts = Counter(a.verdict for a in audits)
    integrity_verdicts = Counter(r.verdict for a in audits if (r := a.result("integrity")) is not None)
    if integrity_verdicts and len(audits) > 1:
        counts = ", ".join(f"{integrity_verdicts[v]} {v}" for v in ("clean", "flagged", "unclear"))
        lines.append(f"integrity: {counts} (the statement of each run is in its audit.json and in podium report)")
    lines.append(
        f"{len(audits)} run(s): {verdicts['clean']} clean, {verdicts['flagged']} flagged, {verdicts['unclear']} unclear"
    )
    if skipped := _skipped_line(audits):
        lines.append(skipped)
    return "\n".join(lines) + "\n"


def audit_json(audits: Sequence[Any]) -> str:
    """One object per run: ``competition_id``, ``seed``, ``verdict``, ``flags`` (``{check, reason, violation,
    evidence}``), ``skipped`` and the folder."""
    rows = [
        {
            "run_dir": a.run_dir,
            "competition_id": a.competition_id,
            "seed": a.seed,
            "verdict": a.verdict,
            "flags": [f.to_json() for f in a.flags],
            "skipped": dict(a.skipped),
        }
        for a in audits
    ]
    return json.dumps(rows, indent=1) + "\n"
