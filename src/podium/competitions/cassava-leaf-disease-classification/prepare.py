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
import struct
from collections.abc import Iterator
from pathlib import Path

import numpy as np

LABEL_FEATURES = frozenset({"target"})
_CRC_TABLE = [0] * 256
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _CRC_TABLE[_i] = _c


def _masked_crc(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _CRC_TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    crc ^= 0xFFFFFFFF
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def _fields(buf: bytes) -> Iterator[tuple[int, bytes]]:
    """(field number, payload) of each length-delimited field of a protobuf message."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        wire = key & 7
        if wire == 2:
            size, pos = _varint(buf, pos)
            yield key >> 3, buf[pos : pos + size]
            pos += size
        elif wire == 0:
            _, pos = _varint(buf, pos)
        else:
            pos += 8 if wire == 1 else 4


def _records(path: Path) -> Iterator[bytes]:
    data = path.read_bytes()
    pos = 0
    while pos < len(data):
        (size,) = struct.unpack_from("<Q", data, pos)
        yield data[pos + 12 : pos + 12 + size]
        pos += 16 + size


def _features(example: bytes) -> list[tuple[str, bytes]]:
    """(name, serialized Feature) of a tf.train.Example."""
    out = []
    for _, features in _fields(example):
        for _, entry in _fields(features):
            parts = dict(_fields(entry))
            out.append((parts.get(1, b"").decode(), parts.get(2, b"")))
    return out


def _ld(field: int, payload: bytes) -> bytes:
    out, size = bytearray([field << 3 | 2]), len(payload)
    while size > 0x7F:
        out.append(size & 0x7F | 0x80)
        size >>= 7
    out.append(size)
    return bytes(out) + payload


def _example(features: list[tuple[str, bytes]]) -> bytes:
    return _ld(1, b"".join(_ld(1, _ld(1, name.encode()) + _ld(2, value)) for name, value in features))


def _record(data: bytes) -> bytes:
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", _masked_crc(length)) + data + struct.pack("<I", _masked_crc(data))


def _image_names(path: Path) -> list[str]:
    names = []
    for record in _records(path):
        feature = dict(_features(record))["image_name"]
        names.append(next(v for _, blist in _fields(feature) for _, v in _fields(blist)).decode())
    return names


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
                kept = (_example([f for f in _features(r) if f[0] not in LABEL_FEATURES]) for r in _records(shard))
                target.write_bytes(b"".join(_record(r) for r in kept))
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
            assert all(not {n for n, _ in _features(r)} & LABEL_FEATURES for r in _records(shard))


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
                ("image", _ld(1, _ld(1, images[image_id]))),
                ("image_name", _ld(1, _ld(1, image_id.encode()))),
                ("target", _ld(3, _ld(1, bytes([int(label)])))),
            ]
            records.append(_record(_example(features)))
        (raw / "train_tfrecords" / f"ld_train{s:02d}-{per_shard}.tfrec").write_bytes(b"".join(records))
    pd.DataFrame({"image_id": ids, "label": labels}).to_csv(raw / "train.csv", index=False)
    (raw / "label_num_to_disease_map.json").write_text(json.dumps(DISEASES))
