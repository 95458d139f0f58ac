"""stanford-covid-vaccine: hold out high-quality labelled sequences as the test set.

Facts implemented: train.json (JSON lines, 2,400 sequences) gives ``int(0.1 * len(train))`` = 240
test sequences, drawn with ``DataFrame.sample(n, random_state=0)`` from the rows with SN_filter > 0;
every other row (low-quality ones included) stays in train. Both sides keep train.json's order
(the draw only picks the rows, as published). public/train.json and public/test.json are JSON lines
with ``index`` renumbered from 0; test.json keeps only the raw test.json's columns.
private/test.csv has one row per test position "{id}_{pos}" (pos < seq_length): the five targets
with 10 decimals where pos < seq_scored (keep=True), 0.0 elsewhere (keep=False). The sample
submission holds the same ids in the same order with 0.0000000000 everywhere. The raw bpps/ folder
is not copied.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

TARGETS = ("reactivity", "deg_Mg_pH10", "deg_pH10", "deg_Mg_50C", "deg_50C")


def _answers(test: Any) -> Any:
    import pandas as pd

    rows = []
    for record in test.itertuples(index=False):
        values = record._asdict()
        for pos in range(int(values["seq_length"])):
            scored = pos < int(values["seq_scored"])
            truth = [float(values[t][pos]) if scored else 0.0 for t in TARGETS]
            rows.append((f"{values['id']}_{pos}", *truth, scored))
    return pd.DataFrame(rows, columns=["id_seqpos", *TARGETS, "keep"])


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Write public/ and private/ from raw/ (the same split for every version)."""
    import pandas as pd

    train = pd.read_json(raw / "train.json", lines=True)
    with (raw / "test.json").open() as handle:
        test_columns = list(json.loads(handle.readline()))
    sample_columns = set(pd.read_csv(raw / "sample_submission.csv", nrows=0).columns)
    assert sample_columns == {"id_seqpos", *TARGETS}, sample_columns
    n_test = int(0.1 * len(train))
    drawn = train[train["SN_filter"] > 0].sample(n=n_test, random_state=0).index
    test = train[train.index.isin(drawn)]  # in train.json order, not in the order drawn
    new_train = train.drop(index=test.index)
    for frame, name, columns in ((new_train, "train.json", list(train.columns)), (test, "test.json", test_columns)):
        out = frame[columns].reset_index(drop=True)
        out["index"] = np.arange(len(out))
        out.to_json(public / name, orient="records", lines=True)
    answers = _answers(test)
    answers.to_csv(private / "test.csv", index=False, float_format="%.10f")
    sample = answers[["id_seqpos"]].assign(**dict.fromkeys(TARGETS, 0.0))
    sample.to_csv(public / "sample_submission.csv", index=False, float_format="%.10f")

    assert not set(new_train["id"]) & set(test["id"])
    assert len(new_train) + len(test) == len(train)
    assert len(answers) == int(test["seq_length"].sum())
    assert not set(TARGETS) & set(test_columns)


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """train.json with 40 short sequences (length 20, 12 scored; a third fail SN_filter), test.json, sample."""
    import pandas as pd

    length, scored = 20, 12
    rows = []
    for i in range(40):
        record: dict[str, object] = {
            "index": i,
            "id": f"id_{int(rng.integers(0, 2**36)):09x}",
            "sequence": "".join(rng.choice(list("ACGU"), length)),
            "structure": "".join(rng.choice(list("(.)"), length)),
            "predicted_loop_type": "".join(rng.choice(list("EHMSX"), length)),
            "signal_to_noise": round(float(rng.uniform(0, 10)), 3),
            "SN_filter": int(i % 3 != 0),
            "seq_length": length,
            "seq_scored": scored,
        }
        for name in ("reactivity_error", "deg_error_Mg_pH10", "deg_error_pH10", "deg_error_Mg_50C", "deg_error_50C"):
            record[name] = rng.uniform(0, 1, scored).round(4).tolist()
        for name in TARGETS:
            record[name] = rng.normal(0.5, 0.4, scored).round(4).tolist()
        rows.append(record)
    pd.DataFrame(rows).to_json(raw / "train.json", orient="records", lines=True)
    test_columns = ["index", "id", "sequence", "structure", "predicted_loop_type", "seq_length", "seq_scored"]
    test = pd.DataFrame(rows[:2])[test_columns].assign(id=["id_000000000", "id_000000001"])
    test.to_json(raw / "test.json", orient="records", lines=True)
    sample = pd.DataFrame({"id_seqpos": [f"id_000000000_{p}" for p in range(length)]}).assign(
        **dict.fromkeys(TARGETS, 0.0)
    )
    sample.to_csv(raw / "sample_submission.csv", index=False)
