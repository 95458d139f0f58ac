"""Tests of podium.metrics.detection against slow, obviously-correct references written here."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from metric_helpers import FAST
from shapely.geometry import Polygon
from sklearn.metrics import average_precision_score

from podium.errors import InvalidSubmissionError
from podium.metrics.detection import coco_map, point_in_box_f1, voc_map
from podium.metrics.detection3d import map_3d

_LYFT = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)


def cells(rows: list[list[tuple]]) -> np.ndarray:
    return np.array([" ".join(" ".join(map(str, obj)) for obj in row) for row in rows], dtype=object)


def permuted(seed: int, *arrays: np.ndarray) -> list[np.ndarray]:
    perm = np.random.default_rng(seed).permutation(len(arrays[0]))
    return [a[perm] for a in arrays]


# ---------------------------------------------------------------------------------------------
# Strategies: true objects, and predictions that copy, jitter, drop or invent them
# ---------------------------------------------------------------------------------------------

coordinate = st.integers(0, 30)
extent = st.integers(1, 15)
confidence = st.floats(0.01, 1.0, allow_nan=False).map(lambda c: round(c, 6))


@st.composite
def corner_boxes(draw, labels: list[str]):
    x, y, w, h = draw(coordinate), draw(coordinate), draw(extent), draw(extent)
    return (draw(st.sampled_from(labels)), x, y, x + w, y + h)


@st.composite
def box_rows(draw, labels: list[str]):
    """Rows of (truth objects, predicted objects) in "label x0 y0 x1 y1" form (+ confidence).

    Every row predicts something: the published graders of both box metrics reject empty cells.
    """
    n = draw(st.integers(1, 6))
    truths, preds = [], []
    for _ in range(n):
        truth = draw(st.lists(corner_boxes(labels), min_size=0, max_size=4))
        pred = []
        for label, x0, y0, x1, y1 in truth:
            if draw(st.booleans()):
                dx, dy = draw(st.integers(-2, 2)), draw(st.integers(-2, 2))
                pred.append((label, draw(confidence), x0 + dx, y0 + dy, x1 + dx, y1 + dy))
        pred += [(b[0], draw(confidence), *b[1:]) for b in draw(st.lists(corner_boxes(labels), max_size=3))]
        if not pred:
            pred = [(labels[0], 0.5, 0, 0, 1, 1)]
        truths.append(truth)
        preds.append(draw(st.permutations(pred)))
    return truths, preds


# ---------------------------------------------------------------------------------------------
# coco_map (vinbigdata): reference = COCOeval's algorithm written out for one IoU threshold
# ---------------------------------------------------------------------------------------------


def xywh_iou(d, g) -> float:
    iw = min(d[0] + d[2], g[0] + g[2]) - max(d[0], g[0])
    ih = min(d[1] + d[3], g[1] + g[3]) - max(d[1], g[1])
    inter = max(iw, 0) * max(ih, 0)
    return inter / (d[2] * d[3] + g[2] * g[3] - inter)


def slow_coco(truths, preds, threshold, quirk) -> float:
    """COCO bbox AP: per (image, class) greedy matching by score (IoU >= t, ties to the last
    true box), then pooled precision at 101 recall points; mean over classes with truth."""

    def box(x0, y0, x1, y1):
        return (x0, y0, x1, y1) if quirk else (x0, y0, x1 - x0, y1 - y0)

    classes = sorted({int(t[0]) for row in truths for t in row})
    aps = []
    for c in classes:
        scored, n_true = [], 0
        for truth, pred in zip(truths, preds, strict=True):
            gts = [box(*t[2:]) for t in truth if int(t[0]) == c]
            dts = sorted([p for p in pred if int(p[0]) == c], key=lambda p: -p[1])[:100]
            n_true += len(gts)
            taken = [False] * len(gts)
            for p in dts:
                best, m = min(threshold, 1 - 1e-10), -1
                for g, gt in enumerate(gts):
                    if taken[g]:
                        continue
                    iou = xywh_iou(box(*p[2:]), gt)
                    if iou >= best:
                        best, m = iou, g
                if m >= 0:
                    taken[m] = True
                scored.append((p[1], m >= 0))
        if n_true == 0:
            continue
        order = np.argsort([-s for s, _ in scored], kind="mergesort")
        hits = np.array([scored[i][1] for i in order], dtype=float)
        tp, fp = np.cumsum(hits), np.cumsum(1 - hits)
        recall, precision = tp / n_true, tp / (tp + fp + np.spacing(1))
        precision = [max(precision[i:]) for i in range(len(precision))]
        q = []
        for r in np.linspace(0, 1, 101):
            i = int(np.searchsorted(recall, r, side="left"))
            q.append(precision[i] if i < len(precision) else 0.0)
        aps.append(np.mean(q))
    return float(np.mean(aps))


def to_vinbig(rows, with_confidence: bool):
    """Integer class ids for COCO; the answers carry confidence 1."""
    return [[(int(o[0]), *((o[1:]) if with_confidence else (1.0, *o[1:]))) for o in row] for row in rows]


def test_coco_hand_examples():
    truth = cells([[(14, 1, 0, 0, 1, 1)], [(0, 1, 10, 10, 50, 60), (3, 1, 5, 5, 20, 20)]])
    assert coco_map(truth, truth) == pytest.approx(1.0)
    assert coco_map(truth, truth, corners_as_xywh=False) == pytest.approx(1.0)
    # class 14 found, class 0 shifted by 2 (IoU 0.89 as published, 0.90 converted), class 3 missed
    pred = cells([[(14, 0.9, 0, 0, 1, 1)], [(0, 0.5, 12, 10, 52, 60), (3, 0.3, 50, 50, 60, 60)]])
    assert coco_map(truth, pred) == pytest.approx(2 / 3)
    # a shift that keeps the published (x_max-as-width) IoU above 0.4 but not the real one
    truth = cells([[(0, 1, 100, 100, 110, 110)]])
    shifted = cells([[(0, 1, 106, 106, 116, 116)]])
    assert coco_map(truth, shifted) == pytest.approx(1.0)
    assert coco_map(truth, shifted, corners_as_xywh=False) == 0.0
    assert coco_map(truth, shifted, iou_threshold=0.99) == 0.0


def test_coco_rejects_malformed_predictions():
    truth = cells([[(0, 1, 0, 0, 5, 5)]])
    for bad in ["0 1 0 0 5", "0 x 0 0 5 5", "0.5 1 0 0 5 5", "", "0 nan 0 0 5 5"]:
        with pytest.raises(InvalidSubmissionError):
            coco_map(truth, np.array([bad], dtype=object))
    with pytest.raises(ValueError) as info:
        coco_map(np.array(["0 1 0 0 5"], dtype=object), truth)
    assert not isinstance(info.value, InvalidSubmissionError)


@FAST
@given(box_rows(["0", "1", "2"]), st.floats(0.3, 0.7), st.booleans(), st.integers(0, 2**31))
def test_coco_matches_reference(rows, threshold, quirk, seed):
    truths, preds = to_vinbig(rows[0], False), to_vinbig(rows[1], True)
    y_true, y_pred = cells(truths), cells(preds)
    got = coco_map(y_true, y_pred, iou_threshold=threshold, corners_as_xywh=quirk)
    if not any(truths):
        assert np.isnan(got)
        return
    assert got == pytest.approx(slow_coco(truths, preds, threshold, quirk), abs=1e-12)
    if all(y_true):  # the answers themselves are a valid (non-empty) submission
        assert coco_map(y_true, y_true, iou_threshold=threshold) == pytest.approx(1.0)
    scores = [p[1] for row in preds for p in row]
    if len(set(scores)) == len(scores):  # COCO breaks score ties across images by image order
        t, p = permuted(seed, y_true, y_pred)
        kw = {"iou_threshold": threshold, "corners_as_xywh": quirk}
        assert coco_map(t, p, **kw) == pytest.approx(got, abs=1e-12)


# ---------------------------------------------------------------------------------------------
# voc_map (siim-covid19)
# ---------------------------------------------------------------------------------------------


def corner_iou(a, b) -> float:
    iw = max(0, min(a[2], b[2]) - max(a[0], b[0]))
    ih = max(0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = iw * ih
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def slow_voc(truths, preds, threshold=0.5) -> float:
    aps = []
    for c in sorted({t[0] for row in truths for t in row}):
        y, s = [], []
        for truth, pred in zip(truths, preds, strict=True):
            gts = [t[1:] for t in truth if t[0] == c]
            mine = sorted([p for p in pred if p[0] == c], key=lambda p: p[1], reverse=True)
            matched = [False] * len(gts)
            for p in mine:
                best, best_g = 0.0, -1
                for g, gt in enumerate(gts):
                    iou = corner_iou(p[2:], gt)
                    if not matched[g] and iou > best and iou > threshold:
                        best, best_g = iou, g
                if best_g >= 0:
                    matched[best_g] = True
                y.append(int(best_g >= 0))
                s.append(p[1])
            y += [1] * matched.count(False)
            s += [0.0] * matched.count(False)
            if not mine and not gts:
                y.append(0)
                s.append(0.0)
        aps.append(average_precision_score(y, s))
    return float(np.mean(aps))


def test_voc_hand_examples():
    truth = cells(
        [
            [("negative", 1, 0, 0, 1, 1)],
            [("opacity", 1, 10, 10, 50, 50), ("opacity", 1, 60, 60, 80, 80)],
            [("none", 1, 0, 0, 1, 1)],
        ]
    )
    assert voc_map(truth, truth) == 1.0
    pred = cells(
        [
            [("negative", 0.7, 0, 0, 1, 1), ("typical", 0.3, 0, 0, 1, 1)],
            [("opacity", 0.9, 12, 12, 50, 50)],
            [("opacity", 0.2, 0, 0, 10, 10)],
        ]
    )
    # negative: pairs (1,.7) (0,0) (0,0) -> AP 1; none: (1,0) (0,0) (0,0) -> AP 1/3 (all tied);
    # opacity: (0,0) (1,.9) (1,0) (0,.2) -> AP (1/2)(1) + (1/2)(2/4) = 0.75
    assert voc_map(truth, pred) == pytest.approx((1 + 1 / 3 + 0.75) / 3)


def test_voc_rejects_malformed_predictions():
    truth = cells([[("none", 1, 0, 0, 1, 1)]])
    for bad in ["none 1 0 0 1", "none one 0 0 1 1", "", "none 1 0 0 1 inf"]:
        with pytest.raises(InvalidSubmissionError):
            voc_map(truth, np.array([bad], dtype=object))


def to_siim(rows, with_confidence: bool):
    return [[(o[0], *(o[1:] if with_confidence else (1, *o[1:]))) for o in row] for row in rows]


@FAST
@given(box_rows(["opacity", "none", "typical"]), st.integers(0, 2**31))
def test_voc_matches_reference(rows, seed):
    # one row that always exists: a class in the answers, and a (0, *) pair for every class
    truths = [*rows[0], [("none", 0, 0, 1, 1)]]
    preds = [*to_siim(rows[1], True), [("typical", 0.5, 0, 0, 1, 1)]]
    y_true, y_pred = cells(to_siim(truths, False)), cells(preds)
    got = voc_map(y_true, y_pred)
    assert got == pytest.approx(slow_voc(truths, preds), abs=1e-12)
    t, p = permuted(seed, y_true, y_pred)
    assert voc_map(t, p) == pytest.approx(got, abs=1e-12)


# ---------------------------------------------------------------------------------------------
# map_3d (lyft)
# ---------------------------------------------------------------------------------------------


def footprint(cx, cy, width, length, yaw) -> Polygon:
    c, s = np.cos(yaw), np.sin(yaw)
    corners = []
    for a, b in [(1, 1), (1, -1), (-1, -1), (-1, 1)]:
        corners.append(
            (
                cx + a * length / 2 * c + b * width / 2 * s,
                cy + a * length / 2 * s - b * width / 2 * c,
            )
        )
    return Polygon(corners)


def box_iou_3d(p, g) -> float:
    """p, g = (cx, cy, cz, width, length, height, yaw)."""
    area = footprint(p[0], p[1], p[3], p[4], p[6]).intersection(footprint(g[0], g[1], g[3], g[4], g[6])).area
    dz = max(0.0, min(p[2] + p[5] / 2, g[2] + g[5] / 2) - max(p[2] - p[5] / 2, g[2] - g[5] / 2))
    inter = area * dz
    return float(np.clip(inter / (np.prod(p[3:6]) + np.prod(g[3:6]) - inter), 0, 1))


def voc_envelope_ap(hits: list[int], n_true: int) -> float:
    tp = np.cumsum(hits)
    recall = np.r_[0.0, tp / n_true, 1.0]
    precision = np.r_[0.0, tp / np.arange(1, len(hits) + 1), 0.0]
    for i in range(len(precision) - 1, 0, -1):
        precision[i - 1] = max(precision[i - 1], precision[i])
    i = np.flatnonzero(recall[1:] != recall[:-1])
    return float(np.sum((recall[i + 1] - recall[i]) * precision[i + 1]))


def slow_map_3d(truths, preds, thresholds) -> float:
    """Objects are (confidence, cx, cy, cz, width, length, height, yaw, class)."""
    values = []
    for truth, pred in zip(truths, preds, strict=True):
        classes = sorted({t[8] for t in truth})
        for threshold in thresholds:
            aps = []
            for c in classes:
                gts = [t[1:8] for t in truth if t[8] == c]
                mine = sorted([p for p in pred if p[8] == c], key=lambda p: p[0], reverse=True)
                if not mine:
                    aps.append(0.0)
                    continue
                taken = [False] * len(gts)
                hits = []
                for p in mine:
                    ious = [box_iou_3d(p[1:8], g) for g in gts]
                    j = int(np.argmax(ious))
                    hit = ious[j] > threshold and not taken[j]
                    taken[j] = taken[j] or hit
                    hits.append(int(hit))
                aps.append(voc_envelope_ap(hits, len(gts)))
            values.append(np.mean(aps))
    return float(np.mean(values))


@st.composite
def lyft_rows(draw):
    n = draw(st.integers(1, 4))
    size = st.integers(1, 4)
    truths, preds = [], []
    for _ in range(n):
        truth = []
        for _ in range(draw(st.integers(1, 4))):
            box = (1.0, draw(st.integers(0, 8)), draw(st.integers(0, 8)), draw(st.integers(0, 2)))
            box += (draw(size), draw(size), draw(size), draw(st.sampled_from([0.0, 0.3, 1.2])))
            truth.append((*box, draw(st.sampled_from(["car", "bus", "pedestrian"]))))
        pred = []
        for t in truth:
            for _ in range(draw(st.integers(0, 2))):
                dx, dyaw = draw(st.sampled_from([0, 0.25, 0.5, 1])), draw(st.sampled_from([0, 0.1]))
                pred.append((draw(confidence), t[1] + dx, *t[2:7], t[7] + dyaw, t[8]))
        for _ in range(draw(st.integers(0, 2))):
            pred.append((draw(confidence), 3, 3, 0, 2, 3, 1, 0.5, draw(st.sampled_from(["car", "truck"]))))
        truths.append(truth)
        preds.append(draw(st.permutations(pred)))
    return truths, preds


def test_map_3d_hand_examples():
    truth = cells(
        [
            [(1.0, 0, 0, 0, 2, 4, 2, 0.3, "car"), (1.0, 10, 10, 0, 2, 4, 2, 0, "car")],
            [(1.0, 0, 0, 0, 2, 4, 2, 0, "truck")],
        ]
    )
    assert map_3d(truth, truth) == pytest.approx(1.0)
    assert map_3d(truth, np.array(["", ""], dtype=object)) == 0.0
    # sample 1: one car exact, one shifted by 1 along its length (IoU 3/5 = 0.6 > 0.5 .. 0.55);
    # sample 2: truck exact but a wrong class -> ignored, AP 0
    pred = cells(
        [
            [(0.9, 0, 0, 0, 2, 4, 2, 0.3, "car"), (0.5, 11, 10, 0, 2, 4, 2, 0, "car")],
            [(0.5, 0, 0, 0, 2, 4, 2, 0, "bus")],
        ]
    )
    sample_1 = (2 * 1.0 + 8 * 0.5) / 10
    assert map_3d(truth, pred) == pytest.approx((sample_1 + 0.0) / 2)
    assert map_3d(truth, pred, iou_thresholds=(0.5,)) == pytest.approx(0.5)


def test_map_3d_undefined_and_malformed():
    truth = cells([[(1.0, 0, 0, 0, 2, 4, 2, 0, "car")], []])
    assert np.isnan(map_3d(truth, truth))  # a sample without truth has no classes to average
    good = cells([[(1.0, 0, 0, 0, 2, 4, 2, 0, "car")]])
    for bad in ["1 0 0 0 2 4 2 0", "1 0 0 0 2 4 x 0 car", "1 0 0 0 2 0 2 0 car"]:
        with pytest.raises(InvalidSubmissionError):
            map_3d(good, np.array([bad], dtype=object))


@FAST
@given(lyft_rows(), st.integers(0, 2**31))
def test_map_3d_matches_reference(rows, seed):
    truths, preds = rows
    y_true, y_pred = cells(truths), cells(preds)
    thresholds = (0.3, 0.5, 0.55, 0.75, 0.95)
    got = map_3d(y_true, y_pred, iou_thresholds=thresholds)
    assert got == pytest.approx(slow_map_3d(truths, preds, thresholds), abs=1e-12)
    # the answers score 1 unless a sample repeats a box (the second copy then misses)
    assert map_3d(y_true, y_true) == pytest.approx(slow_map_3d(truths, truths, _LYFT))
    t, p = permuted(seed, y_true, y_pred)
    assert map_3d(t, p, iou_thresholds=thresholds) == pytest.approx(got, abs=1e-12)


# ---------------------------------------------------------------------------------------------
# point_in_box_f1 (kuzushiji)
# ---------------------------------------------------------------------------------------------


def slow_kuzushiji(truths, preds) -> float:
    tp = fp = fn = 0
    for truth, pred in zip(truths, preds, strict=True):
        unused = [True] * len(pred)
        for label, x, y, w, h in truth:
            for k, (plabel, px, py) in enumerate(pred):
                if unused[k] and plabel == label and x < px < x + w and y < py < y + h:
                    unused[k] = False
                    tp += 1
                    break
            else:
                fn += 1
        fp += sum(unused)
    if tp + fp == 0 or tp + fn == 0:
        return 0.0
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    return 2 * precision * recall / (precision + recall) if precision and recall else 0.0


def test_point_in_box_hand_examples():
    truth = cells([[("U+1", 0, 0, 10, 10), ("U+2", 5, 5, 10, 10)], [("U+1", 0, 0, 4, 4)], []])
    pred = cells([[("U+1", 5, 5), ("U+1", 6, 6), ("U+2", 7, 7)], [("U+1", 2, 2)], [("U+3", 1, 1)]])
    assert point_in_box_f1(truth, pred) == pytest.approx(2 * 0.6 * 1 / 1.6)  # tp 3, fp 2, fn 0
    gold = cells([[("U+1", 1, 1), ("U+2", 6, 6)], [("U+1", 1, 1)], []])
    assert point_in_box_f1(truth, gold) == 1.0
    # containment is strict: a point on the edge does not count
    assert point_in_box_f1(cells([[("U+1", 0, 0, 4, 4)]]), cells([[("U+1", 4, 2)]])) == 0.0
    # the first true box takes the first matching prediction, leaving the second box unmatched
    overlapping = cells([[("A", 0, 0, 10, 10), ("A", 0, 0, 5, 5)]])
    assert point_in_box_f1(overlapping, cells([[("A", 2, 2), ("A", 8, 8)]])) == pytest.approx(0.5)
    assert point_in_box_f1(overlapping, cells([[("A", 8, 8), ("A", 2, 2)]])) == 1.0
    empty = np.array(["", ""], dtype=object)
    assert point_in_box_f1(empty, empty) == 0.0


def test_point_in_box_rejects_malformed_predictions():
    truth = cells([[("A", 0, 0, 10, 10)]])
    for bad in ["A 1", "A 1 2 B", "A one 2", "A 1 nan"]:
        with pytest.raises(InvalidSubmissionError):
            point_in_box_f1(truth, np.array([bad], dtype=object))
    with pytest.raises(ValueError) as info:
        point_in_box_f1(np.array(["A 0 0 10"], dtype=object), truth)
    assert not isinstance(info.value, InvalidSubmissionError)


@st.composite
def kuzushiji_rows(draw):
    """Overlapping boxes of two labels; points inside, on the edge of, or away from them."""
    n = draw(st.integers(1, 5))
    truths, preds = [], []
    for _ in range(n):
        truth = []
        for _ in range(draw(st.integers(0, 5))):
            label = draw(st.sampled_from("AB"))
            x, y = draw(st.integers(0, 4)), draw(st.integers(0, 4))
            truth.append((label, x, y, draw(st.integers(1, 6)), draw(st.integers(1, 6))))
        pred = []
        for label, x, y, w, h in truth:
            for _ in range(draw(st.integers(0, 2))):
                px, py = x + draw(st.integers(0, w)), y + draw(st.integers(0, h))
                pred.append((draw(st.sampled_from([label, label, "C"])), px, py))
        points = st.tuples(st.sampled_from("ABC"), st.integers(0, 12), st.integers(0, 12))
        pred += draw(st.lists(points, max_size=3))
        truths.append(truth)
        preds.append(draw(st.permutations(pred)))
    return truths, preds


@FAST
@given(kuzushiji_rows(), st.integers(0, 2**31))
def test_point_in_box_matches_reference(rows, seed):
    truths, preds = rows
    y_true, y_pred = cells(truths), cells(preds)
    got = point_in_box_f1(y_true, y_pred)
    assert got == pytest.approx(slow_kuzushiji(truths, preds), abs=1e-12)
    t, p = permuted(seed, y_true, y_pred)
    assert point_in_box_f1(t, p) == pytest.approx(got, abs=1e-12)
    centres = cells([[(b[0], b[1] + b[3] / 2, b[2] + b[4] / 2) for b in row] for row in truths])
    assert point_in_box_f1(y_true, centres) == (1.0 if any(truths) else 0.0)
