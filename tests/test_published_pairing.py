"""Version 1 accepts, refuses, pairs and scores these files as the published grader does (issues 19
section 2 and 23); the later version keeps podium's corrected reading.

Each case edits a fixture podium generates (the competition's real schema) the way the published
comparison did (a repeated id, an unknown id, an empty cell, rows shuffled, ...). Where the published
score of the case is a number computed on the real private data (0.6497, 0.37517, ...), the fixture
cannot give that number: the expected score here is what the published computation gives on the
fixture, restated below with pandas/numpy/scipy/sklearn as the published grade.py does it (sorted with
pandas' default sort, paired by position, ...), independently of podium's grading code, except for
the order of tied sort keys, which is numpy's portable quicksort's (podium.grading.quicksort).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import directed_hausdorff
from scipy.stats import spearmanr
from sklearn.metrics import mean_absolute_error, roc_auc_score, root_mean_squared_error

from podium import registry
from podium.competition import Competition
from podium.fixtures import Fixture, make_fixture, write_prepared
from podium.grading import grade
from podium.grading.quicksort import quicksort_argsort
from podium.grading.table import Frame, write_csv
from podium.grading.validator import validate
from podium.paths import CompetitionPaths

# ---- the published computations, restated on the fixture's files ------------------------------


def _read(path: Path) -> pd.DataFrame:
    """The file as the published grader's pandas 2 reads it (text columns as object)."""
    frame = pd.read_csv(path)
    for name in frame.columns:
        if not pd.api.types.is_numeric_dtype(frame[name]):
            frame[name] = frame[name].astype(object)
    return frame


def _sort_values(frame: pd.DataFrame, column: str) -> pd.DataFrame:
    """``frame.sort_values(column)`` as the published grader's pandas sorts it: numpy's quicksort, rows
    that share a key in its portable introsort's order (not this machine's numpy's, which may differ on
    ties: podium.grading.quicksort, held to numpy's own portable sort in tests/test_quicksort.py)."""
    return frame.iloc[quicksort_argsort(frame[column].to_numpy())]


def _sort_index(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame.sort_index()`` likewise: an index already in order is left as it is."""
    if frame.index.is_monotonic_increasing:
        return frame
    return frame.iloc[quicksort_argsort(frame.index.to_numpy())]


def _classes(comp: Competition) -> list[str]:
    return [s for s, _ in comp.targets]


def _google_quest(comp: Competition, answers: pd.DataFrame, sub: pd.DataFrame) -> float:
    sub, answers = _sort_values(sub, "qa_id"), _sort_values(answers, "qa_id")
    return float(np.mean([spearmanr(sub[c], answers[c]).correlation for c in _classes(comp)]))


def _jigsaw_toxic(comp: Competition, answers: pd.DataFrame, sub: pd.DataFrame) -> float:
    sub, answers = _sort_index(sub.set_index("id")), _sort_index(answers.set_index("id"))
    keep = answers[_classes(comp)].sum(axis=1) >= 0
    return float(roc_auc_score(answers[keep].to_numpy(), sub[keep].to_numpy(), average="macro"))


def _taxi(comp: Competition, answers: pd.DataFrame, sub: pd.DataFrame) -> float:
    sub, answers = _sort_values(sub, "key"), _sort_values(answers, "key")
    return float(root_mean_squared_error(answers["fare_amount"], sub["fare_amount"]))


def _rmsle(true: pd.Series, pred: pd.Series) -> float:
    return float(np.sqrt(np.mean((np.log1p(pred.to_numpy()) - np.log1p(true.to_numpy())) ** 2)))


def _nomad(comp: Competition, answers: pd.DataFrame, sub: pd.DataFrame) -> float:
    cols = ["formation_energy_ev_natom", "bandgap_energy_ev"]
    return (_rmsle(answers[cols[0]], sub[cols[0]]) + _rmsle(answers[cols[1]], sub[cols[1]])) / 2


def _smartphone(comp: Competition, answers: pd.DataFrame, sub: pd.DataFrame) -> float:
    scores = []
    for trip in answers["tripId"].unique():
        a, s = answers[answers["tripId"] == trip], sub[sub["tripId"] == trip]
        lat1, lng1 = np.deg2rad(s["LatitudeDegrees"].to_numpy()), np.deg2rad(s["LongitudeDegrees"].to_numpy())
        lat2, lng2 = np.deg2rad(a["LatitudeDegrees"].to_numpy()), np.deg2rad(a["LongitudeDegrees"].to_numpy())
        h = np.sin((lat2 - lat1) / 2) ** 2 + np.cos(lat1) * np.cos(lat2) * np.sin((lng2 - lng1) / 2) ** 2
        d = 2 * 6_371_000 * np.arcsin(np.sqrt(h))
        scores.append(np.mean([np.quantile(d, 0.5), np.quantile(d, 0.95)]))
    return float(np.mean(scores))


def _hms(comp: Competition, answers: pd.DataFrame, sub: pd.DataFrame) -> float:
    cols = _classes(comp)
    sub = _sort_values(sub, "eeg_id").reset_index(drop=True)
    answers = _sort_values(answers, "eeg_id").reset_index(drop=True)
    truth = answers[cols].to_numpy(float)
    truth = truth / truth.sum(axis=1, keepdims=True)
    pred = np.clip(sub[cols].to_numpy(float), 1e-15, 1 - 1e-15)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(truth != 0, truth * np.log(truth / pred), 0.0)
    return float(np.mean(terms.sum(axis=1)))


def _pfbeta(labels: np.ndarray, predictions: np.ndarray) -> float:
    ctp = cfp = 0.0
    for label, value in zip(labels, predictions, strict=True):
        clipped = min(max(value, 0), 1)  # NaN stays NaN, as in the published loop
        ctp, cfp = (ctp + clipped, cfp) if label else (ctp, cfp + clipped)
    precision, recall = ctp / (ctp + cfp), ctp / int(np.sum(labels))
    return precision * recall * 2 / (precision + recall) if precision > 0 and recall > 0 else 0.0


def _rsna(comp: Competition, answers: pd.DataFrame, sub: pd.DataFrame) -> float:
    sub, answers = _sort_values(sub, "prediction_id"), _sort_values(answers, "prediction_id")
    return _pfbeta(answers["cancer"].to_numpy(), sub["cancer"].to_numpy())


def _binary_auc(truth: pd.Series, score: pd.Series) -> float:
    return float(roc_auc_score(truth, score))


def _jigsaw_bias(comp: Competition, answers: pd.DataFrame, sub: pd.DataFrame) -> float:
    identities = list(comp.metric.inputs["identities"]["answers"])
    sub, answers = _sort_values(sub, "id"), _sort_values(answers, "id")
    sub = sub.assign(toxicity=sub["prediction"].apply(lambda x: 1 if x >= 0.5 else 0))
    answers = answers.assign(toxicity=answers["toxicity"].apply(lambda x: 1 if x >= 0.5 else 0))
    for name in identities:
        answers[name] = answers[name].apply(lambda x: 1 if x >= 0.5 else 0)

    def auc(rows: pd.Series) -> float:
        kept = answers[rows]
        return _binary_auc(kept["toxicity"], sub[sub["id"].isin(kept["id"])]["toxicity"])

    toxic = answers["toxicity"] == 1
    families = [[], [], []]
    for name in identities:
        member = answers[name] == 1
        families[0].append(auc(member))
        families[1].append(auc((~toxic & member) | (toxic & ~member)))
        families[2].append(auc((toxic & member) | (~toxic & ~member)))
    means = [(sum(s**-5 for s in f) / len(identities)) ** (1 / -5) for f in families]
    return 0.25 * _binary_auc(answers["toxicity"], sub["toxicity"]) + sum(0.25 * m for m in means)


def _ventilator(comp: Competition, answers: pd.DataFrame, sub: pd.DataFrame) -> float:
    sub, answers = _sort_values(sub, "id").reset_index(drop=True), _sort_values(answers, "id").reset_index(drop=True)
    answers = answers[answers["u_out"] == 0]
    sub = sub[sub["id"].isin(answers["id"])]
    return float(mean_absolute_error(answers["pressure"].to_numpy(), sub["pressure"].to_numpy()))


def _osic(comp: Competition, answers: pd.DataFrame, sub: pd.DataFrame) -> float:
    sub = sub.assign(Confidence=sub["Confidence"].fillna(0))
    answers = answers.dropna(subset=["FVC"])
    answers = answers.assign(week=answers["Patient_Week"].apply(lambda x: int(x.split("_")[-1])))
    answers = _sort_values(answers, "week").groupby("Patient").tail(3)
    sub = sub[sub["Patient_Week"].isin(answers["Patient_Week"])]
    sub, answers = _sort_values(sub, "Patient_Week"), _sort_values(answers, "Patient_Week")
    true = answers.loc[answers["Patient_Week"].isin(sub["Patient_Week"]), "FVC"].to_numpy()
    sigma = np.maximum(sub["Confidence"].to_numpy(), 70)
    delta = np.minimum(np.abs(true - sub["FVC"].to_numpy()), 1000)
    return float(np.mean(-np.sqrt(2) * delta / sigma - np.log(np.sqrt(2) * sigma)))


def _stanford(comp: Competition, answers: pd.DataFrame, sub: pd.DataFrame) -> float:
    scored = ["reactivity", "deg_Mg_pH10", "deg_Mg_50C"]
    sub = _sort_values(sub[["id_seqpos", *scored, "deg_pH10", "deg_50C"]], "id_seqpos").sort_index(axis=1)
    answers = _sort_values(answers, "id_seqpos").sort_index(axis=1)
    mask = answers["keep"]  # a boolean Series: pandas applies it to the submission by index label
    sub, answers = sub[mask], answers[mask]
    return float(np.mean([root_mean_squared_error(answers[c], sub[c]) for c in scored]))


def _uw_masks(cells: pd.Series, heights: list[int], widths: list[int]) -> list[np.ndarray]:
    masks = []
    for cell, height, width in zip(cells.fillna(""), heights, widths, strict=False):  # zip: as far as the shorter goes
        flat = np.zeros(height * width, dtype=bool)
        tokens = str(cell).split()
        for start, length in zip(map(int, tokens[0::2]), map(int, tokens[1::2]), strict=False):
            flat[start - 1 : start - 1 + length] = True
        masks.append(flat.reshape((width, height)).T)
    return masks


def _uw_days(masks: list[np.ndarray], ids: pd.Series) -> list[np.ndarray]:
    rows = pd.DataFrame({"id": list(ids)[: len(masks)], "at": range(len(masks))}).sort_values("id", kind="stable")
    rows["day"] = rows["id"].str.split("_slice_").str[0]
    volumes = []
    for _, day in rows.groupby("day", sort=False):
        slices = [np.any([masks[i] for i in part["at"]], axis=0) for _, part in day.groupby("id", sort=False)]
        volumes.append(np.stack(slices))
    return volumes


def _uw_distance(pred: np.ndarray, true: np.ndarray) -> float:
    if pred.sum() == 0 and true.sum() == 0:
        return np.nan
    if np.array_equal(pred, true):
        return 0.0
    if pred.sum() == 0 or true.sum() == 0 or pred.sum() > 10 * true.sum():
        return 1.0
    a, b = np.argwhere(true) / true.shape, np.argwhere(pred) / true.shape
    return max(directed_hausdorff(a, b)[0], directed_hausdorff(b, a)[0]) / np.sqrt(3)


def _uw(comp: Competition, answers: pd.DataFrame, sub: pd.DataFrame) -> float:
    heights, widths = answers["image_height"].astype(int).tolist(), answers["image_width"].astype(int).tolist()
    pred, true = _uw_masks(sub["predicted"], heights, widths), _uw_masks(answers["predicted"], heights, widths)
    dice = [
        2 * (p & t).sum() / (p.sum() + t.sum()) if p.sum() + t.sum() else np.nan
        for p, t in zip(pred, true, strict=False)
    ]
    days = zip(_uw_days(pred, sub["id"]), _uw_days(true, answers["id"]), strict=False)
    return float(0.4 * np.nanmean(dice) + 0.6 * (1 - np.nanmean([_uw_distance(p, t) for p, t in days])))


# ---- the edits -------------------------------------------------------------------------------

Edit = Callable[[Competition, Fixture], "Frame | str"]


def _copy(frame: Frame) -> dict[str, np.ndarray]:
    return {k: np.array(v, dtype=object) for k, v in frame.columns.items()}


def _noisy(comp: Competition, fixture: Fixture) -> dict[str, np.ndarray]:
    """The perfect submission with every numeric prediction moved a little (so a pairing shows)."""
    rng = np.random.default_rng(7)
    columns = _copy(fixture.perfect)
    for name, _ in comp.targets:
        if comp.column(name).kind in ("float", "probability"):
            values = np.array([float(v) for v in columns[name]])
            columns[name] = np.array(
                [repr(float(v)) for v in values * rng.uniform(0.8, 1.0, values.size)], dtype=object
            )
    return columns


def _cell(column: str, row: int, value: str | Callable[[np.ndarray], str], *, noisy: bool = True) -> Edit:
    def edit(comp: Competition, fixture: Fixture) -> Frame:
        columns = _noisy(comp, fixture) if noisy else _copy(fixture.perfect)
        columns[column][row] = value(columns[column]) if callable(value) else value
        return Frame(columns, fixture.perfect.n_rows)

    return edit


def _repeat(column: str, row: int, source: int) -> Edit:
    return _cell(column, row, lambda values: str(values[source]))


def _rows(order: Callable[[Fixture], np.ndarray], *, noisy: bool = False) -> Edit:
    def edit(comp: Competition, fixture: Fixture) -> Frame:
        columns = _noisy(comp, fixture) if noisy else _copy(fixture.perfect)
        at = order(fixture)
        return Frame({k: v[at] for k, v in columns.items()}, at.size)

    return edit


def _shuffled(fixture: Fixture) -> np.ndarray:
    return np.random.default_rng(1).permutation(fixture.perfect.n_rows)


def _osic_rows(fixture: Fixture) -> tuple[int, int]:
    """A scored row (the first patient's last visit) and a row without a visit (never scored)."""
    visited = np.asarray(fixture.answers["has_fvc"]) == "1"
    first = np.asarray(fixture.answers["Patient"]) == fixture.answers["Patient"][0]
    scored = int(np.flatnonzero(visited & first)[-1])
    return scored, int(np.flatnonzero(~visited)[0])


def _osic_edit(kind: str) -> Edit:
    def edit(comp: Competition, fixture: Fixture) -> Frame:
        columns = _noisy(comp, fixture)
        scored, unvisited = _osic_rows(fixture)
        if kind in ("dropped", "unvisited only"):
            kept = np.delete(np.arange(fixture.perfect.n_rows), scored)
            if kind == "unvisited only":  # no row the published grader scores: the mean of none, NaN
                kept = np.flatnonzero(np.asarray(fixture.answers["has_fvc"]) == "0")
            return Frame({k: v[kept] for k, v in columns.items()}, kept.size)
        if kind == "repeated":  # the scored row named as a row without a visit: that id twice, never scored
            columns["Patient_Week"][scored] = columns["Patient_Week"][unvisited]
        elif kind == "scored twice":  # the row without a visit named as the scored row
            columns["Patient_Week"][unvisited] = columns["Patient_Week"][scored]
        else:
            columns["FVC"][unvisited] = ""
        return Frame(columns, fixture.perfect.n_rows)

    return edit


def _first_day_shuffled(fixture: Fixture) -> np.ndarray:
    """Rows of the first case-day in another order (its slices share one image size), the rest kept."""
    ids = np.asarray(fixture.perfect["id"], dtype=str)
    first = np.flatnonzero(np.char.startswith(ids, ids[0].split("_slice_")[0] + "_"))
    order = np.arange(ids.size)
    order[first] = first[np.random.default_rng(3).permutation(first.size)]
    return order


def _text(edit: Callable[[str], str]) -> Edit:
    """The perfect submission as CSV text, edited as text (spaces kept byte for byte)."""

    def make(comp: Competition, fixture: Fixture) -> str:
        lines = [",".join(fixture.perfect.names)]
        for row in zip(*(fixture.perfect[c] for c in fixture.perfect.names), strict=True):
            lines.append(",".join(f'"{cell}"' if "," in str(cell) else str(cell) for cell in row))
        return edit("\n".join(lines) + "\n")

    return make


def _extra_column(comp: Competition, fixture: Fixture) -> Frame:
    columns = _copy(fixture.perfect)
    columns["extra"] = np.array(["1"] * fixture.perfect.n_rows, dtype=object)
    return Frame(columns, fixture.perfect.n_rows)


def _double_space(text: str) -> str:
    lines = text.split("\n")
    for i, line in enumerate(lines[1:], 1):
        if " " in line:
            lines[i] = line.replace(" ", "  ", 1)
            return "\n".join(lines)
    raise AssertionError("no cell with a space in the fixture")


def _columns_reversed(comp: Competition, fixture: Fixture) -> Frame:
    columns = _noisy(comp, fixture)
    names = list(comp.id_columns) + [c for c in reversed(fixture.perfect.names) if c not in comp.id_columns]
    return Frame({n: columns[n] for n in names}, fixture.perfect.n_rows)


def _eeg_groups_reordered(fixture: Fixture) -> np.ndarray:
    """Whole eeg_id groups in another order, rows within each group kept in file order."""
    ids = np.asarray(fixture.perfect["eeg_id"])
    groups = list(dict.fromkeys(ids.tolist()))
    return np.concatenate([np.flatnonzero(ids == g) for g in reversed(groups)])


# ---- the cases -------------------------------------------------------------------------------

NAN = "nan"  # valid, with a NaN score: no score, no medal


@dataclass(frozen=True)
class Case:
    competition: str
    name: str
    edit: Edit
    published: Callable[[Competition, pd.DataFrame, pd.DataFrame], float] | str | None  # None: invalid
    corrected_valid: bool  # at the later version


CASES = [
    # issue 19 section 2: accepted there, refused by podium's corrected reading
    Case("google-quest-challenge", "repeated id", _repeat("qa_id", 5, 15), _google_quest, False),
    Case("google-quest-challenge", "unknown id", _cell("qa_id", 5, "999999"), _google_quest, False),
    Case("google-quest-challenge", "empty cell", _cell("question_body_critical", 3, ""), NAN, False),
    Case("jigsaw-toxic-comment-classification-challenge", "repeated id", _repeat("id", 5, 15), _jigsaw_toxic, False),
    Case(
        "jigsaw-toxic-comment-classification-challenge",
        "repeated id, still in order",
        _repeat("id", 6, 5),
        _jigsaw_toxic,
        False,
    ),  # sort_index leaves an ordered index as it is
    Case(
        "jigsaw-unintended-bias-in-toxicity-classification",
        "empty prediction",
        _cell("prediction", 4, ""),
        _jigsaw_bias,
        False,
    ),
    Case("new-york-city-taxi-fare-prediction", "repeated id", _repeat("key", 5, 15), _taxi, False),
    Case("new-york-city-taxi-fare-prediction", "unknown id", _cell("key", 5, "zzz_unknown"), _taxi, False),
    Case("nomad2018-predict-transparent-conductors", "repeated id", _repeat("id", 5, 15), _nomad, False),
    Case("nomad2018-predict-transparent-conductors", "unknown id", _cell("id", 5, "999999"), _nomad, False),
    Case("osic-pulmonary-fibrosis-progression", "a scored row dropped", _osic_edit("dropped"), _osic, False),
    Case("osic-pulmonary-fibrosis-progression", "a repeated id", _osic_edit("repeated"), _osic, False),
    Case("osic-pulmonary-fibrosis-progression", "one empty FVC cell", _osic_edit("empty"), _osic, False),
    Case("osic-pulmonary-fibrosis-progression", "only rows without a visit", _osic_edit("unvisited only"), NAN, False),
    Case("rsna-breast-cancer-detection", "empty prediction", _cell("cancer", 3, ""), _rsna, False),
    Case("rsna-breast-cancer-detection", "predictions outside [0, 1]", _cell("cancer", 1, "1.7"), _rsna, False),
    Case(
        "smartphone-decimeter-2022",
        "repeated (tripId, UnixTimeMillis)",
        _repeat("UnixTimeMillis", 5, 6),
        _smartphone,
        False,
    ),
    Case("smartphone-decimeter-2022", "unknown UnixTimeMillis", _cell("UnixTimeMillis", 5, "1"), _smartphone, False),
    Case("smartphone-decimeter-2022", "empty LatitudeDegrees", _cell("LatitudeDegrees", 2, ""), NAN, False),
    Case("us-patent-phrase-to-phrase-matching", "empty score", _cell("score", 2, "", noisy=False), NAN, False),
    Case(
        "uw-madison-gi-tract-image-segmentation",
        "the last row dropped",
        _rows(lambda f: np.arange(f.perfect.n_rows - 1)),
        _uw,
        False,
    ),
    Case(
        "uw-madison-gi-tract-image-segmentation",
        "an (id, class) repeated",
        _cell("class", 4, lambda values: str(values[3]), noisy=False),
        _uw,
        False,
    ),
    Case(
        "uw-madison-gi-tract-image-segmentation",
        "an unknown id",
        _cell("id", 5, "case99_day9_slice_0001", noisy=False),
        _uw,
        False,
    ),
    Case(
        "ventilator-pressure-prediction",
        "empty pressure on a row not scored",
        _cell("pressure", 1, ""),
        _ventilator,
        False,
    ),
    # refused there, accepted by podium's corrected reading
    Case("3d-object-detection-for-autonomous-vehicles", "two spaces", _text(_double_space), None, True),
    Case("kuzushiji-recognition", "two spaces", _text(_double_space), None, True),
    Case("icecube-neutrinos-in-deep-ice", "extra column", _extra_column, None, True),
    Case("plant-pathology-2020-fgvc7", "extra column", _extra_column, None, True),
    Case("tgs-salt-identification-challenge", "extra column", _extra_column, None, True),
    Case(
        "google-quest-challenge", "extra column", _extra_column, None, True
    ),  # not in the issue; len(columns) checked there
    # issue 23: rows or columns in another order
    Case("nomad2018-predict-transparent-conductors", "rows shuffled", _rows(_shuffled), _nomad, True),
    Case("smartphone-decimeter-2022", "rows shuffled", _rows(_shuffled), _smartphone, True),
    Case("uw-madison-gi-tract-image-segmentation", "rows shuffled", _rows(_first_day_shuffled), _uw, True),
    Case("stanford-covid-vaccine", "rows shuffled", _rows(_shuffled, noisy=True), _stanford, True),
    Case(
        "hms-harmful-brain-activity-classification", "eeg_id groups reordered", _rows(_eeg_groups_reordered), _hms, True
    ),
    Case(
        "jigsaw-toxic-comment-classification-challenge",
        "class columns reversed",
        _columns_reversed,
        _jigsaw_toxic,
        True,
    ),
]


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], tuple[Fixture, Path]]:
    made: dict[str, tuple[Fixture, Path]] = {}

    def get(cid: str) -> tuple[Fixture, Path]:
        if cid not in made:
            comp = registry.get(cid)
            fixture = make_fixture(comp)
            data_dir = tmp_path_factory.mktemp(cid[:30])
            write_prepared(comp, fixture, data_dir)
            made[cid] = (fixture, data_dir)
        return made[cid]

    return get


def _write(made: Frame | str, path: Path) -> Path:
    if isinstance(made, str):
        path.write_text(made, encoding="utf-8")
        return path
    return write_csv(made, path)


@pytest.mark.parametrize("case", CASES, ids=[f"{c.competition}: {c.name}" for c in CASES])
def test_version_1_gives_the_published_verdict_and_score(
    case: Case, prepared: Callable[[str], tuple[Fixture, Path]], tmp_path: Path
) -> None:
    published, later = registry.get(f"{case.competition}@1"), registry.get(case.competition, latest=True)
    assert later.version > 1, "the corrected reading lives in a later version"
    assert later.changes, "the later version states what it changes"
    fixture, data_dir = prepared(case.competition)
    path = _write(case.edit(published, fixture), tmp_path / "submission.csv")
    paths = CompetitionPaths(data_dir, case.competition)
    sample = paths.prepared / published.sample_submission

    report = grade(published, path, data_dir)
    if case.published is None:
        assert not report.valid_submission and report.error, report
    else:
        assert report.valid_submission, report.error
        if case.published == NAN:
            assert report.score is None and not report.any_medal and not report.above_median
        else:
            assert callable(case.published)
            expected = case.published(published, _read(paths.private / published.answers), _read(path))
            assert report.score is not None and math.isclose(report.score, round(expected, 5), abs_tol=1e-9), (
                report.score,
                expected,
            )
    assert validate(published, path, sample).valid == report.valid_submission

    corrected = grade(later, path, data_dir)
    assert corrected.valid_submission == case.corrected_valid, corrected.error
    if later.version in published.same_data_versions:  # the grade carries both numbers, as report shows them
        (beside,) = [s for s in report.other_versions if s["competition_version"] == later.version]
        assert (beside["valid_submission"], beside["score"]) == (corrected.valid_submission, corrected.score)
    if case.corrected_valid and case.edit is not _extra_column and case.name != "two spaces":
        perfect = grade(later, write_csv(_noisy_or_perfect(case, later, fixture), tmp_path / "ref.csv"), data_dir)
        assert corrected.score == perfect.score  # the corrected pairing ignores the order
    assert validate(later, path, sample).valid == corrected.valid_submission


def _noisy_or_perfect(case: Case, comp: Competition, fixture: Fixture) -> Frame:
    """The same predictions in the sample's row and column order."""
    if case.edit is _columns_reversed or case.competition == "stanford-covid-vaccine":
        return Frame(_noisy(comp, fixture), fixture.perfect.n_rows)
    return fixture.perfect


@pytest.mark.parametrize(
    ("competition", "edit"),
    [
        # a scored pressure empty: the published MAE (sklearn) refuses NaN
        ("ventilator-pressure-prediction", _cell("pressure", 0, "")),
        # a scored Patient_Week written twice: its copies outnumber the answer rows they pair with
        ("osic-pulmonary-fibrosis-progression", _osic_edit("scored twice")),
    ],
    ids=["ventilator: empty scored pressure", "osic: a scored row twice"],
)
def test_version_1_refuses_what_only_the_answers_show_the_published_grader_fails_on(
    competition: str, edit: Edit, prepared: Callable[[str], tuple[Fixture, Path]], tmp_path: Path
) -> None:
    """Which rows are scored is in the answers, so only grading can refuse these (validation, which
    has the sample submission only, accepts them; docs/declaring.md says so)."""
    comp = registry.get(f"{competition}@1")
    fixture, data_dir = prepared(competition)
    report = grade(comp, _write(edit(comp, fixture), tmp_path / "submission.csv"), data_dir)
    assert not report.valid_submission and report.error


@pytest.mark.parametrize(
    ("row", "source", "valid"), [(5, 15, True), (5, 2, False)], ids=["both scored", "one unscored"]
)
def test_jigsaw_version_1_applies_the_keep_mask_by_id(row: int, source: int, valid: bool, tmp_path: Path) -> None:
    """Answer rows marked -1 are not scored; the published grader drops them from the submission by id
    label, so a repeated id keeps every copy where its id is scored: counts that then differ fail."""
    comp = registry.get("jigsaw-toxic-comment-classification-challenge@1")
    fixture = make_fixture(comp)
    answers = _copy(fixture.answers)
    for name in _classes(comp):
        answers[name][[2, 7, 11, 20]] = "-1"
    fixture = Fixture(Frame(answers, fixture.answers.n_rows), fixture.sample, fixture.perfect)
    write_prepared(comp, fixture, tmp_path)
    path = _write(_repeat("id", row, source)(comp, fixture), tmp_path / "submission.csv")
    report = grade(comp, path, tmp_path)
    assert report.valid_submission is valid, report.error
    if valid:
        expected = _jigsaw_toxic(comp, _read(CompetitionPaths(tmp_path, comp.id).private / comp.answers), _read(path))
        assert report.score == round(expected, 5)


@pytest.mark.parametrize(
    ("section", "value"),
    [
        ({"matching": {"pairing": "bogus"}}, "matching.pairing"),
        ({"matching": {"columns": "by_name"}}, "matching.columns"),
    ],
)
def test_an_unknown_pairing_mode_is_refused_when_the_registry_loads(section: dict[str, object], value: str) -> None:
    from podium.errors import RegistryError
    from podium.registry import _build, _read_declaration

    data = {**_read_declaration("nomad2018-predict-transparent-conductors"), **section}
    with pytest.raises(RegistryError, match=value):
        _build(data, 1)
