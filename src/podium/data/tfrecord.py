"""A minimal TFRecord reader/writer for ``tf.train.Example`` records, without TensorFlow.

TFRecord framing: a file is a plain concatenation of records, each laid out as

    uint64 length              little-endian, 8 bytes
    uint32 masked_crc(length)  little-endian, of the 8 length bytes
    byte   data[length]
    uint32 masked_crc(data)    little-endian

where CRC32C is the Castagnoli CRC (reflected polynomial 0x82F63B78) and
``masked_crc(x) = rotate_right(crc32c(x), 15) + 0xA282EAD8`` (mod 2**32). `read_records` does not
check the CRCs; `frame_record` writes them.

The data of each record is a serialized ``tf.train.Example`` protobuf. Only what these messages
use is supported: varint keys, length-delimited fields (wire type 2) and skipping of varint,
64-bit and 32-bit fields::

    Example   { Features features = 1; }
    Features  { map<string, Feature> feature = 1; }   # each entry: { string key = 1; Feature value = 2; }
    Feature   { oneof { BytesList bytes_list = 1; FloatList float_list = 2; Int64List int64_list = 3; } }
    BytesList { repeated bytes value = 1; }
    Int64List { repeated int64 value = 1 [packed = true]; }

A feature is handled as its serialized ``Feature`` message (bytes): `example_features` and
`encode_example` work on ``(name, serialized Feature)`` pairs, in order, and `bytes_feature`,
`int64_feature` and `bytes_list_values` build and read the common kinds.
"""

from __future__ import annotations

import struct
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path

__all__ = [
    "bytes_feature",
    "bytes_list_values",
    "crc32c",
    "decode_varint",
    "drop_features",
    "encode_example",
    "encode_varint",
    "example_features",
    "fields",
    "frame_record",
    "int64_feature",
    "length_delimited",
    "masked_crc",
    "read_records",
]

_CRC32C_POLY = 0x82F63B78  # Castagnoli, reflected
_CRC_MASK_DELTA = 0xA282EAD8
_U32 = 0xFFFFFFFF
_U64 = 0xFFFFFFFFFFFFFFFF
_HEADER = 12  # uint64 length + uint32 masked CRC of the length
_FOOTER = 4  # uint32 masked CRC of the data


def _crc_table() -> list[int]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ _CRC32C_POLY if c & 1 else c >> 1
        table.append(c)
    return table


_CRC_TABLE = _crc_table()


def crc32c(data: bytes) -> int:
    """The CRC32C (Castagnoli) checksum of ``data``."""
    crc = _U32
    for byte in data:
        crc = _CRC_TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ _U32


def masked_crc(data: bytes) -> int:
    """CRC32C of ``data``, masked as TFRecord stores it: rotated right by 15 bits plus 0xA282EAD8."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + _CRC_MASK_DELTA) & _U32


def encode_varint(value: int) -> bytes:
    """Protobuf base-128 varint of a non-negative integer (7 bits a byte, low bits first)."""
    if value < 0:
        raise ValueError(f"varint of a negative number: {value}")
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def decode_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """(value, position after it) of the varint starting at ``buf[pos]``."""
    value = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def fields(message: bytes) -> Iterator[tuple[int, bytes]]:
    """(field number, payload) of each length-delimited field of a protobuf message; other fields are skipped."""
    pos = 0
    while pos < len(message):
        key, pos = decode_varint(message, pos)
        wire = key & 7
        if wire == 2:
            size, pos = decode_varint(message, pos)
            yield key >> 3, message[pos : pos + size]
            pos += size
        elif wire == 0:
            _, pos = decode_varint(message, pos)
        else:
            pos += 8 if wire == 1 else 4


def length_delimited(field: int, payload: bytes) -> bytes:
    """One serialized length-delimited protobuf field: key, varint length, payload."""
    return encode_varint(field << 3 | 2) + encode_varint(len(payload)) + payload


def read_records(path: Path) -> Iterator[bytes]:
    """The data of each record of a TFRecord file, in order (CRCs are not checked)."""
    data = path.read_bytes()
    pos = 0
    while pos < len(data):
        (size,) = struct.unpack_from("<Q", data, pos)
        yield data[pos + _HEADER : pos + _HEADER + size]
        pos += _HEADER + size + _FOOTER


def frame_record(data: bytes) -> bytes:
    """``data`` framed as one TFRecord record: length, masked CRC of the length, data, masked CRC of the data."""
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", masked_crc(length)) + data + struct.pack("<I", masked_crc(data))


def example_features(example: bytes) -> list[tuple[str, bytes]]:
    """(name, serialized Feature) of each feature of a serialized tf.train.Example, in stored order."""
    out = []
    for _, features in fields(example):
        for _, entry in fields(features):
            parts = dict(fields(entry))
            out.append((parts.get(1, b"").decode(), parts.get(2, b"")))
    return out


def encode_example(features: Iterable[tuple[str, bytes]]) -> bytes:
    """A serialized tf.train.Example of (name, serialized Feature) pairs, in the given order."""
    entries = b"".join(
        length_delimited(1, length_delimited(1, name.encode()) + length_delimited(2, value)) for name, value in features
    )
    return length_delimited(1, entries)


def drop_features(example: bytes, names: Collection[str]) -> bytes:
    """A serialized tf.train.Example re-encoded without the features named in ``names``."""
    return encode_example((name, value) for name, value in example_features(example) if name not in names)


def bytes_feature(*values: bytes) -> bytes:
    """A serialized Feature holding a BytesList of ``values``."""
    return length_delimited(1, b"".join(length_delimited(1, v) for v in values))


def int64_feature(*values: int) -> bytes:
    """A serialized Feature holding a (packed) Int64List of ``values``."""
    return length_delimited(3, length_delimited(1, b"".join(encode_varint(v & _U64) for v in values)))


def bytes_list_values(feature: bytes) -> list[bytes]:
    """The values of a serialized Feature's BytesList (empty for another kind of feature)."""
    return [value for number, blist in fields(feature) if number == 1 for _, value in fields(blist)]
