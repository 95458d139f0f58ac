"""Record the checksums of a competition's real prepared data as its reference (``checksums.json`` beside its
declaration), which ``podium verify`` and ``podium prepare --from-mlebench`` compare against.

    podium prepare -c ID --data-dir DIR          # from the real data (Kaggle, or the package's for practice)
    python scripts/reference_checksums.py --data-dir DIR ID [ID ...]

The checksums are those ``prepared/podium.json`` records, less ``public/description.md`` (podium's own
text), under the data version they were prepared for; other versions' entries are kept.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from podium import registry
from podium.data.checksums import without_description
from podium.paths import CompetitionPaths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", required=True, type=Path, help="where the competitions were prepared")
    parser.add_argument("ids", nargs="+", metavar="ID")
    args = parser.parse_args()
    for cid in args.ids:
        competition = registry.get(cid)
        record = CompetitionPaths(args.data_dir, competition.id).record()
        if record is None:
            raise SystemExit(f"{cid}: not prepared in {args.data_dir}; run podium prepare -c {cid} first")
        target = competition.folder / "checksums.json"
        known = json.loads(target.read_text(encoding="utf-8")) if target.is_file() else {}
        known[str(record["version"])] = without_description(record["checksums"])
        target.write_text(json.dumps(known, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"{target}: version {record['version']}, {len(known[str(record['version'])])} entries")


if __name__ == "__main__":
    main()
