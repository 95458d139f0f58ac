"""Prepare IceCube - Neutrinos in Deep Ice (pulse series -> direction azimuth/zenith).

Facts: the unique ``batch_id`` values of ``train_meta.parquet`` (in order of first appearance,
660 batches) are split with ``train_test_split(test_size=0.1, random_state=0)``. Public gets
train_meta.parquet (all 6 columns) and test_meta.parquet (without azimuth and zenith) holding
the rows of each side's batches in file order, ``train/batch_{N}.parquet`` and
``test/batch_{N}.parquet`` (N parsed from the last "_" part of the stem, names kept) and
sensor_geometry.csv; the answers are ``[event_id, azimuth, zenith]``; the sample submission
predicts 1 and 1. Raw test/, test_meta.parquet and sample_submission.csv are ignored.

The 131M-row metadata is streamed batch by batch. The published benchmark writes the parquet
files with fastparquet, this with pyarrow (same tables; such checksums never reproduced anyway).
"""

from __future__ import annotations

import shutil
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np

LABELS = ["azimuth", "zenith"]


def _csv_writer(stack: ExitStack, path: Path, schema: Any) -> Any:
    """A streaming CSV writer with a plain (unquoted) header line."""
    import pyarrow.csv as pacsv

    handle = stack.enter_context(path.open("wb"))
    handle.write((",".join(schema.names) + "\n").encode())
    return pacsv.CSVWriter(handle, schema, write_options=pacsv.WriteOptions(include_header=False))


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Split by batch, stream the metadata to both sides, copy the batch files."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    from sklearn.model_selection import train_test_split

    meta = pq.ParquetFile(raw / "train_meta.parquet")
    batch_ids = pd.unique(meta.read(columns=["batch_id"]).column("batch_id").to_numpy())
    train_batches, test_batches = train_test_split(batch_ids, test_size=0.1, random_state=0)
    test_set = pa.array(test_batches, type=meta.schema_arrow.field("batch_id").type)

    test_schema = meta.schema_arrow.remove(meta.schema_arrow.get_field_index("azimuth"))
    test_schema = test_schema.remove(test_schema.get_field_index("zenith"))
    answer_schema = pa.schema([meta.schema_arrow.field(c) for c in ("event_id", *LABELS)])
    ones = pa.schema(
        [("event_id", meta.schema_arrow.field("event_id").type), ("azimuth", pa.int64()), ("zenith", pa.int64())]
    )
    counts = {"all": 0, "train": 0, "test": 0}
    with ExitStack() as stack:
        train_out = stack.enter_context(pq.ParquetWriter(public / "train_meta.parquet", meta.schema_arrow))
        test_out = stack.enter_context(pq.ParquetWriter(public / "test_meta.parquet", test_schema))
        answers = stack.enter_context(_csv_writer(stack, private / "test.csv", answer_schema))
        sample = stack.enter_context(_csv_writer(stack, public / "sample_submission.csv", ones))
        for batch in meta.iter_batches(batch_size=1 << 20):
            in_test = pc.is_in(batch.column("batch_id"), value_set=test_set)
            train, test = batch.filter(pc.invert(in_test)), batch.filter(in_test)
            train_out.write_batch(train)
            test_out.write_batch(test.select(test_schema.names))
            answers.write_batch(test.select(["event_id", *LABELS]))
            one = pa.array(np.ones(test.num_rows, dtype=np.int64))
            sample.write_batch(pa.record_batch([test.column("event_id"), one, one], schema=ones))
            counts["all"] += batch.num_rows
            counts["train"] += train.num_rows
            counts["test"] += test.num_rows

    shutil.copyfile(raw / "sensor_geometry.csv", public / "sensor_geometry.csv")
    sides = {int(b): "train" for b in train_batches} | {int(b): "test" for b in test_batches}
    (public / "train").mkdir()
    (public / "test").mkdir()
    for path in sorted((raw / "train").glob("*.parquet")):
        folder = sides.get(int(path.stem.split("_")[-1]))
        if folder is not None:
            shutil.copyfile(path, public / folder / path.name)

    train_events = set(pq.read_table(public / "train_meta.parquet", columns=["event_id"]).column(0).to_pylist())
    test_events = pq.read_table(public / "test_meta.parquet", columns=["event_id"]).column(0).to_pylist()
    assert counts["train"] + counts["test"] == counts["all"] and counts["test"] == len(test_events)
    assert not train_events & set(test_events)
    assert not set(LABELS) & set(pq.read_schema(public / "test_meta.parquet").names)
    assert len(list((public / "train").glob("*.parquet"))) == len(train_batches)
    assert len(list((public / "test").glob("*.parquet"))) == len(test_batches)


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """20 batches of 3 events: train_meta.parquet, train/batch_{N}.parquet, sensor_geometry.csv."""
    import pandas as pd

    (raw / "train").mkdir()
    rows, first, event_id = [], 0, 24
    for batch_id in range(1, 21):
        pulses = []
        for _ in range(3):
            n = int(rng.integers(2, 6))
            rows.append((batch_id, event_id, first, first + n - 1, rng.uniform(0, 2 * np.pi), rng.uniform(0, np.pi)))
            pulses.append(
                pd.DataFrame(
                    {
                        "event_id": np.full(n, event_id),
                        "sensor_id": rng.integers(0, 10, n).astype(np.int16),
                        "time": rng.integers(5000, 20000, n),
                        "charge": rng.uniform(0.2, 3, n),
                        "auxiliary": rng.integers(0, 2, n).astype(bool),
                    }
                )
            )
            first += n
            event_id += int(rng.integers(1, 50))
        pd.concat(pulses).set_index("event_id").to_parquet(raw / "train" / f"batch_{batch_id}.parquet")
    columns = ["batch_id", "event_id", "first_pulse_index", "last_pulse_index", "azimuth", "zenith"]
    pd.DataFrame(rows, columns=columns).to_parquet(raw / "train_meta.parquet", index=False)
    geometry = pd.DataFrame({"sensor_id": range(10), "x": rng.uniform(-500, 500, 10).round(2)})
    geometry["y"] = rng.uniform(-500, 500, 10).round(2)
    geometry["z"] = rng.uniform(-500, 500, 10).round(2)
    geometry.to_csv(raw / "sensor_geometry.csv", index=False)
