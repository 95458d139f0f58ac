"""`podium kernels download`: each competition's top public notebooks, for the plagiarism check."""

from __future__ import annotations

import argparse
from pathlib import Path

from podium.errors import UsageError

__all__ = ["cmd_kernels_download"]


def cmd_kernels_download(args: argparse.Namespace) -> int:
    from podium import registry
    from podium.cli.commands import _table
    from podium.data.kernels import download_kernels, import_kernels
    from podium.paths import default_data_dir

    if args.split:
        ids = registry.split_ids(args.split)
    elif args.competition:
        ids = [registry.get(ref).id for ref in args.competition]
    else:
        raise UsageError("name the competitions: -c ID (repeatable) or --split NAME")
    data_dir = Path(args.data_dir) if args.data_dir else default_data_dir()
    if args.source:
        outcomes = import_kernels(ids, data_dir, Path(args.source))
    else:
        outcomes = download_kernels(ids, data_dir, force=args.force)
    print(_table([[o.competition_id, o.detail] for o in outcomes], ["competition", "notebooks"]))
    total = sum(o.fetched + o.kept for o in outcomes)
    print(f"\n{total} notebooks of {len(outcomes)} competitions in {data_dir} (DIR/ID/kernels/)")
    return 0
