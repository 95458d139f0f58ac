import numpy as np
import pytest

from podium.competition import Column
from podium.errors import InvalidSubmissionError
from podium.grading.align import align
from podium.grading.columns import as_numpy, convert_column


def _obj(*values: str) -> np.ndarray:
    return np.array(values, dtype=object)


def test_align_pairs_rows_by_key() -> None:
    answers = _obj("c", "a", "b")
    submission = _obj("b", "c", "a")
    a = align(answers, submission)
    assert list(answers[a.answer_order]) == list(submission[a.submission_order])


@pytest.mark.parametrize(
    ("submission", "message"),
    [
        (_obj("a", "b"), "have no prediction"),
        (_obj("a", "b", "c", "d"), "not in the test set"),
        (_obj("a", "b", "c", "c"), "more than one row"),
    ],
)
def test_align_rejects_bad_keys(submission: np.ndarray, message: str) -> None:
    with pytest.raises(InvalidSubmissionError, match=message):
        align(_obj("a", "b", "c"), submission)


def test_align_error_names_offending_ids() -> None:
    with pytest.raises(InvalidSubmissionError) as info:
        align(_obj("a", "b", "c"), _obj("a", "b", "zzz-unknown"))
    assert "zzz-unknown" in str(info.value) and "Fix" in str(info.value)


def test_align_with_duplicate_keys_pairs_in_file_order() -> None:
    answers = _obj("x", "y", "x")
    a = align(answers, _obj("y", "x", "x"), duplicate_ids=True)
    assert list(a.answer_order) == [0, 2, 1]
    assert list(a.submission_order) == [1, 2, 0]
    with pytest.raises(InvalidSubmissionError):
        align(answers, _obj("y", "x", "y"), duplicate_ids=True)


def test_align_ignores_extra_keys_when_allowed() -> None:
    a = align(_obj("a", "b"), _obj("b", "zzz", "a"), extra_ids=True)
    assert a.ignored_extra_rows == 1 and list(a.submission_order) == [2, 0]


def test_probability_column_rules() -> None:
    col = Column("p", "probability")
    assert list(convert_column(col, _obj("0", " 0.25", "1"))) == [0.0, 0.25, 1.0]
    with pytest.raises(InvalidSubmissionError, match=r"\[0, 1\].*1.5"):
        convert_column(col, _obj("0.2", "1.5"))
    with pytest.raises(InvalidSubmissionError, match="NaN"):
        convert_column(col, _obj("0.2", "nan"))
    with pytest.raises(InvalidSubmissionError, match=r"not numbers.*'abc'"):
        convert_column(col, _obj("0.2", "abc"), keys=_obj("id1", "id2"))


def test_int_bool_and_rle_columns() -> None:
    assert list(convert_column(Column("k", "int"), _obj("3", "4.0"))) == [3, 4]
    with pytest.raises(InvalidSubmissionError, match="whole numbers"):
        convert_column(Column("k", "int"), _obj("3.5"))
    assert list(convert_column(Column("b", "bool"), _obj("True", "false", "1"))) == [True, False, True]
    with pytest.raises(InvalidSubmissionError, match="True or False"):
        convert_column(Column("b", "bool"), _obj("maybe"))
    assert list(as_numpy(convert_column(Column("m", "rle"), _obj("1 3 10 2", "")))) == ["1 3 10 2", ""]
    with pytest.raises(InvalidSubmissionError, match="run-length"):
        convert_column(Column("m", "rle"), _obj("1 3 10"))
    assert list(as_numpy(convert_column(Column("m", "rle", {"empty_tokens": ["-"]}), _obj("-")))) == ["-"]


def test_int_ids_compare_numerically() -> None:
    keys = convert_column(Column("id", "int_id"), _obj("00012", "7"))
    assert list(keys) == [12, 7]


@pytest.mark.parametrize(
    ("cell", "value"),
    [("1", 1.0), ("+1", 1.0), ("-0.5", -0.5), (" 2 ", 2.0), ("\t3", 3.0), (".5", 0.5), ("5.", 5.0), ("1e3", 1000.0)],
)
def test_what_a_number_is(cell: str, value: float) -> None:
    assert list(convert_column(Column("x", "float"), _obj("0", cell))) == [0.0, value]


@pytest.mark.parametrize(
    ("cell", "rule"),
    [
        ("0x10", "not numbers"),
        ("1_0", "not numbers"),
        ("1,0", "not numbers"),
        ("\u0661", "not numbers"),
        ("\uff11", "not numbers"),
        ("\u00a01", "not numbers"),
        ("NA", "not numbers"),
        ("nan(1)", "not numbers"),
        ("", "empty cells"),
        ("nan", "NaN, empty or infinite"),
        ("-inf", "NaN, empty or infinite"),
        ("Infinity", "NaN, empty or infinite"),
        ("1e999", "NaN, empty or infinite"),
    ],
)
@pytest.mark.parametrize("kind", ["float", "int", "int_id"])
def test_what_is_not_a_finite_number(cell: str, rule: str, kind: str) -> None:
    with pytest.raises(InvalidSubmissionError, match=rule):
        convert_column(Column("x", kind), _obj("1", cell))


def test_int_columns_are_exact() -> None:
    big = 2**62 + 1  # not a float
    assert list(convert_column(Column("k", "int_id"), _obj(str(big), "+7", "1e3"))) == [big, 7, 1000]
    for cell in (str(2**63), "9007199254740993.0", "1e20"):
        with pytest.raises(InvalidSubmissionError, match="too large to read exactly"):
            convert_column(Column("k", "int_id"), _obj("1", cell))


def test_typed_int_answers_with_an_empty_cell_and_a_big_value_do_not_crash() -> None:
    import pyarrow as pa

    with pytest.raises(InvalidSubmissionError, match="NaN, empty"):
        convert_column(Column("k", "int"), pa.array([None, 2**60], pa.int64()))


def test_long_cells_of_text_kinds_are_invalid() -> None:
    with pytest.raises(InvalidSubmissionError, match="longer than 1,000 characters") as info:
        convert_column(Column("l", "label"), _obj("a", "b" * 5000))
    assert len(str(info.value)) < 400
    assert list(as_numpy(convert_column(Column("l", "label"), _obj("b" * 5000), cell_caps=False))) == ["b" * 5000]
    with pytest.raises(InvalidSubmissionError, match="longer than 3 characters"):
        convert_column(Column("t", "tokens", {"max_chars": 3}), _obj("a b c"))
