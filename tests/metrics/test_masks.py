"""Tests of podium.metrics.masks against slow, obviously-correct references written here."""

from __future__ import annotations

import warnings
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from metric_helpers import FAST
from scipy.spatial.distance import directed_hausdorff
from sklearn.metrics import fbeta_score

from podium.errors import InvalidSubmissionError
from podium.metrics.masks import (
    dice_hausdorff,
    global_dice_rle,
    iou_sweep_precision,
    mean_dice_rle,
    pixel_fbeta_rle,
    rle_decode,
    rle_encode,
    rle_runs,
)

# ---------------------------------------------------------------------------------------------
# Slow references
# ---------------------------------------------------------------------------------------------


def slow_decode(rle: str, shape: tuple[int, int], order: str = "F") -> np.ndarray:
    """Pixel by pixel: run k covers 1-based positions start..start+length-1."""
    flat = np.zeros(shape[0] * shape[1], dtype=bool)
    numbers = [int(t) for t in rle.split()]
    for start, length in zip(numbers[0::2], numbers[1::2], strict=True):
        for position in range(start, start + length):
            flat[position - 1] = True
    return flat.reshape(shape, order=order)


def slow_dice(t: np.ndarray, p: np.ndarray, empty: float) -> float:
    total = t.sum() + p.sum()
    return empty if total == 0 else 2 * (t & p).sum() / total


def histogram_iou(t: np.ndarray, p: np.ndarray) -> float:
    """The published kernel's IoU: 2x2 histograms of the two masks, background excluded."""
    t, p = t.astype(np.uint8).ravel(), p.astype(np.uint8).ravel()
    both = np.histogram2d(t, p, bins=(2, 2))[0]
    area_t = np.histogram(t, bins=2)[0][:, None]
    area_p = np.histogram(p, bins=2)[0][None, :]
    union = (area_t + area_p - both)[1:, 1:]
    union[union == 0] = 1e-9
    return float((both[1:, 1:] / union)[0, 0])


def slow_tgs(truths: list[np.ndarray], preds: list[np.ndarray], credit: bool) -> float:
    scores = []
    for t, p in zip(truths, preds, strict=True):
        if t.sum() == 0:
            scores.append(1.0 if p.sum() == 0 else 0.0)
            continue
        iou = histogram_iou(t, p) if credit else (t & p).sum() / (t | p).sum()
        scores.append(np.mean([iou > th for th in np.arange(0.5, 1.0, 0.05)]))
    return float(np.mean(scores))


def slow_dice_hausdorff(y_true, y_pred, ids, heights, widths, weight=0.4) -> float:
    masks = [
        (slow_decode(t, (h, w)), slow_decode(p, (h, w)))
        for t, p, h, w in zip(y_true, y_pred, heights, widths, strict=True)
    ]
    dice = [slow_dice(t, p, np.nan) for t, p in masks]
    slices: dict[str, list] = defaultdict(list)
    for i in sorted(range(len(ids)), key=lambda i: ids[i]):
        slices[ids[i]].append(masks[i])
    days: dict[str, list] = defaultdict(list)
    for slice_id in sorted(slices):
        t = np.logical_or.reduce([m[0] for m in slices[slice_id]])
        p = np.logical_or.reduce([m[1] for m in slices[slice_id]])
        days[slice_id.split("_slice_")[0]].append((t, p))
    distances = []
    for pairs in days.values():
        t = np.stack([a for a, _ in pairs])
        p = np.stack([b for _, b in pairs])
        if t.sum() == 0 and p.sum() == 0:
            distances.append(np.nan)
        elif np.array_equal(t, p):
            distances.append(0.0)
        elif t.sum() == 0 or p.sum() == 0 or p.sum() > 10 * t.sum():
            distances.append(1.0)
        else:
            a, b = np.argwhere(t) / t.shape, np.argwhere(p) / p.shape
            d = max(directed_hausdorff(a, b)[0], directed_hausdorff(b, a)[0])
            distances.append(d / np.sqrt(3))
    with warnings.catch_warnings():  # nanmean of nothing but NaN is NaN, with a warning
        warnings.simplefilter("ignore", RuntimeWarning)
        return weight * np.nanmean(dice) + (1 - weight) * (1 - np.nanmean(distances))


# ---------------------------------------------------------------------------------------------
# Strategies
# ---------------------------------------------------------------------------------------------


def masks_of(shape: tuple[int, int]) -> st.SearchStrategy[np.ndarray]:
    sparse = hnp.arrays(bool, shape, elements=st.sampled_from([False, False, False, True]))
    return st.one_of(sparse, hnp.arrays(bool, shape), st.just(np.zeros(shape, bool)))


@st.composite
def mask_pairs(draw, max_rows: int = 6, fixed_shape: tuple[int, int] | None = None):
    """Rows of (truth, prediction) masks with per-row shapes; predictions often near the truth."""
    n = draw(st.integers(1, max_rows))
    truths, preds, shapes = [], [], []
    for _ in range(n):
        shape = fixed_shape or (draw(st.integers(1, 7)), draw(st.integers(1, 7)))
        t = draw(masks_of(shape))
        p = draw(st.one_of(masks_of(shape), st.just(t.copy()), st.just(np.roll(t, 1))))
        truths.append(t)
        preds.append(p)
        shapes.append(shape)
    return truths, preds, shapes


def encode_all(masks: list[np.ndarray], order: str = "F") -> np.ndarray:
    return np.array([rle_encode(m, order) for m in masks], dtype=object)


def hw(shapes):
    return np.array([s[0] for s in shapes]), np.array([s[1] for s in shapes])


def permuted(rng: np.random.Generator, *arrays):
    perm = rng.permutation(len(arrays[0]))
    return [np.asarray(a)[perm] for a in arrays]


# ---------------------------------------------------------------------------------------------
# RLE helpers
# ---------------------------------------------------------------------------------------------


def test_encode_small_examples():
    m = np.array([[1, 0, 1], [1, 0, 0]], dtype=bool)
    assert rle_encode(m) == "1 2 5 1"  # column-major: (0,0) (1,0) | (0,2)
    assert rle_encode(m, "C") == "1 1 3 2"  # row-major: (0,0) | (0,2) (1,0)
    assert rle_encode(np.zeros((3, 3))) == ""
    assert rle_encode(np.ones((2, 2))) == "1 4"


def test_decode_small_examples():
    expected = np.array([[1, 0, 1], [1, 0, 0]], dtype=bool)
    np.testing.assert_array_equal(rle_decode("1 2 5 1", (2, 3)), expected)
    np.testing.assert_array_equal(rle_decode("1 1 3 2", (2, 3), order="C"), expected)
    np.testing.assert_array_equal(rle_decode("", (2, 3)), np.zeros((2, 3), bool))
    np.testing.assert_array_equal(rle_decode("  ", (2, 3)), np.zeros((2, 3), bool))
    # touching runs are allowed; the whole image is one run
    assert rle_decode("1 2 3 4", (2, 3)).all()
    assert rle_decode("1 6", (2, 3)).all()


@FAST
@given(st.integers(1, 9), st.integers(1, 9), st.data(), st.sampled_from(["F", "C"]))
def test_encode_decode_round_trip(h, w, data, order):
    mask = data.draw(masks_of((h, w)))
    rle = rle_encode(mask, order)
    np.testing.assert_array_equal(rle_decode(rle, (h, w), order), mask)
    np.testing.assert_array_equal(slow_decode(rle, (h, w), order), mask)


@pytest.mark.parametrize(
    ("cell", "problem"),
    [
        ("1 2 3", "multiple of 2"),
        ("1 x", "integer"),
        ("1.5 2", "integer"),
        ("0 2", "start is below 1"),
        ("-1 2", "start is below 1"),
        ("1 0", "length is below 1"),
        ("5 1 1 1", "ascending"),
        ("3 1 3 1", "ascending"),
        ("1 3 3 1", "overlaps"),
        ("7 1", "last pixel"),
        ("6 2", "last pixel"),
        ("99999999999999999999 1", "integer"),  # beyond int64: not a number, not the largest int64
        ("1 9223372036854775807", "last pixel"),
    ],
)
def test_malformed_prediction_names_row_and_problem(cell, problem):
    cells = ["1 1", cell]
    with pytest.raises(InvalidSubmissionError) as info:
        rle_runs(cells, [6, 6])
    assert problem in info.value.rule
    assert info.value.examples and info.value.examples[0].startswith("row 2")
    # the same defect in the answers is not the submission's fault
    with pytest.raises(ValueError) as info_answers:
        rle_runs(cells, [6, 6], answers=True)
    assert not isinstance(info_answers.value, InvalidSubmissionError)


def test_malformed_prediction_in_a_metric_is_invalid_submission():
    with pytest.raises(InvalidSubmissionError):
        mean_dice_rle(
            np.array(["1 2"], dtype=object),
            np.array(["2 2 1 1"], dtype=object),
            heights=np.array([3]),
            widths=np.array([3]),
        )
    with pytest.raises(ValueError) as info:
        mean_dice_rle(
            np.array(["2 2 1 1"], dtype=object),
            np.array(["1 2"], dtype=object),
            heights=np.array([3]),
            widths=np.array([3]),
        )
    assert not isinstance(info.value, InvalidSubmissionError)


def test_unusual_but_valid_integers_take_the_slow_path():
    # text the C parser rejects but the token parser reads is still accepted
    runs = rle_runs(["1 2\u00a04 1", "10 1"], [20, 20])
    np.testing.assert_array_equal(runs.starts, [0, 3, 9])
    np.testing.assert_array_equal(runs.ends, [2, 4, 10])
    np.testing.assert_array_equal(runs.rows, [0, 0, 1])


@pytest.mark.parametrize("token", ["1_0", "\u0661\u0660", "\uff11\uff10", "0x10"])
def test_integers_are_ascii_digits_without_separators(token: str) -> None:
    # one definition of a number (podium.submission): Python's int() would read all of these
    with pytest.raises(InvalidSubmissionError, match="must be an integer"):
        rle_runs([f"{token} 1"], [20])


def test_bad_order_is_rejected():
    with pytest.raises(ValueError, match="order"):
        rle_decode("1 1", (2, 2), order="X")


# ---------------------------------------------------------------------------------------------
# mean_dice_rle (hubmap)
# ---------------------------------------------------------------------------------------------


def test_mean_dice_hand_example():
    y_true = np.array(["1 3", "", "2 2", "1 4"], dtype=object)
    y_pred = np.array(["2 3", "", "", "1 4"], dtype=object)
    kw = {"heights": np.full(4, 2), "widths": np.full(4, 3)}
    # 2*2/6, both empty -> 1, 0, 1
    assert mean_dice_rle(y_true, y_pred, **kw) == pytest.approx((2 / 3 + 1 + 0 + 1) / 4)
    assert mean_dice_rle(y_true, y_pred, empty_score=0.0, **kw) == pytest.approx((2 / 3 + 1) / 4)


@FAST
@given(mask_pairs(), st.sampled_from([0.0, 1.0]), st.integers(0, 2**31))
def test_mean_dice_matches_reference(pairs, empty_score, seed):
    truths, preds, shapes = pairs
    heights, widths = hw(shapes)
    y_true, y_pred = encode_all(truths), encode_all(preds)
    expected = np.mean([slow_dice(t, p, empty_score) for t, p in zip(truths, preds, strict=True)])
    got = mean_dice_rle(y_true, y_pred, heights=heights, widths=widths, empty_score=empty_score)
    assert got == pytest.approx(expected, abs=1e-12)
    assert mean_dice_rle(y_true, y_true, heights=heights, widths=widths) == 1.0
    t, p, h, w = permuted(np.random.default_rng(seed), y_true, y_pred, heights, widths)
    assert mean_dice_rle(t, p, heights=h, widths=w, empty_score=empty_score) == pytest.approx(got)


def test_mean_dice_on_a_huge_image_needs_no_mask():
    # a 30000 x 40000 slide: runs are intersected, never painted
    size = 30_000 * 40_000
    y_true = np.array([f"1 10 {size - 99} 100"], dtype=object)
    y_pred = np.array([f"6 10 {size - 49} 50"], dtype=object)
    got = mean_dice_rle(y_true, y_pred, heights=np.array([30_000]), widths=np.array([40_000]))
    assert got == pytest.approx(2 * (5 + 50) / (110 + 60))


# ---------------------------------------------------------------------------------------------
# global_dice_rle (contrails)
# ---------------------------------------------------------------------------------------------


def test_global_dice_hand_example():
    y_true = np.array(["1 3", "-", "2 2"], dtype=object)
    y_pred = np.array(["2 3", "1 1", ""], dtype=object)
    kw = {"heights": np.full(3, 2), "widths": np.full(3, 3)}
    assert global_dice_rle(y_true, y_pred, **kw) == pytest.approx(2 * 2 / (5 + 4))
    empty = np.array(["-", "", "-"], dtype=object)
    assert np.isnan(global_dice_rle(empty, empty, **kw))
    assert global_dice_rle(empty, y_pred, **kw) == 0.0


@FAST
@given(mask_pairs(), st.integers(0, 2**31))
def test_global_dice_matches_reference(pairs, seed):
    truths, preds, shapes = pairs
    heights, widths = hw(shapes)
    y_true = np.array([rle_encode(m) or "-" for m in truths], dtype=object)
    y_pred = encode_all(preds)
    both = sum(int((t & p).sum()) for t, p in zip(truths, preds, strict=True))
    total = sum(int(t.sum() + p.sum()) for t, p in zip(truths, preds, strict=True))
    got = global_dice_rle(y_true, y_pred, heights=heights, widths=widths)
    if total == 0:
        assert np.isnan(got)
        return
    assert got == pytest.approx(2 * both / total, abs=1e-12)
    if any(t.any() for t in truths):
        assert global_dice_rle(y_true, y_true, heights=heights, widths=widths) == 1.0
    t, p, h, w = permuted(np.random.default_rng(seed), y_true, y_pred, heights, widths)
    assert global_dice_rle(t, p, heights=h, widths=w) == pytest.approx(got)


# ---------------------------------------------------------------------------------------------
# iou_sweep_precision (tgs)
# ---------------------------------------------------------------------------------------------


def test_iou_sweep_hand_examples():
    shape = {"height": 2, "width": 5}
    empty, full = "", "1 10"
    cases = [
        ("", "", 1.0),  # truth empty, prediction empty
        ("", "1 1", 0.0),  # truth empty, prediction not
        ("1 10", "1 10", 1.0),  # perfect
        ("1 8", "1 6", 0.5),  # IoU 0.75: > 0.50 .. 0.70, not > 0.75 (strict)
        ("1 10", "1 5", 0.0),  # IoU 0.5 is not > 0.5
    ]
    for t, p, expected in cases:
        got = iou_sweep_precision(np.array([t], object), np.array([p], object), **shape)
        assert got == pytest.approx(expected), (t, p)
    # the published quirk: an empty prediction earns |truth| / (h * w) as IoU
    truth = np.array(["1 8", full], dtype=object)
    pred = np.array([empty, empty], dtype=object)
    assert iou_sweep_precision(truth, pred, **shape) == pytest.approx((0.6 + 1.0) / 2)
    quirk_off = iou_sweep_precision(truth, pred, empty_prediction_credit=False, **shape)
    assert quirk_off == 0.0


def test_iou_sweep_default_shape_is_101():
    truth = np.array(["1 10201"], dtype=object)
    assert iou_sweep_precision(truth, truth) == 1.0
    with pytest.raises(InvalidSubmissionError):
        iou_sweep_precision(truth, np.array(["1 10202"], dtype=object))


@FAST
@given(mask_pairs(max_rows=8, fixed_shape=(6, 7)), st.booleans(), st.integers(0, 2**31))
def test_iou_sweep_matches_reference(pairs, credit, seed):
    truths, preds, _ = pairs
    y_true, y_pred = encode_all(truths), encode_all(preds)
    kw = {"height": 6, "width": 7, "empty_prediction_credit": credit}
    got = iou_sweep_precision(y_true, y_pred, **kw)
    assert got == pytest.approx(slow_tgs(truths, preds, credit), abs=1e-12)
    assert iou_sweep_precision(y_true, y_true, **kw) == 1.0
    t, p = permuted(np.random.default_rng(seed), y_true, y_pred)
    assert iou_sweep_precision(t, p, **kw) == pytest.approx(got)


# ---------------------------------------------------------------------------------------------
# pixel_fbeta_rle (vesuvius)
# ---------------------------------------------------------------------------------------------


def test_fbeta_hand_example():
    # tp 2, fp 1, fn 1: P = R = 2/3, F = 2/3 for every beta
    y_true = np.array(["1 3", "", ""], dtype=object)
    y_pred = np.array(["2 3", "", "1 1"], dtype=object)
    kw = {"heights": np.full(3, 2), "widths": np.full(3, 3)}
    assert pixel_fbeta_rle(y_true, y_pred, **kw) == pytest.approx((2 / 3 + 0 + 0) / 3)
    assert pixel_fbeta_rle(y_true[:1], y_true[:1], **{k: v[:1] for k, v in kw.items()}) == 1.0


@FAST
@given(mask_pairs(), st.sampled_from([0.5, 1.0, 2.0]), st.integers(0, 2**31))
def test_fbeta_matches_sklearn(pairs, beta, seed):
    truths, preds, shapes = pairs
    heights, widths = hw(shapes)
    y_true, y_pred = encode_all(truths, "C"), encode_all(preds, "C")
    expected = np.mean(
        [fbeta_score(t.ravel(), p.ravel(), beta=beta, zero_division=0) for t, p in zip(truths, preds, strict=True)]
    )
    got = pixel_fbeta_rle(y_true, y_pred, heights=heights, widths=widths, beta=beta)
    assert got == pytest.approx(expected, abs=1e-12)
    t, p, h, w = permuted(np.random.default_rng(seed), y_true, y_pred, heights, widths)
    assert pixel_fbeta_rle(t, p, heights=h, widths=w, beta=beta) == pytest.approx(got)


# ---------------------------------------------------------------------------------------------
# dice_hausdorff (uw-madison)
# ---------------------------------------------------------------------------------------------


def test_dice_hausdorff_hand_examples():
    ids = np.array(["case1_day1_slice_0001", "case1_day1_slice_0002"], dtype=object)
    kw = {"ids": ids, "heights": np.array([2, 2]), "widths": np.array([2, 2])}
    truth = np.array(["1 1", ""], dtype=object)
    assert dice_hausdorff(truth, truth, **kw) == pytest.approx(1.0)  # identical: distance 0
    # one voxel at (0,0,0) vs one at (1,1,1) of a 2x2x2 volume: distance sqrt(3)/2 -> 0.5
    got = dice_hausdorff(truth, np.array(["", "4 1"], dtype=object), **kw)
    assert got == pytest.approx(0.4 * 0.0 + 0.6 * (1 - 0.5))
    # empty prediction: Hausdorff 1, Dice 0 (the second row is skipped)
    assert dice_hausdorff(truth, np.array(["", ""], dtype=object), **kw) == pytest.approx(0.0)
    # more than 10x the true voxels: Hausdorff 1 without computing it
    big = np.array(["1 1", ""], dtype=object)
    tiny_truth = np.array(["1 1", ""], dtype=object)
    kw_big = {"ids": ids, "heights": np.array([4, 4]), "widths": np.array([4, 4])}
    got = dice_hausdorff(tiny_truth, np.array(["1 12", ""], dtype=object), **kw_big)
    assert got == pytest.approx(0.4 * (2 / 13) + 0.6 * 0.0)
    assert dice_hausdorff(tiny_truth, big, **kw_big) == pytest.approx(1.0)


def test_dice_hausdorff_all_empty_is_undefined():
    empty = np.array(["", ""], dtype=object)
    kw = {"ids": np.array(["c1_d1_slice_1", "c1_d1_slice_2"]), "heights": [2, 2], "widths": [2, 2]}
    assert np.isnan(dice_hausdorff(empty, empty, **kw))


def test_dice_hausdorff_rejects_mixed_slice_sizes_within_a_day():
    cells = np.array(["1 1", "1 1"], dtype=object)
    ids = np.array(["c1_d1_slice_1", "c1_d1_slice_2"])
    with pytest.raises(ValueError, match="case-day"):
        dice_hausdorff(cells, cells, ids=ids, heights=np.array([2, 3]), widths=np.array([2, 2]))


@st.composite
def uw_rows(draw):
    """Rows of (id, class) over a few case-days, each day with its own slice shape."""
    n_days = draw(st.integers(1, 3))
    rows = []
    for day in range(n_days):
        shape = (draw(st.integers(2, 5)), draw(st.integers(2, 5)))
        n_slices = draw(st.integers(1, 3))
        for s in range(n_slices):
            for _ in range(draw(st.integers(1, 3))):  # classes of this slice
                rows.append((f"case{day % 2}_day{day}_slice_{s:04d}", shape))
    truths, preds = [], []
    for _, shape in rows:
        t = draw(masks_of(shape))
        truths.append(t)
        preds.append(draw(st.one_of(masks_of(shape), st.just(t.copy()), st.just(np.roll(t, 1)))))
    return [r[0] for r in rows], truths, preds, [r[1] for r in rows]


@FAST
@given(uw_rows(), st.integers(0, 2**31))
def test_dice_hausdorff_matches_reference(rows, seed):
    ids, truths, preds, shapes = rows
    heights, widths = hw(shapes)
    y_true, y_pred = encode_all(truths), encode_all(preds)
    ids = np.array(ids, dtype=object)
    kw = {"ids": ids, "heights": heights, "widths": widths}
    expected = slow_dice_hausdorff(list(y_true), list(y_pred), list(ids), heights, widths)
    got = dice_hausdorff(y_true, y_pred, **kw)
    if np.isnan(expected):
        assert np.isnan(got)
        return
    assert got == pytest.approx(expected, abs=1e-12)
    if any(t.any() for t in truths):
        assert dice_hausdorff(y_true, y_true, **kw) == pytest.approx(1.0)
    t, p, i, h, w = permuted(np.random.default_rng(seed), y_true, y_pred, ids, heights, widths)
    assert dice_hausdorff(t, p, ids=i, heights=h, widths=w) == pytest.approx(got, abs=1e-12)
