"""Version 1 against the PUBLISHED graders' behaviour, on concrete inputs.

Each reference below restates what the published grader does (its reader, its checks, its metric
call) in a few lines of numpy/sklearn/pycocotools, independently of podium's code; where the
published behaviour comes from pandas 2 reading a file (the reader in the environment may be a
later pandas), the expected values are written out and were checked against pandas 2.2.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest

from podium import registry
from podium.competition import Competition
from podium.fixtures import Fixture, make_fixture, write_prepared
from podium.grading import grade
from podium.grading.published import pandas_text
from podium.grading.table import Frame, write_csv
from podium.records import GradeReport


def _frame(columns: Mapping[str, Sequence[str]]) -> Frame:
    n = len(next(iter(columns.values())))
    return Frame({k: np.array(list(v), dtype=object) for k, v in columns.items()}, n)


def _setup(ref: str, root: Path, answers: Frame | None = None) -> tuple[Competition, Fixture, Path]:
    comp = registry.get(ref)
    fixture = make_fixture(comp)
    if answers is not None:
        fixture = Fixture(answers, answers, answers)
    data_dir = root / ref.replace("@", "_v")
    write_prepared(comp, fixture, data_dir)
    return comp, fixture, data_dir


def _grade_text(comp: Competition, data_dir: Path, text: str, name: str = "submission") -> GradeReport:
    """Grade a submission written byte for byte as ``text`` (spaces and empty cells kept)."""
    path = data_dir / f"{name}.csv"
    path.write_text(text, encoding="utf-8")
    return grade(comp, path, data_dir)


def _grade_frame(comp: Competition, data_dir: Path, frame: Frame, name: str = "submission") -> GradeReport:
    return grade(comp, write_csv(frame, data_dir / f"{name}.csv"), data_dir)


# ---- 1. row sums --------------------------------------------------------------------------


def _published_row_sum_ok(comp_id: str, row: np.ndarray) -> bool:
    """The published check on one row: pandas adds the columns left to right, then
    dog-breed/leaf/spooky: np.isclose(sum, 1, atol=1e-6) (rtol stays 1e-5); lmsys:
    Series.round(6) == 1 (numpy rounding); hms: Python round(sum, 5) == 1."""
    total = np.float64(0.0)
    for value in row:
        total = total + np.float64(value)
    if comp_id == "lmsys-chatbot-arena":
        return bool(np.round(total, 6) == 1)
    if comp_id == "hms-harmful-brain-activity-classification":
        return round(float(total), 5) == 1
    return bool(np.isclose(total, 1, atol=1e-6))


ROW_SUM_COMPETITIONS = [
    "dog-breed-identification",
    "leaf-classification",
    "spooky-author-identification",
    "lmsys-chatbot-arena",
    "hms-harmful-brain-activity-classification",
]
DELTAS = [0.0, 4e-7, -4e-7, 8e-7, -8e-7, 4.9e-6, -4.9e-6, 5e-6, 5.1e-6, -5.1e-6, 1.05e-5, -1.05e-5, 1.2e-5, -1.2e-5]


@pytest.mark.parametrize("comp_id", ROW_SUM_COMPETITIONS)
def test_row_sum_rule_is_the_published_one(comp_id: str, tmp_path: Path) -> None:
    comp, fixture, data_dir = _setup(f"{comp_id}@1", tmp_path)
    classes = list(comp.checks["row_sum"]["columns"])
    verdicts = {}
    for k, delta in enumerate(DELTAS):
        row = np.zeros(len(classes))
        row[0], row[1] = 0.5 + delta, 0.5
        columns = dict(fixture.perfect.columns)
        for name, value in zip(classes, row, strict=True):
            columns[name] = columns[name].copy()
            columns[name][0] = repr(float(value))
        report = _grade_frame(comp, data_dir, Frame(columns, fixture.perfect.n_rows), f"delta{k}")
        expected = _published_row_sum_ok(comp_id, row)
        assert report.valid_submission == expected, (delta, report.error)
        if not expected:
            assert "sum to 1" in (report.error or "") and "row 2" in (report.error or ""), report.error
        verdicts[delta] = report.valid_submission
    if comp_id in ("dog-breed-identification", "leaf-classification", "spooky-author-identification"):
        assert verdicts[5e-6] and verdicts[1.05e-5] and not verdicts[1.2e-5]  # isclose: 1e-6 + 1e-5
    if comp_id == "lmsys-chatbot-arena":
        assert verdicts[4e-7] and not verdicts[8e-7]  # 1.0000008 rounds to 1.000001


# ---- 2. empty cells ------------------------------------------------------------------------

EMPTY_CELL_COLUMNS = {
    "billion-word-imputation": "sentence",
    "google-research-identify-contrails-reduce-global-warming": "encoded_pixels",
    "inaturalist-2019-fgvc6": "predicted",
    "multi-modal-gesture-recognition": "Sequence",
    "tensorflow-speech-recognition-challenge": "label",
    "vesuvius-challenge-ink-detection": "Predicted",
}


@pytest.mark.parametrize("comp_id", sorted(EMPTY_CELL_COLUMNS))
@pytest.mark.parametrize("cell", ["", "NA", "null", "NaN"])
def test_a_cell_pandas_reads_as_missing_is_invalid(comp_id: str, cell: str, tmp_path: Path) -> None:
    """The published graders read these cells as NaN and fail on them (no str, no decode, no int)."""
    comp, fixture, data_dir = _setup(f"{comp_id}@1", tmp_path)
    column = EMPTY_CELL_COLUMNS[comp_id]
    values = fixture.perfect[column].copy()
    values[0] = cell
    report = _grade_frame(comp, data_dir, Frame({**fixture.perfect.columns, column: values}, fixture.perfect.n_rows))
    assert not report.valid_submission
    error = report.error or ""
    assert f"column {column!r} has empty cells" in error and "row 2" in error and "Fix:" in error, error


def test_contrails_dash_and_vesuvius_blank_are_empty_masks(tmp_path: Path) -> None:
    comp, fixture, data_dir = _setup("google-research-identify-contrails-reduce-global-warming@1", tmp_path)
    assert "'-' for an empty mask" in (_grade_text(comp, data_dir, "record_id,encoded_pixels\n1,\n").error or "")
    dashes = Frame(
        {**fixture.perfect.columns, "encoded_pixels": np.full(fixture.perfect.n_rows, "-", dtype=object)}, 24
    )
    assert _grade_frame(comp, data_dir, dashes).valid_submission
    comp, fixture, data_dir = _setup("vesuvius-challenge-ink-detection@1", tmp_path)
    blank = Frame({**fixture.perfect.columns, "Predicted": np.full(fixture.perfect.n_rows, "  ", dtype=object)}, 24)
    report = _grade_frame(comp, data_dir, blank)
    assert report.valid_submission and report.score == 0.0, report.error  # rle_decode: blank = empty mask


def test_inaturalist_compares_the_first_token_as_an_integer(tmp_path: Path) -> None:
    """Published: int(y) for an integer column, else int(y.split()[0]); floats and blanks fail."""
    answers = _frame({"id": ["1", "2", "3"], "predicted": ["5", "17", "3"]})
    comp, _, data_dir = _setup("inaturalist-2019-fgvc6@1", tmp_path, answers)
    ok = _grade_text(comp, data_dir, "id,predicted\n1,05\n2,17 4 2\n3,+3\n")
    assert ok.valid_submission and ok.score == 0.0, ok.error
    for bad in ("5.0", "cat 5", "  "):
        report = _grade_text(comp, data_dir, f'id,predicted\n1,"{bad}"\n2,17\n3,3\n')
        assert not report.valid_submission, bad


def test_tensorflow_speech_labels_are_compared_as_written(tmp_path: Path) -> None:
    answers = _frame({"fname": ["clip_1", "clip_2"], "label": ["yes", "no"]})
    comp, _, data_dir = _setup("tensorflow-speech-recognition-challenge@1", tmp_path, answers)
    report = _grade_text(comp, data_dir, 'fname,label\nclip_1," yes"\nclip_2,no\n')
    assert report.score == 0.5  # sklearn's accuracy on the cells pandas reads: ' yes' != 'yes'


def test_multi_modal_blank_sequence_is_the_empty_sequence(tmp_path: Path) -> None:
    answers = _frame({"Id": ["300", "301"], "Sequence": ["1 2 3", "4 5"]})
    comp, _, data_dir = _setup("multi-modal-gesture-recognition@1", tmp_path, answers)
    report = _grade_text(comp, data_dir, 'Id,Sequence\n0300,"  "\n0301,4 5\n')
    assert report.valid_submission and report.score == pytest.approx(3 / 5), report.error


# ---- 3. token splitting and the published reader ---------------------------------------------


def test_pandas_text_is_pandas_2_read_then_astype_str() -> None:
    # Checked against pandas 2.2.3: read_csv(float_precision="round_trip")[col].astype(str).
    assert pandas_text(["5", "", "7"]) == ["5.0", "nan", "7.0"]
    assert pandas_text([" 5", "+7 ", "07"]) == ["5", "7", "7"]
    assert pandas_text(["1e3", "5"]) == ["1000.0", "5.0"]
    assert pandas_text(["TRUE", ""]) == ["True", "nan"]
    assert pandas_text(["True", "5"]) == ["True", "5"]
    assert pandas_text(["5 7", "NA", "6"]) == ["5 7", "nan", "6"]
    assert pandas_text(["18446744073709551615", "1"]) == ["18446744073709551615", "1"]
    assert pandas_text(["5.", ".5", "-0"]) == ["5.0", "0.5", "-0.0"]


HOTEL = {"image": ["a.jpg", "b.jpg", "c.jpg"], "hotel_id": ["100", "200", "300"]}


@pytest.mark.parametrize(
    ("rows", "published"),  # the published grader's scores of these files (run under pandas 2.2)
    [
        (["200  100", "200", "300"], (1 / 3 + 1 + 1) / 3),  # the double space is an empty guess
        ([" 100", "200 7", "300 "], (1 / 2 + 1 + 1) / 3),  # so is a leading space (in a text column)
        ([" 100", "200", "300 "], 1.0),  # in a column of single integers pandas strips the spaces
        (["0100", "200", "300"], 1.0),  # a column of single integers: pandas drops the zero
        (["100", "", "300"], 0.0),  # one missing cell: every guess is a float ('100.0')
        (["100 5", "", "300"], 2 / 3),  # a text column: the missing cell is the guess 'nan'
    ],
)
def test_hotel_id_reads_and_splits_as_published(rows: list[str], published: float, tmp_path: Path) -> None:
    comp, _, data_dir = _setup("hotel-id-2021-fgvc8@1", tmp_path, _frame(HOTEL))
    text = "image,hotel_id\n" + "".join(f'{i},"{r}"\n' for i, r in zip(HOTEL["image"], rows, strict=True))
    report = _grade_text(comp, data_dir, text)
    assert report.valid_submission, report.error
    assert report.score == round(published, 5)  # the published grader rounds to 5 decimals


def test_hotel_id_version_2_splits_on_whitespace(tmp_path: Path) -> None:
    comp, _, data_dir = _setup("hotel-id-2021-fgvc8@2", tmp_path, _frame(HOTEL))
    report = _grade_text(comp, data_dir, 'image,hotel_id\na.jpg,"200  100"\nb.jpg,200\nc.jpg,\n')
    assert report.score == pytest.approx((1 / 2 + 1 + 0) / 3, abs=1e-5)
    assert registry.get("hotel-id-2021-fgvc8@2").to_dict()["changes"]


@pytest.mark.parametrize(
    ("comp_id", "id_column", "column", "truth"),
    [
        ("whale-categorization-playground", "Image", "Id", ["w_1", "new_whale"]),
        ("h-and-m-personalized-fashion-recommendations", "customer_id", "prediction", ["706016001", "5 6"]),
    ],
)
def test_map_double_space_is_an_empty_guess(
    comp_id: str, id_column: str, column: str, truth: list[str], tmp_path: Path
) -> None:
    ids = ["x1", "x2"]
    comp, _, data_dir = _setup(f"{comp_id}@1", tmp_path, _frame({id_column: ids, column: truth}))
    guesses = [f"zzz  {truth[0]}", truth[1]]
    text = f"{id_column},{column}\n" + "".join(f'{i},"{g}"\n' for i, g in zip(ids, guesses, strict=True))
    v1 = _grade_text(comp, data_dir, text)
    assert v1.score == round((1 / 3 + 1) / 2, 5)  # ["zzz", "", truth]: a hit at rank 3
    v2 = grade(registry.get(f"{comp_id}@2"), data_dir / "submission.csv", data_dir)
    assert v2.score is not None and v1.score is not None and v2.score > v1.score
    extra = _grade_text(
        comp, data_dir, text.replace(f"{column}\n", f"{column},Unnamed: 0\n", 1).replace('"\n', '",0\n')
    )
    assert not extra.valid_submission and "unexpected column" in (extra.error or "")


def test_bms_empty_inchi_is_the_text_nan(tmp_path: Path) -> None:
    answers = _frame({"image_id": ["a", "b"], "InChI": ["InChI=1S/H2O/h1H2", "InChI=1S/H2O/h1H2"]})
    comp, _, data_dir = _setup("bms-molecular-translation@1", tmp_path, answers)
    text = "image_id,InChI\na,\nb,InChI=1S/H2O/h1H2\n"
    assert _grade_text(comp, data_dir, text).score == pytest.approx(16.0 / 2)  # distance to "nan" is 16
    v2 = grade(registry.get("bms-molecular-translation@2"), data_dir / "submission.csv", data_dir)
    assert v2.score == pytest.approx(17.0 / 2)  # distance to "" is the length, 17


# ---- 4. vinbigdata: COCO annotation ids from 0 ------------------------------------------------


def _published_coco(truth: Sequence[str], predictions: Sequence[str], file_order: Sequence[int]) -> float:
    """The published VinBigData evaluation: images numbered in answer order, true boxes numbered
    from 0 in answer order, predicted boxes from 0 in submission-file order, corners handed to
    COCO as the bbox, COCOeval at IoU 0.4, stats[0]."""
    import contextlib
    import io

    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    def boxes(cell: str) -> np.ndarray:
        return np.array(list(map(float, cell.split(" ")))).reshape(-1, 6)

    def annotation(ident: int, image: int, b: np.ndarray) -> dict[str, object]:
        area = (b[4] - b[2]) * (b[5] - b[3])
        return {
            "id": ident,
            "image_id": image,
            "category_id": int(b[0]),
            "bbox": list(b[2:]),
            "area": area,
            "iscrowd": 0,
        }

    images = [{"id": i} for i in range(len(truth))]
    gts = [annotation(0, image, b) for image, cell in enumerate(truth) for b in boxes(cell)]
    dts = [{**annotation(0, image, b), "score": b[1]} for image in file_order for b in boxes(predictions[image])]
    for numbered in (gts, dts):  # both numbered from 0, in that order
        for ident, item in enumerate(numbered):
            item["id"] = ident
    categories = [{"id": c} for c in sorted({g["category_id"] for g in gts})]
    with contextlib.redirect_stdout(io.StringIO()):
        truth_coco, pred_coco = COCO(), COCO()
        truth_coco.dataset = {"images": images, "categories": categories, "annotations": gts}
        pred_coco.dataset = {"images": images, "categories": categories, "annotations": dts}
        truth_coco.createIndex()
        pred_coco.createIndex()
        evaluation = COCOeval(truth_coco, pred_coco, "bbox")
        evaluation.params.imgIds = sorted(truth_coco.getImgIds())
        evaluation.params.iouThrs = np.array([0.4])
        evaluation.evaluate()
        evaluation.accumulate()
        evaluation.summarize()
    return float(evaluation.stats[0])


VIN = "vinbigdata-chest-xray-abnormalities-detection"


def test_vinbigdata_two_boxes_of_one_class(tmp_path: Path) -> None:
    """The issue's case: the first true box can never be matched, 0.25248 published (1.0 at v2)."""
    cell = "3 1 10 10 50 50 3 1 100 100 150 150"
    answers = _frame({"image_id": ["img1"], "PredictionString": [cell]})
    comp, _, data_dir = _setup(f"{VIN}@1", tmp_path, answers)
    text = f"image_id,PredictionString\nimg1,{cell}\n"
    assert _published_coco([cell], [cell], [0]) == pytest.approx(0.2524752475)
    assert _grade_text(comp, data_dir, text).score == pytest.approx(0.25248, abs=5e-6)  # published, 5 decimals
    assert grade(registry.get(f"{VIN}@2"), data_dir / "submission.csv", data_dir).score == 1.0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_vinbigdata_v1_equals_the_published_evaluation(seed: int, tmp_path: Path) -> None:
    comp, fixture, data_dir = _setup(f"{VIN}@1", tmp_path)
    truth = list(fixture.answers["PredictionString"])
    rng = np.random.default_rng(seed)
    predictions = []
    for cell in truth:  # the truth jittered, with a duplicate of the first box and a random one
        b = np.array(cell.split(" "), dtype=float).reshape(-1, 6)
        b[:, 1] = rng.uniform(0.1, 1, len(b)).round(3)
        b[:, 2:] += rng.normal(0, 3, (len(b), 4)).round(1)
        extra = [b[0], [rng.integers(0, 14), 0.05, 5.0, 5.0, 80.0, 90.0]]
        predictions.append(" ".join(f"{v:g}" for v in np.vstack([b, *extra]).ravel()))
    order = rng.permutation(len(truth))
    text = "image_id,PredictionString\n" + "".join(
        f"{fixture.answers['image_id'][i]},{predictions[i]}\n" for i in order
    )
    report = _grade_text(comp, data_dir, text)
    assert report.valid_submission, report.error
    assert report.score == round(_published_coco(truth, predictions, order.tolist()), 5)


def test_vinbigdata_v1_needs_single_spaces(tmp_path: Path) -> None:
    comp, fixture, data_dir = _setup(f"{VIN}@1", tmp_path)
    ids, cells = fixture.perfect["image_id"], list(fixture.perfect["PredictionString"])
    cells[0] = cells[0].replace(" ", "  ", 1)
    text = "image_id,PredictionString\n" + "".join(f"{i},{c}\n" for i, c in zip(ids, cells, strict=True))
    report = _grade_text(comp, data_dir, text)
    assert not report.valid_submission and "single" in (report.error or ""), report.error
    assert grade(registry.get(f"{VIN}@2"), data_dir / "submission.csv", data_dir).score == 1.0


# ---- 5. published data layout ------------------------------------------------------------------
# (the split itself is restated from the published prepare scripts on the generated raw files)


def _prepare_v1(comp_id: str, root: Path) -> tuple[Path, Path]:
    from podium.data.prepare import prepare_competition
    from podium.fixtures import make_raw

    comp = registry.get(f"{comp_id}@1")
    raw = make_raw(comp, root / "raw")
    assert prepare_competition(comp, root / "data", source=raw).status == "prepared"
    return raw, root / "data" / comp_id / "prepared"


def test_nomad2018_v1_public_files_are_the_published_ones(tmp_path: Path) -> None:
    import io
    import zipfile

    import pandas as pd
    from sklearn.model_selection import train_test_split

    raw, prepared = _prepare_v1("nomad2018-predict-transparent-conductors", tmp_path)
    with zipfile.ZipFile(raw / "train.csv.zip") as archive:
        table = pd.read_csv(io.BytesIO(archive.read("train.csv")))
    train, test = train_test_split(table, test_size=0.1, random_state=0)
    old_train_ids, old_test_ids = train["id"].tolist(), test["id"].tolist()
    train = train.assign(id=range(1, len(train) + 1))  # both sides numbered from 1, in split order
    test = test.assign(id=range(1, len(test) + 1))
    targets = ["formation_energy_ev_natom", "bandgap_energy_ev"]
    assert (prepared / "public" / "train.csv").read_text() == train.to_csv(index=False)
    assert (prepared / "public" / "test.csv").read_text() == test.drop(columns=targets).to_csv(index=False)
    assert (prepared / "private" / "test.csv").read_text() == test.to_csv(index=False)
    sample = pd.DataFrame({"id": test["id"], targets[0]: 0.1779, targets[1]: 1.8892})
    assert (prepared / "public" / "sample_submission.csv").read_text() == sample.to_csv(index=False)
    with zipfile.ZipFile(raw / "train.zip") as archive:
        for split, old_ids in (("train", old_train_ids), ("test", old_test_ids)):
            for new_id, old_id in enumerate(old_ids, start=1):
                copied = (prepared / "public" / split / str(new_id) / "geometry.xyz").read_bytes()
                assert copied == archive.read(f"train/{old_id}/geometry.xyz")


def test_ventilator_v1_public_files_are_the_published_ones(tmp_path: Path) -> None:
    import pandas as pd
    from sklearn.model_selection import train_test_split

    raw, prepared = _prepare_v1("ventilator-pressure-prediction", tmp_path)
    dtypes = {"id": "int32", "breath_id": "int32", "R": "int8", "C": "int8", "u_out": "int8"}
    table = pd.read_csv(raw / "train.csv", dtype=dtypes)
    groups = [frame.index.tolist() for _, frame in table.groupby("breath_id")]
    train_groups, test_groups = train_test_split(groups, test_size=0.1, random_state=0)
    train = table.loc[[i for g in train_groups for i in g]].assign(id=lambda f: range(1, len(f) + 1))
    test = table.loc[[i for g in test_groups for i in g]].assign(id=lambda f: range(1, len(f) + 1))
    write = {"index": False, "float_format": "%.10g"}
    assert (prepared / "public" / "train.csv").read_text() == train.to_csv(**write)
    assert (prepared / "public" / "test.csv").read_text() == test.drop(columns="pressure").to_csv(**write)
    assert (prepared / "private" / "test.csv").read_text() == test.to_csv(**write)
    assert (prepared / "public" / "sample_submission.csv").read_text() == test[["id"]].assign(pressure=0).to_csv(
        **write
    )


def test_stanford_covid_v1_keeps_train_json_order(tmp_path: Path) -> None:
    import pandas as pd

    raw, prepared = _prepare_v1("stanford-covid-vaccine", tmp_path)
    table = pd.read_json(raw / "train.json", lines=True)
    drawn = table[table["SN_filter"] > 0].sample(n=int(0.1 * len(table)), random_state=0).index
    expected_ids = table.loc[sorted(drawn), "id"].tolist()  # train.json order, not the draw's
    assert expected_ids != table.loc[drawn, "id"].tolist(), "the fixture should tell the two orders apart"
    public_test = pd.read_json(prepared / "public" / "test.json", lines=True)
    assert public_test["id"].tolist() == expected_ids
    assert public_test["index"].tolist() == list(range(len(expected_ids)))
    public_train = pd.read_json(prepared / "public" / "train.json", lines=True)
    assert public_train["id"].tolist() == [i for i in table["id"] if i not in set(expected_ids)]
    answers = pd.read_csv(prepared / "private" / "test.csv")
    seq_length = int(table["seq_length"].iloc[0])
    assert answers["id_seqpos"].tolist() == [f"{i}_{p}" for i in expected_ids for p in range(seq_length)]
    sample = (prepared / "public" / "sample_submission.csv").read_text().splitlines()
    assert sample[1].endswith(",0.0000000000,0.0000000000,0.0000000000,0.0000000000,0.0000000000")


def test_leak_scan_accepts_shared_row_numbers_only(tmp_path: Path) -> None:
    from podium.data.leaks import scan_for_leaks

    comp = registry.get("nomad2018-predict-transparent-conductors@1")
    public, private = tmp_path / "public", tmp_path / "private"
    public.mkdir()
    private.mkdir()
    (private / "test.csv").write_text("id,formation_energy_ev_natom\n1,0.1\n2,0.2\n")
    (public / "train.csv").write_text("id,formation_energy_ev_natom\n1,0.3\n2,0.4\n3,0.5\n")
    assert scan_for_leaks(comp, public, private, {"1", "2"}) == []
    (public / "train.csv").write_text("id,formation_energy_ev_natom\n2,0.3\n1,0.4\n3,0.5\n")  # not row numbers
    assert scan_for_leaks(comp, public, private, {"1", "2"})
    other = registry.get("spaceship-titanic")  # an id column not declared as a row number
    (public / "train.csv").write_text("PassengerId,Transported\n1,True\n2,False\n")
    assert scan_for_leaks(other, public, private, {"1", "2"})
