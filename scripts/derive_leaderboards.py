"""Derive each competition's leaderboard figures from Kaggle private-leaderboard CSVs.

Usage: python scripts/derive_leaderboards.py [LEADERBOARD_DIR]   (default ../shared/competitions/leaderboards)

Writes ``src/podium/competitions/<id>/leaderboard.json`` for every registered competition whose
CSV exists: team count, gold/silver/bronze/median thresholds, 101 score quantiles and the latest
``submissionDate`` on the board (``last_submission``: the competition's deadline where its declaration
states none; docs/declaring.md, "Deadline"). The score direction comes from the competition's
declaration, never from the CSV's row order; a CSV whose order disagrees with it is reported. Rows
without a score are dropped, as are rows listed in the declaration's ``leaderboard_exclude_scores``
(e.g. placeholder scores).
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from podium import registry  # noqa: E402
from podium.leaderboard import Leaderboard  # noqa: E402


def read_board(path: Path) -> tuple[list[float], str | None]:
    """The CSV's scores in file order, and its latest submission date as written (None where it has none)."""
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    dates = [r["submissionDate"].strip() for r in rows if (r.get("submissionDate") or "").strip()]
    return [float(r["score"]) for r in rows if r.get("score") not in (None, "")], max(dates, default=None)


def main(argv: list[str]) -> int:
    source = Path(argv[1]) if len(argv) > 1 else ROOT.parent / "shared" / "competitions" / "leaderboards"
    if not source.is_dir():
        print(
            f"error: leaderboard folder {source} does not exist; pass the folder holding <id>.csv files",
            file=sys.stderr,
        )
        return 2
    written = missing = 0
    for cid in registry.ids():
        path = source / f"{cid}.csv"
        if not path.exists():
            existing = registry.COMPETITIONS_DIR / cid / "leaderboard.json"
            if existing.exists():
                print(
                    f"{cid}: no leaderboard CSV; keeping its {json.loads(existing.read_text())['source']} leaderboard"
                )
                continue
            print(f"{cid}: no leaderboard CSV; medals will be reported as unavailable")
            missing += 1
            continue
        declared = registry._read_declaration(cid)
        higher = bool(declared["metric"]["higher_is_better"])
        excluded = {float(x) for x in declared.get("leaderboard_exclude_scores") or ()}
        all_scores, last_submission = read_board(path)
        scores = [s for s in all_scores if s not in excluded]
        if len(scores) >= 2 and (scores[0] > scores[-1]) != higher and scores[0] != scores[-1]:
            print(f"{cid}: warning: CSV order suggests the other direction; using the declared one")
        board = Leaderboard.from_scores(scores, higher_is_better=higher, last_submission=last_submission)
        out = registry.COMPETITIONS_DIR / cid / "leaderboard.json"
        out.write_text(json.dumps(board.to_dict(), indent=1) + "\n", encoding="utf-8")
        written += 1
    print(f"wrote {written} leaderboard.json file(s); {missing} competition(s) without a leaderboard")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
