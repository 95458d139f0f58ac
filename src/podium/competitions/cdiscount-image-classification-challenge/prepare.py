"""Prepare cdiscount-image-classification-challenge (facts: split, public, private).

(_id, category_id) of every train.bson record, in file order, are split with
``train_test_split(test_size=0.1, random_state=0)``; answers.csv (_id, category_id) is sorted by
_id. Public: train.bson (new-train records, unchanged, file order), test.bson (new-test records
without category_id, original _ids), train_example.bson (first 100 records of the new train.bson),
category_names.csv, sample_submission.csv (category_id = 1000010653, sorted by _id). A minimal
BSON reader suffices: records are copied as raw bytes, and category_id is cut out of test records.
"""

from __future__ import annotations

import shutil
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import numpy as np

TEST_SIZE = 0.1
DEFAULT_CATEGORY = 1000010653
EXAMPLE_ROWS = 100
_FIXED = {0x01: 8, 0x07: 12, 0x08: 1, 0x09: 8, 0x0A: 0, 0x10: 4, 0x11: 8, 0x12: 8, 0x13: 16, 0x7F: 0, 0xFF: 0}


def _documents(handle: BinaryIO) -> Iterator[bytes]:
    """Each top-level BSON document of a file, as raw bytes."""
    while header := handle.read(4):
        (size,) = struct.unpack("<i", header)
        body = handle.read(size - 4)
        if len(body) != size - 4:
            raise ValueError("truncated BSON file")
        yield header + body


def _elements(doc: bytes) -> Iterator[tuple[int, str, int, int]]:
    """(type, name, start of the element, start of the next one) for each top-level element."""
    pos = 4
    while doc[pos] != 0:
        start, kind = pos, doc[pos]
        end_name = doc.index(b"\x00", pos + 1)
        name = doc[pos + 1 : end_name].decode()
        pos = end_name + 1
        if kind in _FIXED:
            pos += _FIXED[kind]
        elif kind in (0x02, 0x0D, 0x0E):  # string-like: int32 length + bytes
            pos += 4 + struct.unpack_from("<i", doc, pos)[0]
        elif kind in (0x03, 0x04, 0x0F):  # document, array, code with scope: int32 total size
            pos += struct.unpack_from("<i", doc, pos)[0]
        elif kind == 0x05:  # binary: int32 length + subtype + bytes
            pos += 5 + struct.unpack_from("<i", doc, pos)[0]
        else:
            raise ValueError(f"unsupported BSON element type {kind:#x}")
        yield kind, name, start, pos


def _int_fields(doc: bytes) -> dict[str, int]:
    fields = {}
    for kind, name, _start, end in _elements(doc):
        if kind in (0x10, 0x12):
            fields[name] = int.from_bytes(doc[end - (4 if kind == 0x10 else 8) : end], "little", signed=True)
    return fields


def _without(doc: bytes, field: str) -> bytes:
    body = b"".join(doc[s:e] for _, name, s, e in _elements(doc) if name != field) + b"\x00"
    return struct.pack("<i", len(body) + 4) + body


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Split the products 90/10 and write the three BSON files."""
    import pandas as pd
    from sklearn.model_selection import train_test_split

    ids, categories = [], []
    with (raw / "train.bson").open("rb") as handle:
        for doc in _documents(handle):
            fields = _int_fields(doc)
            ids.append(fields["_id"])
            categories.append(fields["category_id"])
    old = pd.DataFrame({"_id": ids, "category_id": categories})
    train, answers = train_test_split(old, test_size=TEST_SIZE, random_state=0)
    answers = answers.sort_values(by="_id")
    answers.to_csv(private / "answers.csv", index=False)
    sample = answers[["_id"]].assign(category_id=DEFAULT_CATEGORY)
    sample.to_csv(public / "sample_submission.csv", index=False)

    train_ids, test_ids = set(train["_id"].tolist()), set(answers["_id"].tolist())
    counts = {"train": 0, "example": 0, "test": 0}
    with (
        (raw / "train.bson").open("rb") as handle,
        (public / "train.bson").open("wb") as train_out,
        (public / "test.bson").open("wb") as test_out,
        (public / "train_example.bson").open("wb") as example_out,
    ):
        for doc in _documents(handle):
            _id = _int_fields(doc)["_id"]
            if _id in train_ids:
                train_out.write(doc)
                counts["train"] += 1
                if counts["example"] < EXAMPLE_ROWS:
                    example_out.write(doc)
                    counts["example"] += 1
            if _id in test_ids:
                test_out.write(_without(doc, "category_id"))
                counts["test"] += 1
    shutil.copyfile(raw / "category_names.csv", public / "category_names.csv")

    assert train_ids.isdisjoint(test_ids) and len(train) + len(answers) == len(old)
    assert counts["train"] == len(train) and counts["test"] == len(answers)
    assert counts["example"] == min(EXAMPLE_ROWS, len(train))
    assert sample["_id"].tolist() == answers["_id"].tolist()
    with (public / "test.bson").open("rb") as handle:
        assert all("category_id" not in _int_fields(doc) for doc in _documents(handle))


def _encode(fields: list[tuple[int, str, bytes]]) -> bytes:
    body = b"".join(bytes([kind]) + name.encode() + b"\x00" + value for kind, name, value in fields) + b"\x00"
    return struct.pack("<i", len(body) + 4) + body


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """train.bson with 40 products (1-2 tiny jpegs each), train_example.bson, test.bson, category_names.csv."""
    import io

    import pandas as pd
    from PIL import Image

    categories = [1000010653, *range(1000000000, 1000000010)]
    docs, test_docs = [], []
    for i in range(46):
        pictures = []
        for _ in range(int(rng.integers(1, 3))):
            buffer = io.BytesIO()
            Image.fromarray(rng.integers(0, 255, (8, 8, 3), dtype=np.uint8)).save(buffer, format="JPEG")
            data = buffer.getvalue()
            pictures.append(_encode([(0x05, "picture", struct.pack("<i", len(data)) + b"\x00" + data)]))
        imgs = _encode([(0x03, str(k), p) for k, p in enumerate(pictures)])
        _id = struct.pack("<i", 3 * i)
        category = struct.pack("<i", int(rng.choice(categories)))
        if i < 40:
            docs.append(_encode([(0x10, "_id", _id), (0x10, "category_id", category), (0x04, "imgs", imgs)]))
        else:
            test_docs.append(_encode([(0x10, "_id", _id), (0x04, "imgs", imgs)]))
    (raw / "train.bson").write_bytes(b"".join(docs))
    (raw / "train_example.bson").write_bytes(b"".join(docs[:EXAMPLE_ROWS]))
    (raw / "test.bson").write_bytes(b"".join(test_docs))
    names = pd.DataFrame(
        {
            "category_id": categories,
            "category_level1": "INFORMATIQUE",
            "category_level2": "CONNECTIQUE - ALIMENTATION",
            "category_level3": [f"CATEGORY {c % 1000}" for c in categories],
        }
    )
    names.to_csv(raw / "category_names.csv", index=False)
    pd.DataFrame({"_id": range(120, 138, 3), "category_id": DEFAULT_CATEGORY}).to_csv(
        raw / "sample_submission.csv", index=False
    )
