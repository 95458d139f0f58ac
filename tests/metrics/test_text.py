"""Tests of podium.metrics.text: hand examples, references, perfect scores, row order."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from metric_helpers import FAST, cells
from sklearn.metrics import jaccard_score
from sklearn.preprocessing import MultiLabelBinarizer

from podium.errors import InvalidSubmissionError
from podium.metrics.text import (
    encode_tokens,
    mean_levenshtein,
    mean_word_jaccard,
    normalized_sequence_levenshtein,
)


def slow_levenshtein(a: Sequence[object], b: Sequence[object]) -> int:
    """Textbook dynamic programme over elements (characters or integers)."""
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, start=1):
        current = [i]
        for j, y in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


@st.composite
def aligned_rows(draw: st.DrawFn, row: st.SearchStrategy[str]):
    n = draw(st.integers(1, 15))
    true = draw(st.lists(row, min_size=n, max_size=n))
    pred = draw(st.lists(row, min_size=n, max_size=n))
    perm = np.array(draw(st.permutations(range(n))), dtype=np.int64)
    return cells(*true), cells(*pred), perm


# ---------------------------------------------------------------- character Levenshtein


def test_levenshtein_hand_examples() -> None:
    assert mean_levenshtein(cells("kitten", "", "abc"), cells("sitting", "ab", "abc")) == (
        pytest.approx((3 + 2 + 0) / 3)
    )
    assert mean_levenshtein(cells("InChI=1S/H2O/h1H2"), cells("InChI=1S/H2O/h1H2")) == 0.0


def test_levenshtein_rejects_unaligned_rows() -> None:
    with pytest.raises(ValueError, match="row counts"):
        mean_levenshtein(cells("a", "b"), cells("a"))


@FAST
@given(aligned_rows(st.text(alphabet="abcé 字\t", max_size=12)))
def test_levenshtein_matches_dynamic_programme(case) -> None:
    true, pred, perm = case
    expected = np.mean([slow_levenshtein(t, p) for t, p in zip(true, pred, strict=True)])
    assert mean_levenshtein(true, pred) == pytest.approx(expected)
    assert mean_levenshtein(true[perm], pred[perm]) == pytest.approx(expected)
    assert mean_levenshtein(true, true.copy()) == 0.0


# ---------------------------------------------------------------- sequence Levenshtein


def test_sequence_levenshtein_hand_examples() -> None:
    # row 0: one deletion; row 1: "04" is the integer 4, plus one insertion -> 2 edits / 4 elements
    score = normalized_sequence_levenshtein(cells("1 2 3", "4"), cells("1 3", "04 5"))
    assert score == pytest.approx(2 / 4)
    # elements, not characters: 10 -> 1 is one substitution, not one deletion
    assert normalized_sequence_levenshtein(cells("10 2"), cells("1 2")) == pytest.approx(1 / 2)
    assert normalized_sequence_levenshtein(cells("5 6", ""), cells("", "7")) == pytest.approx(3 / 2)
    assert math.isnan(normalized_sequence_levenshtein(cells(""), cells("1")))


def test_sequence_levenshtein_rejects_non_integer_tokens() -> None:
    with pytest.raises(InvalidSubmissionError, match="integer") as info:
        normalized_sequence_levenshtein(cells("1 2", "3"), cells("1 2", "3 x 2.0"))
    assert info.value.examples == ["row 1: 'x'", "row 1: '2.0'"]
    with pytest.raises(ValueError) as bad_answers:
        normalized_sequence_levenshtein(cells("1 y"), cells("1 2"))
    assert not isinstance(bad_answers.value, InvalidSubmissionError)


@FAST
@given(aligned_rows(st.lists(st.integers(1, 20), max_size=10).map(lambda s: " ".join(map(str, s)))))
def test_sequence_levenshtein_matches_dynamic_programme(case) -> None:
    true, pred, perm = case
    total = sum(len(t.split()) for t in true)
    distances = [
        slow_levenshtein([int(x) for x in t.split()], [int(x) for x in p.split()])
        for t, p in zip(true, pred, strict=True)
    ]
    got = normalized_sequence_levenshtein(true, pred)
    if total == 0:
        assert math.isnan(got)
        return
    assert got == pytest.approx(sum(distances) / total)
    assert normalized_sequence_levenshtein(true[perm], pred[perm]) == pytest.approx(got)
    assert normalized_sequence_levenshtein(true, true.copy()) == 0.0


# ---------------------------------------------------------------- word Jaccard


def test_jaccard_hand_examples() -> None:
    true = cells("The cat sat", "", "", "a  b")
    pred = cells("the CAT ran", "", "x", "b a a")
    # row 0: {the, cat} / {the, cat, sat, ran} = 1/2; row 1 both empty; row 2: 0; row 3: 1
    assert mean_word_jaccard(true, pred) == pytest.approx((0.5 + 0 + 0 + 1) / 4)
    assert mean_word_jaccard(true, pred, both_empty=1.0) == pytest.approx((0.5 + 1 + 0 + 1) / 4)
    assert math.isnan(mean_word_jaccard(true, pred, both_empty=math.nan))
    assert mean_word_jaccard(cells("", ""), cells("", "")) == 0.0


def test_jaccard_splits_on_unicode_whitespace_and_keeps_scripts() -> None:
    true = cells("नमस्ते\u00a0दुनिया", "தமிழ்")
    pred = cells("नमस्ते दुनिया", "தமிழ் நாடு")
    assert mean_word_jaccard(true, pred) == pytest.approx((1 + 0.5) / 2)


@FAST
@given(aligned_rows(st.lists(st.sampled_from(["a", "A", "b", "c", "Dé", "dÉ"]), max_size=5).map(" ".join)))
def test_jaccard_matches_sklearn_and_ignores_row_order(case) -> None:
    true, pred, perm = case
    true_sets = [set(t.lower().split()) for t in true]
    pred_sets = [set(p.lower().split()) for p in pred]
    scored = [i for i in range(len(true)) if true_sets[i] or pred_sets[i]]
    got = mean_word_jaccard(true, pred, both_empty=0.5)
    expected_scored = 0.0
    if scored:
        # two never-used labels keep the indicator matrix multilabel even with one word
        vocabulary = set().union(*true_sets, *pred_sets, {"<unused-1>", "<unused-2>"})
        binarizer = MultiLabelBinarizer().fit([vocabulary])
        expected_scored = jaccard_score(
            binarizer.transform([true_sets[i] for i in scored]),
            binarizer.transform([pred_sets[i] for i in scored]),
            average="samples",
        )
    n_empty = len(true) - len(scored)
    expected = (expected_scored * len(scored) + 0.5 * n_empty) / len(true)
    assert got == pytest.approx(expected)
    assert mean_word_jaccard(true[perm], pred[perm], both_empty=0.5) == pytest.approx(expected)
    assert mean_word_jaccard(true, true.copy(), both_empty=1.0) == 1.0


# ---------------------------------------------------------------- tokeniser


def test_encode_tokens_shares_one_vocabulary() -> None:
    (first, second), size = encode_tokens(cells("b a", "", "A"), cells("a c"), lower=True)
    assert size == 3
    assert first.codes.tolist() == [0, 1, 1]
    assert first.rows.tolist() == [0, 0, 2]
    assert first.counts.tolist() == [2, 0, 1]
    assert first.positions.tolist() == [0, 1, 0]
    assert second.codes.tolist() == [1, 2]
    assert encode_tokens(cells(""))[1] == 1  # never 0: it is a key modulus


# --- the tokeniser: Arrow path (ASCII text) against the Python path (str.split) -----------------------

_TOKEN_TEXT = st.text(st.sampled_from(list("ab AB01\t\n\r\v\f")), max_size=12)


def _python_tokens(*columns: np.ndarray, lower: bool = False):  # type: ignore[no-untyped-def]
    from podium.metrics import text

    fast, text._encode_ascii = text._encode_ascii, lambda columns: None
    try:
        return text.encode_tokens(*columns, lower=lower)
    finally:
        text._encode_ascii = fast


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_TOKEN_TEXT, _TOKEN_TEXT), min_size=1, max_size=8), st.booleans())
def test_arrow_tokeniser_matches_str_split(rows: list[tuple[str, str]], lower: bool) -> None:
    from podium.metrics import text

    left = np.array([a for a, _ in rows], dtype=object)
    right = np.array([b for _, b in rows], dtype=object)
    lowered = [np.array([c.lower() for c in col], dtype=object) if lower else col for col in (left, right)]
    fast = text._encode_ascii(lowered)
    assert fast is not None  # ASCII text takes the Arrow path
    (slow_left, slow_right), slow_size = _python_tokens(left, right, lower=lower)
    assert fast[1] == slow_size
    for got, want in zip(fast[0], (slow_left, slow_right), strict=True):
        assert got.codes.tolist() == want.codes.tolist()
        assert got.rows.tolist() == want.rows.tolist() and got.counts.tolist() == want.counts.tolist()


def test_tokeniser_leaves_non_ascii_and_odd_separators_to_python() -> None:
    from podium.metrics import text

    for cell in ("caf\u00e9 au lait", "a\u00a0b", "a\x1cb", "a\u3000b"):
        column = np.array([cell, "x y"], dtype=object)
        assert text._encode_ascii([column]) is None
        (table,), _ = text.encode_tokens(column)
        assert table.counts.tolist() == [len(cell.split()), 2]
