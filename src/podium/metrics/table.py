"""The one table of metrics: each name, where its function lives, and which direction is better."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["METRICS", "Metric", "get_metric"]


@dataclass(frozen=True)
class Metric:
    """A named metric: where its function lives and which direction is better."""

    name: str
    target: str  # "module:function" under podium.metrics, imported on first use
    higher_is_better: bool
    best: float | None  # the value a perfect prediction reaches (None where it depends on options)

    @property
    def fn(self) -> Callable[..., float]:
        module, _, attr = self.target.partition(":")
        fn: Callable[..., float] = getattr(importlib.import_module(f"podium.metrics.{module}"), attr)
        return fn


def _table(*rows: tuple[str, str, bool, float | None]) -> dict[str, Metric]:
    return {row[0]: Metric(*row) for row in rows}


METRICS: dict[str, Metric] = _table(
    # classification
    ("accuracy", "classification:accuracy", True, 1.0),
    ("error_rate", "classification:error_rate", False, 0.0),
    ("roc_auc", "classification:roc_auc", True, 1.0),
    ("mean_columnwise_roc_auc", "classification:mean_columnwise_roc_auc", True, 1.0),
    ("alaska_weighted_auc", "classification:alaska_weighted_auc", True, 1.0),
    ("jigsaw_bias_auc", "classification:jigsaw_bias_auc", True, 1.0),
    ("log_loss", "classification:log_loss", False, 0.0),
    ("rsna_fracture_log_loss", "classification:rsna_fracture_log_loss", False, 0.0),
    ("kl_divergence", "classification:kl_divergence", False, 0.0),
    ("quadratic_weighted_kappa", "classification:quadratic_weighted_kappa", True, 1.0),
    ("f1", "fscore:f1", True, 1.0),
    ("multilabel_micro_f1", "fscore:multilabel_micro_f1", True, 1.0),
    ("mean_sample_fbeta", "fscore:mean_sample_fbeta", True, 1.0),
    ("probabilistic_f1", "fscore:probabilistic_f1", True, 1.0),
    ("matthews_corrcoef", "classification:matthews_corrcoef", True, 1.0),
    ("lwlrap", "fscore:lwlrap", True, 1.0),
    ("qa_answer_f1", "fscore:qa_answer_f1", True, 1.0),
    # regression
    ("rmse", "regression:rmse", False, 0.0),
    ("mae", "regression:mae", False, 0.0),
    ("mean_columnwise_rmsle", "regression:mean_columnwise_rmsle", False, 0.0),
    ("mcrmse", "regression:mcrmse", False, 0.0),
    ("mean_log_mae_by_group", "regression:mean_log_mae_by_group", False, None),
    ("laplace_log_likelihood", "regression:laplace_log_likelihood", True, None),
    ("mean_angular_error", "regression:mean_angular_error", False, 0.0),
    ("haversine_p50_p95", "regression:haversine_p50_p95", False, 0.0),
    # correlation and ranking
    ("pearson", "ranking:pearson", True, 1.0),
    ("mean_columnwise_spearman", "ranking:mean_columnwise_spearman", True, 1.0),
    ("kendall_tau_pooled", "ranking:kendall_tau_pooled", True, 1.0),
    ("map_at_k", "ranking:map_at_k", True, 1.0),
    # text
    ("mean_levenshtein", "text:mean_levenshtein", False, 0.0),
    ("normalized_sequence_levenshtein", "text:normalized_sequence_levenshtein", False, 0.0),
    ("mean_word_jaccard", "text:mean_word_jaccard", True, 1.0),
    # masks
    ("mean_dice_rle", "masks:mean_dice_rle", True, 1.0),
    ("global_dice_rle", "masks:global_dice_rle", True, 1.0),
    ("iou_sweep_precision", "masks:iou_sweep_precision", True, 1.0),
    ("dice_hausdorff", "masks:dice_hausdorff", True, 1.0),
    ("pixel_fbeta_rle", "masks:pixel_fbeta_rle", True, 1.0),
    # detection
    ("coco_map", "detection:coco_map", True, 1.0),
    ("voc_map", "detection:voc_map", True, 1.0),
    ("map_3d", "detection3d:map_3d", True, 1.0),
    ("point_in_box_f1", "detection:point_in_box_f1", True, 1.0),
)


def get_metric(name: str) -> Metric:
    """Look a metric up by name; an unknown name lists the known ones."""
    from podium.errors import UnknownMetricError

    try:
        return METRICS[name]
    except KeyError:
        raise UnknownMetricError(f"Unknown metric {name!r}; known metrics: {', '.join(sorted(METRICS))}") from None
