"""The shared minimal TFRecord / tf.train.Example reader-writer."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from podium.data.tfrecord import (
    bytes_feature,
    bytes_list_values,
    crc32c,
    decode_varint,
    drop_features,
    encode_example,
    encode_varint,
    example_features,
    fields,
    frame_record,
    int64_feature,
    masked_crc,
    read_records,
)


def test_crc32c_known_vector() -> None:
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(b"") == 0


def test_masked_crc_is_rotated_plus_delta() -> None:
    crc = 0xE3069283
    expected = (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF
    assert masked_crc(b"123456789") == expected


@pytest.mark.parametrize("value", [0, 1, 127, 128, 300, 16383, 16384, 2**32, 2**63 - 1, 2**64 - 1])
def test_varint_round_trip(value: int) -> None:
    encoded = encode_varint(value)
    assert decode_varint(b"\xff" + encoded, 1) == (value, 1 + len(encoded))


def test_varint_known_bytes() -> None:
    assert encode_varint(1) == b"\x01"
    assert encode_varint(300) == b"\xac\x02"
    with pytest.raises(ValueError):
        encode_varint(-1)


def test_round_trip(tmp_path: Path) -> None:
    examples = [
        [
            ("image", bytes_feature(b"\xff\xd8jpeg")),
            ("image_name", bytes_feature(b"a.jpg")),
            ("target", int64_feature(3)),
        ],
        [("image_name", bytes_feature(b"b.jpg", b"c.jpg")), ("empty", bytes_feature())],
    ]
    path = tmp_path / "shard.tfrec"
    path.write_bytes(b"".join(frame_record(encode_example(features)) for features in examples))

    decoded = [example_features(record) for record in read_records(path)]
    assert decoded == examples
    assert bytes_list_values(dict(decoded[0])["image_name"]) == [b"a.jpg"]
    assert bytes_list_values(dict(decoded[1])["image_name"]) == [b"b.jpg", b"c.jpg"]
    assert bytes_list_values(dict(decoded[1])["empty"]) == []
    assert bytes_list_values(dict(decoded[0])["target"]) == []  # an Int64List, not a BytesList
    # Feature.int64_list (field 3) -> Int64List.value (field 1, packed varints)
    (number, int64_list), *_ = fields(dict(decoded[0])["target"])
    assert number == 3 and dict(fields(int64_list))[1] == b"\x03"


def test_frame_layout() -> None:
    data = b"payload"
    framed = frame_record(data)
    assert len(framed) == 8 + 4 + len(data) + 4
    length = struct.pack("<Q", len(data))
    assert framed[:8] == length
    assert struct.unpack("<I", framed[8:12])[0] == masked_crc(length)
    assert framed[12:-4] == data
    assert struct.unpack("<I", framed[-4:])[0] == masked_crc(data)


def test_multi_byte_varint_length(tmp_path: Path) -> None:
    image = bytes(range(256)) * 3  # 768 bytes: every length prefix around it needs a 2-byte varint
    example = encode_example([("image", bytes_feature(image)), ("image_name", bytes_feature(b"x"))])
    assert len(example) > 0x7F and example[0] == 0x0A and example[1] & 0x80  # field 1, 2-byte length
    path = tmp_path / "big.tfrec"
    path.write_bytes(frame_record(example) + frame_record(b"") + frame_record(example))

    records = list(read_records(path))
    assert records == [example, b"", example]
    assert bytes_list_values(dict(example_features(records[0]))["image"]) == [image]


def test_drop_features() -> None:
    example = encode_example(
        [("image", bytes_feature(b"i")), ("target", int64_feature(1)), ("diagnosis", bytes_feature(b"d"))]
    )
    kept = drop_features(example, {"target", "diagnosis"})
    assert example_features(kept) == [("image", bytes_feature(b"i"))]
    assert drop_features(example, set()) == example


def test_fields_skips_non_length_delimited() -> None:
    # field 1 varint 150, field 2 fixed64, field 3 fixed32, field 4 length-delimited "hi"
    message = b"\x08\x96\x01" + b"\x11" + bytes(8) + b"\x1d" + bytes(4) + b"\x22\x02hi"
    assert list(fields(message)) == [(4, b"hi")]
