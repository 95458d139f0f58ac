"""HMS: group split of train.csv by spectrogram_id (10% of the unique ids, random_state 0).

Facts: train_test_split(train.csv's unique spectrogram_ids in order of appearance,
test_size=0.1, random_state=0); every label row follows its spectrogram (eeg_ids end up disjoint,
asserted). Public: train.csv (15 columns), test.csv (spectrogram_id, eeg_id, patient_id; one row
per hidden label row), train_eegs/ + test_eegs/ ({eeg_id}.parquet), train_spectrograms/ +
test_spectrograms/ ({spectrogram_id}.parquet), example_figures/, sample_submission.csv (eeg_id and
1/6 per vote column); private test.csv (the 15 columns, raw vote counts) and gold_submission.csv
(eeg_id, votes normalised per row).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

VOTES = ("seizure_vote", "lpd_vote", "gpd_vote", "lrda_vote", "grda_vote", "other_vote")


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    import pandas as pd
    from sklearn.model_selection import train_test_split

    table = pd.read_csv(raw / "train.csv")
    _, test_spectrograms = train_test_split(table["spectrogram_id"].unique(), test_size=0.1, random_state=0)
    in_test = table["spectrogram_id"].isin(set(test_spectrograms))
    train, test = table[~in_test], table[in_test]
    train.to_csv(public / "train.csv", index=False)
    test[["spectrogram_id", "eeg_id", "patient_id"]].to_csv(public / "test.csv", index=False)
    test.to_csv(private / "test.csv", index=False)
    votes = test[list(VOTES)].to_numpy(dtype=float)
    shares = votes / votes.sum(axis=1, keepdims=True)
    gold = pd.DataFrame({"eeg_id": test["eeg_id"].to_numpy(), **{v: shares[:, j] for j, v in enumerate(VOTES)}})
    gold.to_csv(private / "gold_submission.csv", index=False)
    sample = pd.DataFrame({"eeg_id": test["eeg_id"].to_numpy(), **{v: np.full(len(test), 1 / 6) for v in VOTES}})
    sample.to_csv(public / "sample_submission.csv", index=False)
    for split, frame in (("train", train), ("test", test)):
        for kind, column in (("eegs", "eeg_id"), ("spectrograms", "spectrogram_id")):
            (public / f"{split}_{kind}").mkdir()
            for item in frame[column].unique():
                shutil.copyfile(
                    raw / f"train_{kind}" / f"{item}.parquet", public / f"{split}_{kind}" / f"{item}.parquet"
                )
    shutil.copytree(raw / "example_figures", public / "example_figures")

    assert not set(train["spectrogram_id"]) & set(test["spectrogram_id"])
    assert not set(train["eeg_id"]) & set(test["eeg_id"]), "an eeg_id spans train and test"
    assert len(train) + len(test) == len(table)
    assert sample["eeg_id"].tolist() == test["eeg_id"].tolist()


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """train.csv (12 spectrograms, 1-2 EEGs each, 1-3 label rows per EEG), tiny parquet signals, a figure."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = []
    label_id = 0
    for s in range(12):
        spectrogram_id = 353733 + 1000 * s
        patient_id = 20000 + s // 2
        for e in range(int(rng.integers(1, 3))):
            eeg_id = 568657 + 1000 * s + e
            for sub in range(int(rng.integers(1, 4))):
                votes = rng.integers(0, 4, len(VOTES))
                votes[int(rng.integers(len(VOTES)))] += 1
                consensus = ["Seizure", "LPD", "GPD", "LRDA", "GRDA", "Other"][int(np.argmax(votes))]
                rows.append(
                    (eeg_id, sub, 2.0 * sub, spectrogram_id, sub, 2.0 * sub, label_id, patient_id, consensus, *votes)
                )
                label_id += 1
    columns = [
        "eeg_id",
        "eeg_sub_id",
        "eeg_label_offset_seconds",
        "spectrogram_id",
        "spectrogram_sub_id",
        "spectrogram_label_offset_seconds",
        "label_id",
        "patient_id",
        "expert_consensus",
        *VOTES,
    ]
    table = pd.DataFrame(rows, columns=columns)
    table.to_csv(raw / "train.csv", index=False)
    for kind in ("eegs", "spectrograms", "test_eegs", "test_spectrograms"):
        (raw / ("train_" + kind if not kind.startswith("test") else kind)).mkdir()
    for eeg_id in table["eeg_id"].unique():
        signal = {c: rng.normal(0, 30, 20).astype(np.float32) for c in ("Fp1", "F3", "C3", "P3", "O1", "EKG")}
        pq.write_table(pa.table(signal), raw / "train_eegs" / f"{eeg_id}.parquet")
    for spectrogram_id in table["spectrogram_id"].unique():
        spec = {"time": np.arange(1, 11, dtype=np.float32), "LL_0.59": rng.random(10).astype(np.float32)}
        pq.write_table(pa.table(spec), raw / "train_spectrograms" / f"{spectrogram_id}.parquet")
    (raw / "example_figures").mkdir()
    (raw / "example_figures" / "Seizure.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    pd.DataFrame({"eeg_id": [3911565], **{v: [1 / 6] for v in VOTES}}).to_csv(
        raw / "sample_submission.csv", index=False
    )
