"""SIIM-ISIC melanoma: a fixed split by two TFRecord shards (facts: raw, split, public, private).

Facts implemented: every image named in raw tfrecords/train00-2071.tfrec and train06-2071.tfrec
(feature ``image_name``) is test, everything else train. Public: train.csv (8 columns), test.csv
(image_name, patient_id, sex, age_approx, anatom_site_general_challenge), DICOMs in train/ and
test/, JPEGs in jpeg/train/ and jpeg/test/, the train*.tfrec shards in sorted order renamed
train{NN}-{count}.tfrec / test{NN}-{count}.tfrec (counters per side), and a sample submission with
target 0; private test.csv is (image_name, target).

Version 2: the training shards carry each image's label (``target``, ``diagnosis``), so the
published test shards leak the answers; version 2 rewrites the public test shards without them.
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import numpy as np

from podium.data import tfrecord

TEST_SHARDS = ("train00-2071.tfrec", "train06-2071.tfrec")
LABEL_FEATURES = frozenset({"target", "diagnosis", "benign_malignant"})
TRAIN_COLUMNS = [
    "image_name",
    "patient_id",
    "sex",
    "age_approx",
    "anatom_site_general_challenge",
    "diagnosis",
    "benign_malignant",
    "target",
]


def _image_names(path: Path) -> list[str]:
    return [
        tfrecord.bytes_list_values(dict(tfrecord.example_features(r))["image_name"])[0].decode()
        for r in tfrecord.read_records(path)
    ]


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    import pandas as pd

    test_ids = {name for shard in TEST_SHARDS for name in _image_names(raw / "tfrecords" / shard)}
    old = pd.read_csv(raw / "train.csv", dtype=str, keep_default_na=False)
    in_test = old["image_name"].isin(test_ids)
    train, test = old[~in_test], old[in_test]
    answers = test[["image_name", "target"]]

    train.to_csv(public / "train.csv", index=False)
    test[TRAIN_COLUMNS[:5]].to_csv(public / "test.csv", index=False)
    answers.to_csv(private / "test.csv", index=False)
    answers.assign(target=0).to_csv(public / "sample_submission.csv", index=False)
    for kind, names in (("train", train["image_name"]), ("test", test["image_name"])):
        (public / kind).mkdir()
        (public / "jpeg" / kind).mkdir(parents=True)
        for name in names:
            shutil.copyfile(raw / "train" / f"{name}.dcm", public / kind / f"{name}.dcm")
            shutil.copyfile(raw / "jpeg" / "train" / f"{name}.jpg", public / "jpeg" / kind / f"{name}.jpg")
    (public / "tfrecords").mkdir()
    counts = {"train": 0, "test": 0}
    for shard in sorted((raw / "tfrecords").glob("train*.tfrec")):
        kind = "test" if shard.name in TEST_SHARDS else "train"
        target = public / "tfrecords" / f"{kind}{counts[kind]:02d}-{shard.stem.split('-')[1]}.tfrec"
        counts[kind] += 1
        if kind == "test" and version >= 2:
            kept = (tfrecord.drop_features(r, LABEL_FEATURES) for r in tfrecord.read_records(shard))
            target.write_bytes(b"".join(tfrecord.frame_record(r) for r in kept))
        else:
            shutil.copyfile(shard, target)

    assert len(train) + len(test) == len(old) and counts["test"] == len(TEST_SHARDS)
    assert not set(train["image_name"]) & set(test["image_name"])
    assert list(train.columns) == TRAIN_COLUMNS
    if version >= 2:
        for shard in (public / "tfrecords").glob("test*.tfrec"):
            assert all(
                not {n for n, _ in tfrecord.example_features(r)} & LABEL_FEATURES for r in tfrecord.read_records(shard)
            )


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """16 shards train{NN}-2071.tfrec of 3 records each (plus one ignored test shard), train.csv, .dcm and .jpg stubs."""
    import pandas as pd
    from PIL import Image

    n_shards, per_shard = 16, 3
    n = n_shards * per_shard
    names = [f"ISIC_{int(v):07d}" for v in rng.choice(10**7, n, replace=False)]
    frame = pd.DataFrame(
        {
            "image_name": names,
            "patient_id": [f"IP_{int(v):07d}" for v in rng.integers(0, 30, n) * 7919],
            "sex": rng.choice(["male", "female"], n),
            "age_approx": rng.choice([35.0, 45.0, 60.0], n),
            "anatom_site_general_challenge": rng.choice(["torso", "head/neck", "lower extremity", ""], n),
            "diagnosis": "unknown",
            "benign_malignant": "benign",
            "target": 0,
        }
    )
    malignant = rng.random(n) < 0.3
    frame.loc[malignant, ["diagnosis", "benign_malignant", "target"]] = ["melanoma", "malignant", 1]
    frame.to_csv(raw / "train.csv", index=False)
    for folder in ("train", "jpeg/train", "tfrecords"):
        (raw / folder).mkdir(parents=True)
    images = {}
    for name in names:
        buffer = io.BytesIO()
        Image.new("RGB", (8, 8), tuple(int(c) for c in rng.integers(0, 256, 3))).save(buffer, "JPEG")
        images[name] = buffer.getvalue()
        (raw / "jpeg" / "train" / f"{name}.jpg").write_bytes(images[name])
        (raw / "train" / f"{name}.dcm").write_bytes(b"\0" * 128 + b"DICM" + rng.bytes(32))
    for s in range(n_shards):
        records = []
        for row in frame.iloc[s::n_shards].itertuples(index=False):
            features = [
                ("image", tfrecord.bytes_feature(images[row.image_name])),
                ("image_name", tfrecord.bytes_feature(row.image_name.encode())),
                ("diagnosis", tfrecord.bytes_feature(str(row.diagnosis).encode())),
                ("target", tfrecord.int64_feature(int(row.target))),
            ]
            records.append(tfrecord.frame_record(tfrecord.encode_example(features)))
        (raw / "tfrecords" / f"train{s:02d}-2071.tfrec").write_bytes(b"".join(records))
    test_record = tfrecord.encode_example([("image_name", tfrecord.bytes_feature(b"ISIC_9999999"))])
    (raw / "tfrecords" / "test00-687.tfrec").write_bytes(tfrecord.frame_record(test_record))
