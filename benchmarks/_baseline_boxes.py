"""The baseline grader's detection metrics: COCO and VOC mAP, 3D mAP (podium's, sample by sample) and the
point-in-box F1, written as the published graders compute them (see ``baseline.py``)."""

from __future__ import annotations

import contextlib
import io
from typing import Any

import numpy as np
from _baseline_labels import _text

# detection


def _groups(cell: Any, size: int) -> list[list[str]]:
    tokens = _text(cell).split()
    if len(tokens) % size:
        raise ValueError(f"token count {len(tokens)} is not a multiple of {size}")
    return [tokens[i : i + size] for i in range(0, len(tokens), size)]


def coco_map(y_true, y_pred, iou_threshold=0.4, corners_as_xywh=True, **_):
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    def bbox(x1, y1, x2, y2):
        return [x1, y1, x2, y2] if corners_as_xywh else [x1, y1, x2 - x1, y2 - y1]

    images, gts, dts, cats = [], [], [], set()
    for i, (t, p) in enumerate(zip(y_true, y_pred, strict=True)):
        images.append({"id": i})
        for cls, _conf, *xy in _groups(t, 6):
            box = bbox(*map(float, xy))
            cats.add(int(cls))
            gts.append(
                {
                    "id": len(gts) + 1,
                    "image_id": i,
                    "category_id": int(cls),
                    "bbox": box,
                    "area": box[2] * box[3],
                    "iscrowd": 0,
                }
            )
        for cls, conf, *xy in _groups(p, 6):
            box = bbox(*map(float, xy))
            dts.append(
                {
                    "id": len(dts) + 1,
                    "image_id": i,
                    "category_id": int(cls),
                    "bbox": box,
                    "score": float(conf),
                    "area": box[2] * box[3],
                }
            )
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO()
        gt.dataset = {"images": images, "annotations": gts, "categories": [{"id": c} for c in sorted(cats)]}
        gt.createIndex()
        dt = gt.loadRes(dts) if dts else COCO()
        ev = COCOeval(gt, dt, "bbox")
        ev.params.iouThrs = np.array([iou_threshold])
        ev.params.catIds = sorted(cats)
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    return float(ev.stats[0])


def voc_map(y_true, y_pred, iou_threshold=0.5, **_):
    from sklearn.metrics import average_precision_score

    def iou(a, b):
        ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
        iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
        inter = ix * iy
        union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
        return inter / union if union > 0 else 0.0

    truth_rows = [_groups(t, 6) for t in y_true]
    pred_rows = [_groups(p, 6) for p in y_pred]
    classes = sorted({g[0] for row in truth_rows for g in row})
    aps = []
    for cls in classes:
        labels, scores = [], []
        for truth, pred in zip(truth_rows, pred_rows, strict=True):
            gt = [list(map(float, g[2:])) for g in truth if g[0] == cls]
            dt = sorted(((float(g[1]), list(map(float, g[2:]))) for g in pred if g[0] == cls), key=lambda x: -x[0])
            used = [False] * len(gt)
            for conf, box in dt:
                best, best_iou = -1, iou_threshold
                for j, g in enumerate(gt):
                    if not used[j]:
                        v = iou(box, g)
                        if v > best_iou:
                            best, best_iou = j, v
                if best >= 0:
                    used[best] = True
                    labels.append(1)
                else:
                    labels.append(0)
                scores.append(conf)
            for u in used:
                if not u:
                    labels.append(1)
                    scores.append(0.0)
            if not gt and not dt:
                labels.append(0)
                scores.append(0.0)
        aps.append(average_precision_score(labels, scores) if any(labels) else 0.0)
    return float(np.mean(aps))


def map_3d(y_true, y_pred, **options):
    # One podium call per sample, as the published grader maps its scorer over samples.
    from podium.metrics import METRICS

    fn = METRICS["map_3d"].fn
    scores = [
        fn(np.array([t], dtype=object), np.array([p], dtype=object), **options)
        for t, p in zip(y_true, y_pred, strict=True)
    ]
    return float(np.mean(scores))


def point_in_box_f1(y_true, y_pred, **_):
    tp = fp = fn = 0
    for truth, preds in zip(y_true, y_pred, strict=True):
        truth, preds = _text(truth).split(), _text(preds).split()
        if not truth and not preds:
            continue
        if not truth:
            fp += len(preds) // 3
            continue
        if not preds:
            fn += len(truth) // 5
            continue
        t_label = np.array(truth[0::5])
        t_x, t_y = np.array(truth[1::5], float), np.array(truth[2::5], float)
        t_w, t_h = np.array(truth[3::5], float), np.array(truth[4::5], float)
        p_label = np.array(preds[0::3])
        p_x, p_y = np.array(preds[1::3], float), np.array(preds[2::3], float)
        unused = np.ones(len(p_label), bool)
        count = 0
        for xmin, xmax, ymin, ymax, label in zip(t_x, t_x + t_w, t_y, t_y + t_h, t_label, strict=True):
            matching = (xmin < p_x) & (xmax > p_x) & (ymin < p_y) & (ymax > p_y) & (p_label == label) & unused
            if matching.sum() == 0:
                continue
            count += 1
            unused[np.argmax(matching)] = False
        tp += count
        fn += len(t_label) - count
        fp += int(unused.sum())
    if tp + fp == 0 or tp + fn == 0:
        return 0.0
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
