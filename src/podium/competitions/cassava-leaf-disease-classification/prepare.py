"""Cassava leaf disease: a split by whole TFRecord shards (facts: raw, split, public, private).

Facts implemented: the sorted raw train_tfrecords/*.tfrec shards are split by
``train_test_split(shards, test_size=0.1, random_state=0)``; an image is test iff its
``image_name`` appears in a test shard. Public: train.csv (image_id, label) of the new train,
train_images/ and test_images/ (jpgs by image_id), the shards renamed ld_train{i:02d}-{count}.tfrec /
ld_test{i:02d}-{count}.tfrec (i = position in the split list), label_num_to_disease_map.json and a
sample submission with label 4; private test.csv is (image_id, label).

Version 2: the training shards carry each image's ``target``, so the published test shards leak
the labels; version 2 rewrites the test shards without the label feature.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import numpy as np

from podium.data import tfrecord

LABEL_FEATURES = frozenset({"target"})


def _image_names(path: Path) -> list[str]:
    return [
        tfrecord.bytes_list_values(dict(tfrecord.example_features(r))["image_name"])[0].decode()
        for r in tfrecord.read_records(path)
    ]


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    import pandas as pd
    from sklearn.model_selection import train_test_split

    shards = [p for p in sorted((raw / "train_tfrecords").iterdir()) if p.is_file() and p.suffix == ".tfrec"]
    train_shards, test_shards = train_test_split(shards, test_size=0.1, random_state=0)
    test_ids = {name for shard in test_shards for name in _image_names(shard)}
    old = pd.read_csv(raw / "train.csv", dtype=str)
    in_test = old["image_id"].isin(test_ids)
    train, test = old[~in_test], old[in_test]

    train.to_csv(public / "train.csv", index=False)
    test.to_csv(private / "test.csv", index=False)
    test.assign(label=4).to_csv(public / "sample_submission.csv", index=False)
    for kind, chosen in (("train", train_shards), ("test", test_shards)):
        (public / f"{kind}_tfrecords").mkdir()
        for i, shard in enumerate(chosen):
            target = public / f"{kind}_tfrecords" / f"ld_{kind}{i:02d}-{shard.stem.split('-')[1]}.tfrec"
            if kind == "test" and version >= 2:
                kept = (tfrecord.drop_features(r, LABEL_FEATURES) for r in tfrecord.read_records(shard))
                target.write_bytes(b"".join(tfrecord.frame_record(r) for r in kept))
            else:
                shutil.copyfile(shard, target)
    for kind, ids in (("train", train["image_id"]), ("test", test["image_id"])):
        (public / f"{kind}_images").mkdir()
        for image_id in ids:
            shutil.copyfile(raw / "train_images" / image_id, public / f"{kind}_images" / image_id)
    shutil.copyfile(raw / "label_num_to_disease_map.json", public / "label_num_to_disease_map.json")

    assert len(train) + len(test) == len(old) and len(test) > 0
    assert not set(train["image_id"]) & set(test["image_id"])
    assert list(test.columns) == ["image_id", "label"]
    if version >= 2:
        for shard in (public / "test_tfrecords").iterdir():
            assert all(
                not {n for n, _ in tfrecord.example_features(r)} & LABEL_FEATURES for r in tfrecord.read_records(shard)
            )


DISEASES = {
    "0": "Cassava Bacterial Blight (CBB)",
    "1": "Cassava Brown Streak Disease (CBSD)",
    "2": "Cassava Green Mottle (CGM)",
    "3": "Cassava Mosaic Disease (CMD)",
    "4": "Healthy",
}


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """15 shards ld_train{NN}-3.tfrec (image, image_name, target), train.csv, train_images/*.jpg, the label map."""
    import pandas as pd
    from PIL import Image

    n_shards, per_shard = 15, 3
    ids = [f"{int(v)}.jpg" for v in rng.choice(10**9, n_shards * per_shard, replace=False) + 10**9]
    labels = rng.integers(0, 5, len(ids))
    (raw / "train_tfrecords").mkdir()
    (raw / "train_images").mkdir()
    images = {}
    for image_id in ids:
        buffer = io.BytesIO()
        Image.new("RGB", (8, 8), tuple(int(c) for c in rng.integers(0, 256, 3))).save(buffer, "JPEG")
        images[image_id] = buffer.getvalue()
        (raw / "train_images" / image_id).write_bytes(images[image_id])
    for s in range(n_shards):
        records = []
        for image_id, label in zip(ids[s::n_shards], labels[s::n_shards], strict=True):
            features = [
                ("image", tfrecord.bytes_feature(images[image_id])),
                ("image_name", tfrecord.bytes_feature(image_id.encode())),
                ("target", tfrecord.int64_feature(int(label))),
            ]
            records.append(tfrecord.frame_record(tfrecord.encode_example(features)))
        (raw / "train_tfrecords" / f"ld_train{s:02d}-{per_shard}.tfrec").write_bytes(b"".join(records))
    pd.DataFrame({"image_id": ids, "label": labels}).to_csv(raw / "train.csv", index=False)
    (raw / "label_num_to_disease_map.json").write_text(json.dumps(DISEASES))
