from pathlib import Path

import pytest

from podium.errors import InvalidSubmissionError
from podium.grading.table import read_csv


def _write(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "s.csv"
    path.write_bytes(data)
    return path


def test_cells_are_read_as_written(tmp_path: Path) -> None:
    frame = read_csv(_write(tmp_path, b'id,x,y\n00012,NA,"a, b\nc"\n7,,  3.5 \n'))
    assert frame.n_rows == 2
    assert list(frame["id"]) == ["00012", "7"]
    assert list(frame["x"]) == ["NA", ""]
    assert list(frame["y"]) == ["a, b\nc", "  3.5 "]


def test_bom_and_header_whitespace(tmp_path: Path) -> None:
    frame = read_csv(_write(tmp_path, "\ufeffid , score\n1,0.5\n".encode()))
    assert frame.names == ["id", "score"]


def test_non_utf8_encoding_falls_back(tmp_path: Path) -> None:
    frame = read_csv(_write(tmp_path, "id,text\n1,café\n".encode("cp1252")))
    assert list(frame["text"]) == ["café"]


def test_empty_file_is_invalid(tmp_path: Path) -> None:
    with pytest.raises(InvalidSubmissionError, match="empty"):
        read_csv(_write(tmp_path, b""))


def test_ragged_rows_are_invalid_with_the_offending_line(tmp_path: Path) -> None:
    with pytest.raises(InvalidSubmissionError, match=r"Expected 2 columns, got 3.*Fix"):
        read_csv(_write(tmp_path, b"id,x\n1,2\n3,4,5\n"))


def test_duplicate_header_names_are_invalid(tmp_path: Path) -> None:
    with pytest.raises(InvalidSubmissionError, match="repeats column names"):
        read_csv(_write(tmp_path, b"id,x,x\n1,2,3\n"))


def test_a_header_field_beyond_the_csv_modules_limit_is_read(tmp_path: Path) -> None:
    name = "h" * 200_000  # Python's csv module stops at 131,072 characters a field
    frame = read_csv(_write(tmp_path, f"id,{name}\n1,2\n".encode()))
    assert frame.names == ["id", name]


def test_a_row_longer_than_a_read_block_is_read(tmp_path: Path) -> None:
    mask = "1 2 " * (5 << 20)  # 20 MB in one cell, as a large RLE mask can be
    frame = read_csv(_write(tmp_path, f"id,mask\na,{mask}\nb,\n".encode()))
    assert frame.n_rows == 2 and len(frame["mask"][0]) == len(mask)


def test_parsed_columns_keep_their_cells_as_written(tmp_path: Path) -> None:
    from podium.grading.files import open_user_file

    with open_user_file(_write(tmp_path, b"id,p\na, 0.50\nb,1e0\n")) as file:
        frame = read_csv(file, numeric={"p": "float"})
        assert list(frame["p"]) == [0.5, 1.0]
        text = frame.text("p")
        assert text is not None and text.to_pylist() == [" 0.50", "1e0"]
        assert frame.text("id") is None  # read as text already
