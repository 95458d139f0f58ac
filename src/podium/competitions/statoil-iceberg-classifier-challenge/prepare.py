"""Statoil/C-CORE Iceberg Classifier: split the labelled radar records 80/20, re-packed as 7z.

Facts: raw train.json.7z and test.json.7z hold data/processed/train.json (a list of records
{id, band_1, band_2, inc_angle, is_iceberg}) and data/processed/test.json (read only for its
record keys). The train records, in file order, are split by
``train_test_split(records, test_size=0.2, random_state=0)``; the test records keep only the keys
of the original test records (id, band_1, band_2, inc_angle), in that file's key order. Public:
train.json.7z (train.json), test.json.7z (test.json) and sample_submission.csv.7z
(sample_submission.csv) — 7z archives only. Private: test.csv (id, is_iceberg as 0/1) and
sample_submission.csv (is_iceberg = 0.5). The JSON files are written with ``json.dump``'s defaults.

The archives get a fixed modification time, so reruns give byte-identical files.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

TEST_SIZE = 0.2
_MTIME = 315532800  # 1980-01-01T00:00:00Z, stamped on every archived file


def _extracted(raw: Path, name: str) -> Path:
    """raw/data/processed/{name}, extracted from raw/{name}.7z once, through a temporary folder."""
    import py7zr

    target = raw / "data" / "processed" / name
    if not target.is_file():
        staging = raw / f".{name}.7z.tmp-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        with py7zr.SevenZipFile(raw / f"{name}.7z") as archive:
            archive.extractall(staging)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging / "data" / "processed" / name, target)
        shutil.rmtree(staging)
    return target


def _first_record_keys(path: Path) -> list[str]:
    """Keys of the first record of a JSON list, read without loading the (1.5 GB) whole file."""
    decoder = json.JSONDecoder()
    text = ""
    with path.open(encoding="utf-8") as handle:
        while True:
            chunk = handle.read(1 << 20)
            text += chunk
            start = text.find("{")
            if start >= 0:
                try:
                    record, _ = decoder.raw_decode(text, start)
                except json.JSONDecodeError:
                    if not chunk:
                        raise
                else:
                    return list(record)
            elif not chunk:
                raise ValueError(f"{path} holds no record")


def _pack(archive: Path, arcname: str, data: bytes) -> None:
    """A 7z archive holding one file, with a fixed timestamp (py7zr's default LZMA2 filter)."""
    import py7zr

    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / arcname
        source.write_bytes(data)
        os.utime(source, (_MTIME, _MTIME))
        with py7zr.SevenZipFile(archive, "w") as handle:
            handle.write(source, arcname=arcname)


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Split train.json's records 80/20 (random_state=0); see the module docstring for the files."""
    import pandas as pd
    from sklearn.model_selection import train_test_split

    with _extracted(raw, "train.json").open(encoding="utf-8") as handle:
        records: list[dict[str, Any]] = json.load(handle)
    test_fields = _first_record_keys(_extracted(raw, "test.json"))
    fields = set(records[0])
    assert all(set(r) == fields for r in records), "inconsistent fields in train.json"
    assert set(test_fields) < fields and "is_iceberg" not in test_fields

    train, test = train_test_split(records, test_size=TEST_SIZE, random_state=0)
    unlabelled = [{key: r[key] for key in test_fields} for r in test]
    answers = pd.DataFrame({"id": [r["id"] for r in test], "is_iceberg": [int(r["is_iceberg"]) for r in test]})
    sample = answers.assign(is_iceberg=0.5)

    answers.to_csv(private / "test.csv", index=False)
    sample.to_csv(private / "sample_submission.csv", index=False)
    _pack(public / "train.json.7z", "train.json", json.dumps(train).encode())
    _pack(public / "test.json.7z", "test.json", json.dumps(unlabelled).encode())
    _pack(public / "sample_submission.csv.7z", "sample_submission.csv", sample.to_csv(index=False).encode())

    train_ids = {r["id"] for r in train}
    assert len(train_ids) == len(train) and answers["id"].is_unique
    assert not train_ids & set(answers["id"])
    assert len(train) + len(test) == len(records) == len(train) + len(answers)
    assert list(sample["id"]) == list(answers["id"])
    assert all("is_iceberg" not in r for r in unlabelled)
    assert sorted(p.name for p in public.iterdir()) == ["sample_submission.csv.7z", "test.json.7z", "train.json.7z"]


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """train.json.7z (40 records), test.json.7z (6 records) and sample_submission.csv.7z, each JSON
    under data/processed/ as in the Kaggle archives; bands are 5x5 (25 dB values) instead of 75x75
    to stay tiny, a few train inc_angle values are "na", and both classes land in the 20% test part."""
    import py7zr
    from sklearn.model_selection import train_test_split

    def band() -> list[float]:
        return [round(float(v), 6) for v in rng.normal(-20.0, 5.0, 25)]

    def record(record_id: str) -> dict[str, Any]:
        return {"id": record_id, "band_1": band(), "band_2": band(), "inc_angle": round(float(rng.uniform(30, 46)), 4)}

    ids = list(dict.fromkeys(rng.bytes(4).hex() for _ in range(60)))
    n_train, n_test = 40, 6
    train = [record(i) for i in ids[:n_train]]
    labels = rng.integers(0, 2, n_train)
    _, test_rows = train_test_split(np.arange(n_train), test_size=TEST_SIZE, random_state=0)
    labels[test_rows[:2]] = [0, 1]
    for r, label in zip(train, labels, strict=True):
        r["is_iceberg"] = int(label)
    for k in (3, 17, 29):
        train[k]["inc_angle"] = "na"
    test = [record(i) for i in ids[n_train : n_train + n_test]]
    sample = "id,is_iceberg\n" + "".join(f"{r['id']},0.5\n" for r in test)
    for name, text in (("train.json", json.dumps(train)), ("test.json", json.dumps(test))):
        with py7zr.SevenZipFile(raw / f"{name}.7z", "w") as archive:
            archive.writestr(text, f"data/processed/{name}")
    with py7zr.SevenZipFile(raw / "sample_submission.csv.7z", "w") as archive:
        archive.writestr(sample, "sample_submission.csv")
