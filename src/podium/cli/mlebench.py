"""`podium prepare --from-mlebench DIR`: the command's checks and its summary (the work is
:mod:`podium.data.mlebench`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from podium.errors import UsageError

__all__ = ["prepare_from_mlebench"]

#: The differences printed per competition (the rest are counted).
_SHOWN_DIFFERENCES = 20


def prepare_from_mlebench(args: argparse.Namespace, data_dir: Path, refs: list[str] | None) -> int:
    """Take each competition (``refs``; None: every one the folder holds) from the MLE-bench data dir; 0 when
    every one was taken or was already prepared, 1 otherwise."""
    from podium import registry
    from podium.data.mlebench import competitions_in, take_many

    source = Path(args.from_mlebench).expanduser()
    if args.source:
        raise UsageError("--from and --from-mlebench both name where the data comes from; give one of them")
    if args.keep_raw:
        raise UsageError(
            "--keep-raw: --from-mlebench takes prepared data and has no raw files to keep; drop --keep-raw"
        )
    if not source.is_dir():
        raise UsageError(
            f"--from-mlebench {source}: no such folder; give MLE-bench's data dir, which holds <id>/prepared/ "
            "(by default ~/.cache/mle-bench/data)"
        )
    if refs is None:
        refs = list(competitions_in(source, registry.ids()))
        if not refs:
            raise UsageError(
                f"--from-mlebench {source}: holds no <id>/prepared/ folder of a competition podium knows; give "
                "MLE-bench's data dir (by default ~/.cache/mle-bench/data), or name competitions with -c ID"
            )
    competitions = [registry.get(ref, latest=args.latest) for ref in refs]
    outcomes = take_many(competitions, source, data_dir, force=args.force, obfuscated=args.obfuscated)
    for outcome in outcomes:
        print(f"{outcome.competition_id}: {outcome.status}: {outcome.detail}")
        for problem in outcome.differed[:_SHOWN_DIFFERENCES]:
            print(f"    {problem}")
        if len(outcome.differed) > _SHOWN_DIFFERENCES:
            print(f"    and {len(outcome.differed) - _SHOWN_DIFFERENCES} more")
        if outcome.fix:
            print(f"    fix: {outcome.fix}")
    counts = {s: sum(o.status == s for o in outcomes) for s in ("taken", "skipped", "differs", "missing", "failed")}
    print(f"\n{', '.join(f'{n} {s}' for s, n in counts.items())} (from {source}; data in {data_dir})")
    return 0 if counts["taken"] + counts["skipped"] == len(outcomes) else 1
