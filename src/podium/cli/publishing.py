"""``podium export mlebench`` and ``podium bundle create|verify``: their flags (added by
:func:`add_publishing_parsers`) and what each prints. The work is :mod:`podium.publish`'s.

Exit status: 0 done (``bundle verify``: no difference); 1 ``bundle verify`` found differences (one line
each) or could not read the bundle on; 2 a usage error.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path
from typing import Any

from podium.cli import values
from podium.cli.exits import EXIT_FAILED
from podium.cli.outputs import output_dir, output_file
from podium.errors import UsageError
from podium.untrusted import printable

__all__ = ["add_publishing_parsers", "cmd_bundle_create", "cmd_bundle_verify", "cmd_export_mlebench"]

_DATA_HELP = "prepared data (default: $PODIUM_DATA_DIR or the user cache dir)"


def add_publishing_parsers(sub: Any) -> None:
    """Add ``export`` and ``bundle`` to the subcommands ``sub``."""
    p = sub.add_parser("export", help="write what a leaderboard pull request adds (docs/publishing.md)")
    formats = p.add_subparsers(dest="format", required=True, metavar="FORMAT")
    q = formats.add_parser(
        "mlebench",
        help="openai/mle-bench: grading reports per seed, the CSV rows, the README row, SUBMISSION.md",
        description="Write into DIR what a pull request to openai/mle-bench's leaderboard adds, from podium run "
        "groups, always from the version-1 grades: one run-group folder per seed with its grading report, the "
        "rows of runs/run_group_experiments.csv, the README's row (any medal as mean ± SEM, computed as "
        "experiments/aggregate_grading_reports.py computes it), the hardware line, .gitattributes and "
        "SUBMISSION.md. See docs/publishing.md.",
    )
    q.add_argument(
        "groups", nargs="+", metavar="GROUP", help="a run group folder (RUNS/<group>), or a group name in --runs-dir"
    )
    q.add_argument("--out", required=True, metavar="DIR", help="the folder to write (new, empty, or an earlier export)")
    q.add_argument(
        "--experiment-id",
        default=None,
        metavar="ID",
        help="the experiment id of the CSV rows (several agents: ID-<agent> each; default: podium-<agent>)",
    )
    q.add_argument(
        "--pad-missing", action="store_true", help="count missing runs as failures instead of keeping complete seeds"
    )
    q.add_argument(
        "--split",
        action="append",
        metavar="NAME",
        help=f"compute the row on this split (repeatable; {values.SPLIT_NAMES}, or a .txt file of ids; default: low, medium, high, "
        "all, and dev or practice when the runs cover them)",
    )
    q.add_argument("--runs-dir", default="runs", help="where a GROUP given by name lies")
    q.add_argument("--data-dir", default=None, help=f"{_DATA_HELP}; needed only for runs graded at a later version")
    q.set_defaults(fn=cmd_export_mlebench)

    p = sub.add_parser(
        "bundle", help="a verification bundle of run groups: create one, or verify one (docs/publishing.md)"
    )
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    q = actions.add_parser(
        "create",
        help="write run groups, their pages and a manifest into one tar.gz",
        description="Run the deterministic audit checks on every run of the GROUPs (cached results reused), then "
        "stream each run (record, submission and snapshots, code, logs, the model calls' transcript, the validation "
        "log, audit.json), each group's group.json, the environments' locks, the static HTML report with a page per "
        "run, and a manifest of sha256s into FILE, signed with --sign. Never the private answers or other prepared "
        "data, never a key.",
    )
    q.add_argument(
        "groups", nargs="+", metavar="GROUP", help="a run group folder (RUNS/<group>), or a group name in --runs-dir"
    )
    q.add_argument("-o", "--output", required=True, metavar="FILE", help="the bundle to write (.tar.gz)")
    q.add_argument("--runs-dir", default="runs", help="where a GROUP given by name lies")
    q.add_argument("--data-dir", default=None, help=f"{_DATA_HELP}; its checksums go into the manifest")
    q.add_argument(
        "--max-file-size",
        type=values.size("file size cap"),
        default="1G",
        help="leave out run files larger than this (listed in the manifest)",
    )
    q.add_argument(
        "--agent-dir",
        default=None,
        metavar="DIR",
        help="the agent folder of runs whose record does not name theirs (runs of an older podium)",
    )
    q.add_argument(
        "--sign",
        default=None,
        metavar="KEY",
        help="sign the manifest with this SSH key (ssh-keygen -Y sign), so a verifier can check who vouches for it",
    )
    q.set_defaults(fn=cmd_bundle_create)
    q = actions.add_parser(
        "verify",
        help="check a bundle: hashes, grades again, audit checks again; one line per difference",
        description="Check every file of FILE against its manifest, grade every submission again against your "
        "own prepared data at the version its record names, compare every field of each grade with the record's, "
        "and run the deterministic audit checks again; check every other field a report reads against the "
        "bundle's own evidence (the run's place, its group.json, its agent folder, llm_calls.jsonl, resources.jsonl), "
        "and show seeds whose files repeat another seed's. The runs are the record.json files unpacked, never the "
        "manifest's list. Judge and plagiarism verdicts are carried, not verified; index.html and pages/ are not "
        "verified. Prints one line per difference; exit 1 on any. (`podium verify` checks prepared data.)",
    )
    q.add_argument("bundle", metavar="FILE", help="a bundle written by podium bundle create")
    q.add_argument("--data-dir", default=None, help=f"{_DATA_HELP}: the answers the submissions are graded against")
    q.add_argument(
        "--max-size", type=values.size("unpacked size cap"), default="64G", help="refuse a bundle that unpacks to more"
    )
    q.add_argument(
        "--work-dir", default=None, metavar="DIR", help="where to unpack it (default: the system's temporary folder)"
    )
    q.add_argument("--max-files", type=int, default=20_000, metavar="N", help="refuse a bundle of more files")
    q.add_argument(
        "--extract",
        default=None,
        metavar="DIR",
        help="when it verifies, write the verified tree there (a new or empty folder; the pages and README are left "
        "out); unpacking with tar is not verification",
    )
    q.add_argument(
        "--expect-sha256", default=None, metavar="HASH", help="the bundle file's sha256 as published: refuse another"
    )
    q.add_argument(
        "--signer",
        default=None,
        metavar="ALLOWED_SIGNERS",
        help="require the manifest signed by a key this file lists (ssh-keygen's allowed signers: IDENTITY KEYTYPE KEY "
        "a line), and name who signed it",
    )
    q.set_defaults(fn=cmd_bundle_verify)


def _need(module: str, extra: str, what: str) -> None:
    try:
        importlib.import_module(module)
    except ImportError:
        raise UsageError(f"{what} needs {module}, which is not installed: pip install 'podium[{extra}]'") from None


def _folder(text: str | None) -> Path | None:
    return Path(text).expanduser() if text else None


def cmd_export_mlebench(args: argparse.Namespace) -> int:
    from podium.publish import export_mlebench
    from podium.publish.runs import group_paths

    out = output_dir(args.out, "--out")
    groups = group_paths(args.groups, Path(args.runs_dir))
    document = export_mlebench(
        groups,
        out,
        experiment_id=args.experiment_id,
        pad_missing=args.pad_missing,
        splits=args.split,
        data_dir=_folder(args.data_dir),
    )
    for agent, data in document["agents"].items():
        cells = []
        for key, numbers in data["published"].items():
            if "error" not in numbers:
                metric = numbers["metrics"]["any_medal_percentage"]
                cells.append(
                    f"{key} {metric['mean']:.2f} ± {metric['standard_error']:.2f} ({numbers['num_seeds_averaged']} seeds)"
                )
        print(
            f"{agent}: experiment {data['experiment_id']}, {len(data['run_groups'])} run-group folder(s); any medal: {'; '.join(cells) or 'no split covered'}"
        )
        if not data["integrity"]["backed"]:
            print(
                f"{agent}: the audit does not back the disclosure for every run; SUBMISSION.md says which",
                file=sys.stderr,
            )
    print(f"wrote {args.out}: LEADERBOARD.md holds the row and the next steps, SUBMISSION.md the disclosure")
    return 0


def cmd_bundle_create(args: argparse.Namespace) -> int:
    from podium.publish.bundle import create_bundle
    from podium.publish.runs import group_paths

    for module, extra in (("jinja2", "report"), ("matplotlib", "report"), ("starlette", "serve")):
        _need(module, extra, "podium bundle create")
    output = output_file(args.output, "-o/--output")
    groups = group_paths(args.groups, Path(args.runs_dir))
    summary = create_bundle(
        groups,
        output,
        data_dir=_folder(args.data_dir),
        max_file_size=args.max_file_size,
        agent_dir=_folder(args.agent_dir),
        sign=_folder(args.sign),
    )
    missing = summary["without_agent_folder"]
    if missing:
        print(
            f"note: {len(missing)} run(s) without their agent's folder (e.g. {missing[0]}): the audit could not find "
            "the folder that ran (the manifest says why; give it with --agent-dir)",
            file=sys.stderr,
        )
    print(
        f"wrote {summary['path']}: {summary['runs']} runs, {summary['files']} files, {summary['bytes']} bytes; "
        f"manifest sha256 {summary['manifest_sha256']}{'; signed' if summary['signed'] else ''}"
    )
    return 0


def cmd_bundle_verify(args: argparse.Namespace) -> int:
    from podium.publish.tarstream import ArchiveError
    from podium.publish.verify import verify_bundle

    if args.max_files < 1:
        raise UsageError(f"--max-files {args.max_files}: give a positive number of files")
    if Path(args.bundle).is_dir():
        raise UsageError(
            f"{printable(args.bundle)} is a folder: give the bundle file (.tar.gz) podium bundle create wrote"
        )
    extract = None
    if args.extract:  # the verified tree is written beside DIR, then renamed into place: both must be writable
        extract = output_dir(args.extract, "--extract")
        output_dir(extract.absolute().parent, "--extract")
    signers = _folder(args.signer)
    if signers is not None and not signers.exists():
        raise UsageError(f"--signer {printable(args.signer)}: no such file; give an allowed signers file")
    work_dir = None
    if args.work_dir:  # a missing folder is made, as for every folder podium writes in
        work_dir = output_dir(args.work_dir, "--work-dir")
        work_dir.mkdir(parents=True, exist_ok=True)
    try:
        differences, summary = verify_bundle(
            Path(args.bundle),
            data_dir=_folder(args.data_dir),
            max_size=args.max_size,
            max_files=args.max_files,
            work_dir=work_dir,
            extract=extract,
            expect_sha256=args.expect_sha256,
            signers=signers,
        )
    except ArchiveError as exc:
        print(f"podium: bundle {printable(args.bundle)} not verified: {exc}", file=sys.stderr)
        return EXIT_FAILED
    for line in differences:
        print(line)
    _notes(summary)
    digest = summary.get("manifest_sha256")
    named = f"; manifest sha256 {digest}" if digest else ""
    signature = summary.get("signature") or {}
    if signature.get("checked"):
        key = f" ({printable(signature['key'])})" if signature.get("key") else ""
        named += f"; signed by {printable(signature['signer'], 200)}{key}"
    if differences:
        print(
            f"{len(differences)} difference(s) in {summary['runs']} runs, {summary['files']} files{named}",
            file=sys.stderr,
        )
        return EXIT_FAILED
    print(f"verified: {summary['runs']} runs, {summary['files']} files, no difference{named}")
    if summary.get("extracted"):
        print(f"extracted the verified tree to {summary['extracted']}")
    return 0


def _notes(summary: dict[str, Any]) -> None:
    """What ``bundle verify`` did not check, one note line each, on standard error."""
    notes = []
    signature = summary.get("signature") or {}
    if summary.get("integrity_not_rerun"):
        notes.append(
            f"the integrity check was not run again on {summary['integrity_not_rerun']} run(s): the bundle does not "
            "carry their agent's folder (its manifest says why)"
        )
    carried = ", ".join(f"{name} on {count} run(s)" for name, count in (summary.get("carried") or {}).items() if count)
    if carried:
        notes.append(f"carried from the bundle, not verified: the verdicts of {carried}")
    if summary.get("holdout"):
        notes.append(
            f"not graded again: {summary['holdout']} holdout episode(s), graded against podium's re-split of the "
            "public train, which verify cannot rebuild yet; their scores are the bundle's word"
        )
    if summary.get("unverified"):
        notes.append(
            f"not verified: {', '.join(summary['unverified'])} (their hashes match the manifest, but they are not "
            "rebuilt from the verified runs; podium report on the extracted runs rebuilds them)"
        )
    if summary.get("bundles_word"):
        vouched = (
            f"; {printable(signature['signer'], 200)} signed it, vouching for them"
            if signature.get("checked")
            else "; a signed bundle (bundle create --sign, bundle verify --signer) says who vouches for them"
        )
        notes.append(
            f"taken on the bundle's word, with nothing in it to check them against: {summary['bundles_word']}{vouched}"
        )
    if signature.get("checked") is False:
        notes.append(
            f"signed with {printable(str(signature.get('key')))}, not checked against who may sign: give "
            "--signer ALLOWED_SIGNERS"
        )
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
