"""Prepare nfl-player-contact-detection (facts: split, public, private, sample_submission).

Group split by play: ``train_test_split(train_labels.game_play.unique(), test_size=0.1,
random_state=0)``; train_labels, baseline helmets, player tracking and video metadata are each
filtered by game_play into train_* / test_* files (labels of the test plays go to private/test.csv
only); the three camera videos of each play go to train/ or test/. Sample contact = 0.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

TEST_SIZE = 0.1
VIEWS = ("All29", "Endzone", "Sideline")
TABLES = ("baseline_helmets", "player_tracking", "video_metadata")


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Split the plays 90/10 and filter every table and video by play."""
    import pandas as pd
    from sklearn.model_selection import train_test_split

    def read(name: str) -> pd.DataFrame:
        return pd.read_csv(raw / name, dtype=str, keep_default_na=False)

    labels = read("train_labels.csv")
    plays = np.asarray(labels["game_play"].unique(), dtype=object)  # order of first appearance
    train_plays, test_plays = train_test_split(plays, test_size=TEST_SIZE, random_state=0)
    train = labels[labels["game_play"].isin(train_plays)]
    test = labels[labels["game_play"].isin(test_plays)]
    train.to_csv(public / "train_labels.csv", index=False)
    test.to_csv(private / "test.csv", index=False)
    for table in TABLES:
        frame = read(f"train_{table}.csv")
        frame[frame["game_play"].isin(train_plays)].to_csv(public / f"train_{table}.csv", index=False)
        frame[frame["game_play"].isin(test_plays)].to_csv(public / f"test_{table}.csv", index=False)
    for frame, folder in ((train, "train"), (test, "test")):
        (public / folder).mkdir()
        for view in VIEWS:
            for play in frame["game_play"].unique():
                name = f"{play}_{view}.mp4"
                shutil.copyfile(raw / "train" / name, public / folder / name)
    sample = pd.DataFrame({"contact_id": test["contact_id"], "contact": 0})
    sample.to_csv(public / "sample_submission.csv", index=False)

    assert set(train["game_play"]).isdisjoint(test["game_play"]) and len(train) + len(test) == len(labels)
    assert set(train["contact_id"]).isdisjoint(test["contact_id"])
    assert sample["contact_id"].tolist() == test["contact_id"].tolist()
    assert len(list((public / "test").glob("*.mp4"))) == 3 * test["game_play"].nunique()


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """20 plays with 4 contact rows each (both classes per play), the three tables, 3 tiny videos per play."""
    import pandas as pd

    (raw / "train").mkdir()
    labels, helmets, tracking, videos = [], [], [], []
    for g in range(20):
        play = f"58{100 + g:03d}_00{1000 + 37 * g:04d}"
        players = rng.choice(np.arange(37000, 48000), 3, replace=False).astype(str).tolist()
        for k, (step, p2) in enumerate([(0, players[1]), (0, "G"), (1, players[2]), (1, players[1])]):
            p1 = players[0]
            labels.append(
                {
                    "contact_id": f"{play}_{step}_{p1}_{p2}",
                    "game_play": play,
                    "datetime": f"2020-09-11T03:01:{48 + step}.100Z",
                    "step": step,
                    "nfl_player_id_1": p1,
                    "nfl_player_id_2": p2,
                    "contact": int(k % 2 == 0),
                }
            )
        for p in players:
            helmets.append(
                {
                    "game_play": play,
                    "game_key": play[:5],
                    "play_id": int(play[6:]),
                    "view": "Endzone",
                    "video": f"{play}_Endzone.mp4",
                    "frame": 1,
                    "nfl_player_id": p,
                    "player_label": f"H{p[-2:]}",
                    "left": int(rng.integers(0, 1200)),
                    "width": 20,
                    "top": int(rng.integers(0, 700)),
                    "height": 22,
                }
            )
            tracking.append(
                {
                    "game_play": play,
                    "game_key": play[:5],
                    "play_id": int(play[6:]),
                    "nfl_player_id": p,
                    "datetime": "2020-09-11T03:01:48.100Z",
                    "step": 0,
                    "team": "home",
                    "position": "WR",
                    "jersey_number": int(rng.integers(1, 99)),
                    "x_position": round(float(rng.uniform(0, 120)), 2),
                    "y_position": round(float(rng.uniform(0, 53)), 2),
                    "speed": 0.5,
                    "distance": 0.05,
                    "orientation": 90.1,
                    "direction": 180.2,
                    "acceleration": 0.3,
                    "sa": 0.2,
                }
            )
        for view in ("Endzone", "Sideline"):
            videos.append(
                {
                    "game_play": play,
                    "game_key": play[:5],
                    "play_id": int(play[6:]),
                    "view": view,
                    "start_time": "2020-09-11T03:01:43.134Z",
                    "end_time": "2020-09-11T03:01:54.971Z",
                    "snap_time": "2020-09-11T03:01:48.134Z",
                }
            )
        for view in VIEWS:
            (raw / "train" / f"{play}_{view}.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42" + rng.bytes(24))
    pd.DataFrame(labels).to_csv(raw / "train_labels.csv", index=False)
    pd.DataFrame(helmets).to_csv(raw / "train_baseline_helmets.csv", index=False)
    pd.DataFrame(tracking).to_csv(raw / "train_player_tracking.csv", index=False)
    pd.DataFrame(videos).to_csv(raw / "train_video_metadata.csv", index=False)
    (raw / "sample_submission.csv").write_text("contact_id,contact\n")
