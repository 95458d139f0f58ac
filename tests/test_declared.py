"""The declarative prepare (prepare: in competition.yaml): its keys, and agreement with the scripts it replaced.

The reference tests restate, on each competition's generated raw folder, what the published
prepare script of that shape does (pandas reads, ``train_test_split``, ``to_csv``) and compare the
prepared files byte for byte; one competition per shape of declaration.
"""

from __future__ import annotations

import csv
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.model_selection import train_test_split

from podium import registry
from podium.data import declared
from podium.data.declared import build, renumbered, split_frame
from podium.data.options import SpecError
from podium.data.prepare import prepare_competition
from podium.data.spec import Output, SplitSpec, zip_member
from podium.fixtures import make_raw

TEXT = {"dtype": str, "keep_default_na": False}
_DRAW = {"random": "randint", "low": 0, "high": 2, "seed": 0, "rng": "RandomState"}


def _prepare(cid: str, tmp_path: Path) -> tuple[Path, Path]:
    comp = registry.get(cid)
    raw = make_raw(comp, tmp_path / "raw")
    assert prepare_competition(comp, tmp_path / "data", source=raw).status == "prepared"
    return raw, tmp_path / "data" / cid / "prepared"


def _same(prepared: Path, expected: dict[str, pd.DataFrame]) -> None:
    for name, frame in expected.items():
        assert (prepared / name).read_bytes() == frame.to_csv(index=False).encode(), name


def _only_member(path: Path, name: str, compression: int) -> bytes:
    """The one member of a zip the prepare wrote, checked for its name, compression and fixed time."""
    with zipfile.ZipFile(path) as archive:
        (info,) = archive.infolist()
        assert (info.filename, info.compress_type, info.date_time) == (name, compression, (1980, 1, 1, 0, 0, 0))
        return archive.read(info)


def _member(path: Path, name: str) -> bytes:
    with zipfile.ZipFile(path) as archive:
        return archive.read(name)


# ---- the keys -------------------------------------------------------------------------------------


def test_group_split_sends_whole_groups_and_keeps_file_order() -> None:
    frame = pd.DataFrame({"g": list("abcabdeefg"), "v": range(10)})
    for order in ("appearance", "sorted"):
        spec = SplitSpec.from_dict(
            {"engine": "pandas", "source": "t.csv", "group": "g", "groups": order, "test_size": 0.3}
        )
        train, test = split_frame(frame, spec)
        distinct = np.asarray(frame["g"].unique())
        values = distinct if order == "appearance" else np.sort(distinct)
        _, expected = train_test_split(values, test_size=0.3, random_state=0)
        assert set(test["g"]) == set(expected) and set(train["g"]).isdisjoint(expected)
        assert test.index.is_monotonic_increasing and train.index.is_monotonic_increasing
        assert len(train) + len(test) == len(frame)


def test_row_split_is_train_test_split_on_the_frame() -> None:
    frame = pd.DataFrame({"id": [f"r{i}" for i in range(30)], "y": np.arange(30) % 2})
    spec = SplitSpec.from_dict({"engine": "pandas", "source": "t.csv", "test_size": 0.2, "random_state": 3})
    train, test = split_frame(frame, spec)
    expected_train, expected_test = train_test_split(frame, test_size=0.2, random_state=3)
    assert train.equals(expected_train) and test.equals(expected_test)
    everything = SplitSpec.from_dict({"engine": "pandas", "source": "t.csv", "test_size": "all"})
    assert split_frame(frame, everything)[1].equals(frame)


def test_time_split_takes_the_latest_rows_and_a_moment_is_never_on_both_sides() -> None:
    days = ["2021-01-03", "2021-01-01", "2021-01-05", "2021-01-02", "2021-01-05", "2021-01-04", "2021-01-05",
            "2021-01-01", "2021-01-02", "2021-01-04"]  # fmt: skip
    frame = pd.DataFrame({"day": days, "v": range(10)})
    spec = SplitSpec.from_dict({"engine": "pandas", "source": "t.csv", "time": "day", "test_size": 0.2})
    train, test = split_frame(frame, spec)
    assert list(test["v"]) == [2, 4, 6]  # 2 rows asked, all three of the latest day taken
    assert max(train["day"]) < min(test["day"]) and len(train) + len(test) == len(frame)
    assert test.index.is_monotonic_increasing and train.index.is_monotonic_increasing
    moments = pd.DataFrame({"t": ["2021-01-02 10:00 UTC", "2021-01-02 9:00 UTC", "2021-01-01 23:00 UTC"] * 3})
    spec = SplitSpec.from_dict({"engine": "pandas", "source": "t.csv", "time": "t", "test_size": 3})
    assert set(split_frame(moments, spec)[1]["t"]) == {"2021-01-02 10:00 UTC"}  # as times, not as text
    with pytest.raises(SpecError, match="group and time"):
        SplitSpec.from_dict({"engine": "pandas", "source": "t.csv", "time": "t", "group": "g", "test_size": 3})
    with pytest.raises(SpecError, match="time need engine: pandas"):
        SplitSpec.from_dict({"source": "t.csv", "time": "t", "test_size": 3})


def test_small_test_size_applies_only_below_a_row_count() -> None:
    spec = SplitSpec.from_dict({"source": "t.csv", "test_size": 100, "small_test_size": 0.1})
    assert spec.resolved_test_size(100) == 0.1 and spec.resolved_test_size(101) == 100


def test_outputs_are_built_in_the_documented_order() -> None:
    comp = registry.get("spooky-author-identification")  # submission columns EAP, HPL, MWS with defaults
    test = pd.DataFrame({"id": ["a", "b"], "text": ["x", "y"], "author": ["HPL", "EAP"]})
    sides = {"test": test, "train": test.iloc[:0]}
    answers = build(Output.from_dict({"columns": ["id"], "one_hot": {"column": "author"}}, "t"), sides, comp, "t")
    assert answers.to_csv(index=False) == "id,EAP,HPL,MWS\na,0,1,0\nb,1,0,0\n"
    renamed = Output.from_dict({"drop": ["text"], "rename": {"author": "who"}, "assign": {"who": 1, "n": 0.5}}, "t")
    assert build(renamed, sides, comp, "t").to_csv(index=False) == "id,who,n\na,1,0.5\nb,1,0.5\n"
    sample = build(Output.from_dict({"columns": ["id"], "defaults": True}, "t"), sides, comp, "t")
    assert list(sample.columns) == ["id", "EAP", "HPL", "MWS"] and sample["EAP"].tolist() == [0.403493538995863] * 2
    with pytest.raises(SpecError, match="not classes"):
        build(Output.from_dict({"one_hot": {"column": "author", "classes": ["EAP"]}}, "t"), sides, comp, "t")
    with pytest.raises(SpecError, match="not in the table"):
        build(Output.from_dict({"columns": ["nope"]}, "t"), sides, comp, "t")


def test_renumber_numbers_each_side_in_its_order() -> None:
    frame = pd.DataFrame({"id": [f"r{i}" for i in range(20)], "y": np.arange(20)})
    spec = SplitSpec.from_dict({"engine": "pandas", "source": "t.csv", "test_size": 0.25})
    train, test = split_frame(frame, spec)
    sides = {"train": train, "test": test}
    separate = SplitSpec.from_dict({**_SPLIT, "renumber": {"column": "id", "start": 1}}).renumber
    continued = SplitSpec.from_dict({**_SPLIT, "renumber": {"column": "id", "sides": "continued"}}).renumber
    named = SplitSpec.from_dict({**_SPLIT, "renumber": {"column": "id", "format": {"train": "A{n}", "test": "B{n}"}}})
    assert separate is not None and continued is not None and named.renumber is not None
    out = renumbered(separate, sides)
    assert out["train"]["id"].tolist() == list(range(1, 16)) and out["test"]["id"].tolist() == list(range(1, 6))
    assert out["test"]["y"].tolist() == test["y"].tolist() and list(out["test"].columns) == ["id", "y"]
    assert renumbered(continued, sides)["test"]["id"].tolist() == list(range(15, 20))
    assert renumbered(named.renumber, sides)["test"]["id"].tolist() == [f"B{i}" for i in range(5)]
    assert sides["train"]["id"].tolist() == train["id"].tolist()  # the rows as read are left as they were


def test_renumber_by_value_numbers_distinct_values_in_order_of_appearance() -> None:
    train = pd.DataFrame({"s": [7, 7, 3, np.nan, 3, 9], "t": range(6)})
    test = pd.DataFrame({"s": [5, 2, 5], "t": range(3)})
    spec = SplitSpec.from_dict({**_SPLIT, "renumber": {"column": "s", "by": "value"}})
    assert spec.renumber is not None
    out = renumbered(spec.renumber, {"train": train, "test": test})
    assert out["train"]["s"].tolist() == [0, 0, 1, 2, 1, 3] and out["test"]["s"].tolist() == [0, 1, 0]
    spec = SplitSpec.from_dict({**_SPLIT, "renumber": {"column": "s", "by": "value", "sides": "continued"}})
    assert spec.renumber is not None
    assert renumbered(spec.renumber, {"train": train, "test": test})["test"]["s"].tolist() == [4, 5, 4]


def test_computed_columns_format_the_row_or_copy_a_column() -> None:
    comp = registry.get("text-normalization-challenge-english-language")
    test = pd.DataFrame({"s": [0, 1], "t": [3, 4], "before": ["NA", "x"], "pad": ["7", "12"]})
    sides = {"test": test, "train": test.iloc[:0]}
    out = Output.from_dict(
        {
            "columns": [],
            "assign": {"id": {"format": "{s}_{t}"}, "after": {"column": "before"}, "p": {"format": "{pad:0>5}"}},
        },
        "t",
    )
    assert build(out, sides, comp, "t").to_csv(index=False) == "id,after,p\n0_3,NA,00007\n1_4,x,00012\n"
    quoted = Output.from_dict({"write": {"quoting": "nonnumeric"}}, "t")
    assert quoted.write == {"quoting": csv.QUOTE_NONNUMERIC}
    with pytest.raises(SpecError, match="not in the table"):
        build(Output.from_dict({"assign": {"a": {"column": "nope"}}}, "t"), sides, comp, "t")
    with pytest.raises(SpecError, match="uses column"):
        build(Output.from_dict({"assign": {"a": {"format": "{nope}"}}}, "t"), sides, comp, "t")


def test_random_columns_are_one_draw_of_the_declared_generator() -> None:
    comp = registry.get("learning-agency-lab-automated-essay-scoring-2")
    test = pd.DataFrame({"essay_id": [f"e{i}" for i in range(9)]})
    sides = {"test": test, "train": test.iloc[:0]}
    legacy = {"random": "randint", "low": 1, "high": 7, "seed": 42, "rng": "RandomState"}
    out = build(Output.from_dict({"assign": {"score": legacy}}, "t"), sides, comp, "t")
    assert out["score"].tolist() == np.random.RandomState(42).randint(1, 7, size=9).tolist()
    modern = {"random": "uniform", "low": 1, "high": 100, "seed": 0, "rng": "default_rng", "round": 2}
    out = build(Output.from_dict({"assign": {"score": modern}}, "t"), sides, comp, "t")
    assert out["score"].tolist() == np.random.default_rng(0).uniform(1, 100, 9).round(2).tolist()


def test_streamed_outputs_in_blocks_are_the_whole_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """learning-agency's random sample submission, built 7 rows at a time, is the one-block table."""
    whole = _prepare("learning-agency-lab-automated-essay-scoring-2", tmp_path / "whole")[1]
    monkeypatch.setattr(declared, "_CHUNK_ROWS", 7)
    blocks = _prepare("learning-agency-lab-automated-essay-scoring-2", tmp_path / "blocks")[1]
    for name in ("public/sample_submission.csv", "private/answers.csv", "public/test.csv"):
        assert (blocks / name).read_bytes() == (whole / name).read_bytes(), name
    answers = pd.read_csv(whole / "private" / "answers.csv", **TEXT)
    scores = np.random.RandomState(42).randint(1, 7, size=len(answers))
    _same(whole, {"public/sample_submission.csv": pd.DataFrame({"essay_id": answers["essay_id"], "score": scores})})


def test_zip_member_paths() -> None:
    assert zip_member("train.zip:train/{id}.jpg") == ("train.zip", "train/{id}.jpg")
    assert zip_member("public/test.tsv.zip:test.tsv") == ("public/test.tsv.zip", "test.tsv")
    assert zip_member("train/{id}.zip") is None and zip_member("images/a.jpg") is None


_SPLIT = {"engine": "pandas", "source": "t.csv", "test_size": 0.1}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"source": "t.csv", "test_size": 0.1, "tset_size": 1}, "unknown key"),
        ({"source": "t.csv", "test_size": 0.1, "group": "g"}, "need engine: pandas"),
        ({"source": "t.csv", "test_size": 0.1, "outputs": {"x.csv": {}}}, "public/ or private/"),
        ({"source": "t.csv", "test_size": 0.1, "outputs": {"public/x.csv": {"rows": "train"}}}, "test rows only"),
        ({"source": "t.csv", "engine": "pandas", "test_size": "half"}, "'all'"),
        ({"source": "t.csv", "engine": "pandas", "test_size": 0.1, "read": "raw"}, "read"),
        ({"source": "t.csv", "engine": "pandas", "test_size": 0.1, "files": [{"from": "a"}]}, "at least one"),
        ({**_SPLIT, "renumber": {"column": "id", "sides": "both"}}, "separate or continued"),
        ({**_SPLIT, "renumber": {"column": "id", "format": {"test": "T{n}"}}}, "one per side"),
        ({**_SPLIT, "renumber": {"start": 1}}, "renumber takes"),
        ({**_SPLIT, "renumber": {"column": "id", "by": "group"}}, "row or value"),
        ({**_SPLIT, "outputs": {"public/s.csv": {"assign": {"y": {"format": "{a}", "column": "a"}}}}}, "one of"),
        ({**_SPLIT, "write": {"quoting": "some"}}, "quoting is one of"),
        ({**_SPLIT, "outputs": {"public/s.csv": {"assign": {"y": {"random": "randint", "low": 0}}}}}, "needs"),
        ({**_SPLIT, "outputs": {"public/s.csv": {"assign": {"y": {**_DRAW, "rng": "mt"}}}}}, "rng one of"),
        ({**_SPLIT, "archives": {"public/x.zip": {}}}, "not zips the split writes"),
        ({**_SPLIT, "outputs": {"public/x.zip:x.csv": {}}, "archives": {"public/x.zip": {"times": "now"}}}, "times"),
        ({**_SPLIT, "write": {"header": False}}, "unknown key"),
        (
            {**_SPLIT, "outputs": {"public/x.zip:x.csv": {}}, "archives": {"public/x.zip": {"times": "source"}}},
            "no raw zip",
        ),
        (
            {
                **_SPLIT,
                "files": [{"from": "{id}", "test": "public/x.zip:{id}"}],
                "archives": {"public/x.zip": {"times": "source"}},
            },
            "no raw zip",
        ),
        ({**_SPLIT, "read": {"float_precision": "high"}}, "round_trip"),
        ({**_SPLIT, "files": [{"from": "{g}.zip:{id}", "test": "public/{id}"}]}, "cannot depend on the row"),
        ({**_SPLIT, "outputs": {"public/x.zip:x.csv": None}}, "a zip member is none"),
        ({"source": "t.csv", "test_size": 0.1, "renumber": {"column": "id"}}, "need engine: pandas"),
        ({"source": "t.csv", "test_size": 0.1, "outputs": {"public/x.zip:x.csv": {}}}, "need engine: pandas"),
    ],
)
def test_a_mistyped_declaration_names_its_key(raw: dict[str, object], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        SplitSpec.from_dict(raw)


# ---- the declarations agree with the scripts they replaced -----------------------------------------


def test_row_split_with_files_as_the_aptos_script(tmp_path: Path) -> None:
    raw, prepared = _prepare("aptos2019-blindness-detection", tmp_path)
    table = pd.read_csv(raw / "train.csv", dtype={"id_code": str})
    train, test = train_test_split(table, test_size=0.1, random_state=0)
    _same(
        prepared,
        {
            "public/train.csv": train,
            "public/test.csv": test[["id_code"]],
            "private/test.csv": test[["id_code", "diagnosis"]],
            "public/sample_submission.csv": test[["id_code"]].assign(diagnosis=0),
        },
    )
    for side, frame in (("train_images", train), ("test_images", test)):
        copied = sorted(p.name for p in (prepared / "public" / side).iterdir())
        assert copied == sorted(f"{i}.png" for i in frame["id_code"])
        for name in copied:
            assert (prepared / "public" / side / name).read_bytes() == (raw / "train_images" / name).read_bytes()


def test_zipped_source_and_one_hot_answers_as_the_spooky_script(tmp_path: Path) -> None:
    raw, prepared = _prepare("spooky-author-identification", tmp_path)
    with zipfile.ZipFile(raw / "train.zip") as archive, archive.open("train.csv") as handle:
        old = pd.read_csv(handle, **TEXT)
    train, test = train_test_split(old, test_size=0.1, random_state=0)
    answers = test[["id"]].copy()
    for name in ("EAP", "HPL", "MWS"):
        answers[name] = (test["author"] == name).astype(int)
    priors = {"EAP": 0.403493538995863, "HPL": 0.287808366106543, "MWS": 0.308698094897594}
    _same(
        prepared,
        {
            "public/train.csv": train,
            "public/test.csv": test.drop(columns=["author"]),
            "private/test.csv": answers,
            "public/sample_submission.csv": answers[["id"]].assign(**priors),
        },
    )


def test_group_split_tables_and_train_only_files_as_the_champs_script(tmp_path: Path) -> None:
    raw, prepared = _prepare("champs-scalar-coupling", tmp_path)
    table = pd.read_csv(raw / "train.csv")
    molecules = np.sort(table["molecule_name"].unique())
    train_molecules, test_molecules = train_test_split(molecules, test_size=0.1, random_state=0)
    in_test = table["molecule_name"].isin(set(test_molecules))
    train, test = table[~in_test], table[in_test]
    expected = {
        "public/train.csv": train,
        "public/test.csv": test.drop(columns=["scalar_coupling_constant"]),
        "private/answers.csv": test,
        "public/sample_submission.csv": test[["id"]].assign(scalar_coupling_constant=0),
    }
    for name in ("structures.csv", "dipole_moments.csv", "potential_energy.csv"):
        frame = pd.read_csv(raw / name)
        expected[f"public/{name}"] = frame[frame["molecule_name"].isin(set(train_molecules))]
    _same(prepared, expected)
    copied = sorted(p.stem for p in (prepared / "public" / "structures").iterdir())
    assert copied == sorted(set(train["molecule_name"])) and not set(copied) & set(test_molecules)


def test_appearance_groups_and_both_sides_of_tables_as_the_nfl_script(tmp_path: Path) -> None:
    raw, prepared = _prepare("nfl-player-contact-detection", tmp_path)
    labels = pd.read_csv(raw / "train_labels.csv", **TEXT)
    plays = np.asarray(labels["game_play"].unique(), dtype=object)
    train_plays, test_plays = train_test_split(plays, test_size=0.1, random_state=0)
    train, test = labels[labels["game_play"].isin(train_plays)], labels[labels["game_play"].isin(test_plays)]
    expected = {
        "public/train_labels.csv": train,
        "private/test.csv": test,
        "public/sample_submission.csv": pd.DataFrame({"contact_id": test["contact_id"], "contact": 0}),
    }
    frame = pd.read_csv(raw / "train_player_tracking.csv", **TEXT)
    expected["public/train_player_tracking.csv"] = frame[frame["game_play"].isin(train_plays)]
    expected["public/test_player_tracking.csv"] = frame[frame["game_play"].isin(test_plays)]
    _same(prepared, expected)
    videos = sorted(p.name for p in (prepared / "public" / "test").iterdir())
    assert videos == sorted(
        f"{p}_{v}.mp4" for p in test["game_play"].unique() for v in ("All29", "Endzone", "Sideline")
    )


def test_no_split_and_verbatim_copies_as_the_jigsaw_unintended_script(tmp_path: Path) -> None:
    raw, prepared = _prepare("jigsaw-unintended-bias-in-toxicity-classification", tmp_path)
    test = pd.read_csv(raw / "test_private_expanded.csv", usecols=["id", "comment_text"], **TEXT)
    _same(
        prepared,
        {"public/test.csv": test, "public/sample_submission.csv": test[["id"]].assign(prediction=0.0)},
    )
    assert (prepared / "public" / "train.csv").read_bytes() == (raw / "train.csv").read_bytes()
    assert (prepared / "private" / "test.csv").read_bytes() == (raw / "test_private_expanded.csv").read_bytes()


def test_streamed_split_with_outputs_and_copies_as_the_taxi_script(tmp_path: Path) -> None:
    raw, prepared = _prepare("new-york-city-taxi-fare-prediction", tmp_path)
    table = pd.read_csv(raw / "train.csv", **TEXT)
    _, test_rows = train_test_split(np.arange(len(table)), test_size=0.1, random_state=0)  # 120 rows <= 9914
    in_test = np.zeros(len(table), dtype=bool)
    in_test[test_rows] = True
    answers = pd.read_csv(prepared / "private" / "test.csv", **TEXT)
    assert answers.equals(table[in_test].reset_index(drop=True))  # rows in file order, cells as text
    assert pd.read_csv(prepared / "public" / "labels.csv", **TEXT).equals(table[~in_test].reset_index(drop=True))
    _same(prepared, {"public/sample_submission.csv": pd.DataFrame({"key": answers["key"], "fare_amount": 11.35})})
    rtf = "GCP-Coupons-Instructions.rtf"
    assert (prepared / "public" / rtf).read_bytes() == (raw / rtf).read_bytes()


def test_streamed_zip_source_as_the_facebook_script(tmp_path: Path) -> None:
    raw, prepared = _prepare("facebook-recruiting-iii-keyword-extraction", tmp_path)
    with zipfile.ZipFile(raw / "Train.zip") as archive, archive.open("Train.csv") as handle:
        table = pd.read_csv(handle, **TEXT)
    _, test_rows = train_test_split(np.arange(len(table)), test_size=0.1, random_state=0)
    test = table[np.isin(np.arange(len(table)), test_rows)]  # file order, as the streamed split writes
    answers = pd.read_csv(prepared / "private" / "test.csv", **TEXT)
    assert answers.equals(test.reset_index(drop=True))
    public_test = pd.read_csv(prepared / "public" / "test.csv", **TEXT)
    _same(prepared, {"public/sample_submission.csv": public_test.assign(Tags="javascript c# python php java")})
    assert not list(prepared.glob("**/.source-*")), "the extracted source is removed"


def test_random_sample_and_files_as_the_petfinder_script(tmp_path: Path) -> None:
    raw, prepared = _prepare("petfinder-pawpularity-score", tmp_path)
    table = pd.read_csv(raw / "train.csv", **TEXT)
    train, test = train_test_split(table, test_size=0.1, random_state=0)
    values = np.random.default_rng(0).uniform(1, 100, len(test)).round(2)
    _same(
        prepared,
        {
            "public/train.csv": train,
            "public/test.csv": test.drop(columns=["Pawpularity"]),
            "private/test.csv": test,
            "public/sample_submission.csv": pd.DataFrame({"Id": test["Id"].to_numpy(), "Pawpularity": values}),
        },
    )
    assert sorted(p.stem for p in (prepared / "public" / "test").iterdir()) == sorted(test["Id"])


def test_continued_renumbering_as_the_tabular_may_2022_script(tmp_path: Path) -> None:
    raw, prepared = _prepare("tabular-playground-series-may-2022", tmp_path)
    old = pd.read_csv(raw / "train.csv", **TEXT)
    train, test = train_test_split(old, test_size=0.1, random_state=0)  # 80 rows <= 100,000
    train = train.assign(id=np.arange(len(train)))
    test = test.assign(id=np.arange(len(train), len(train) + len(test)))
    _same(
        prepared,
        {
            "public/train.csv": train,
            "public/test.csv": test.drop(columns=["target"]),
            "private/test.csv": test,
            "public/sample_submission.csv": pd.DataFrame({"id": test["id"], "target": 0.5}),
        },
    )


def test_renamed_ids_and_their_files_as_the_plant_pathology_2020_script(tmp_path: Path) -> None:
    raw, prepared = _prepare("plant-pathology-2020-fgvc7", tmp_path)
    old = pd.read_csv(raw / "train.csv", dtype=str)
    train, answers = train_test_split(old, test_size=0.1, random_state=0)
    renamed = {old_id: f"Train_{i}" for i, old_id in enumerate(train["image_id"].unique())}
    renamed |= {old_id: f"Test_{i}" for i, old_id in enumerate(answers["image_id"].unique())}
    train = train.assign(image_id=train["image_id"].map(renamed))
    answers = answers.assign(image_id=answers["image_id"].map(renamed))
    classes = ["healthy", "multiple_diseases", "rust", "scab"]
    _same(
        prepared,
        {
            "public/train.csv": train,
            "public/test.csv": answers[["image_id"]],
            "private/test.csv": answers,
            "public/sample_submission.csv": answers[["image_id"]].assign(**dict.fromkeys(classes, 0.25)),
        },
    )
    for old_id, new_id in renamed.items():
        assert (prepared / "public" / "images" / f"{new_id}.jpg").read_bytes() == (
            raw / "images" / f"{old_id}.jpg"
        ).read_bytes()


def test_row_numbers_and_files_from_a_zip_as_the_nomad_script(tmp_path: Path) -> None:
    raw, prepared = _prepare("nomad2018-predict-transparent-conductors", tmp_path)
    with zipfile.ZipFile(raw / "train.csv.zip") as archive, archive.open("train.csv") as handle:
        old = pd.read_csv(handle)
    train, test = train_test_split(old, test_size=0.1, random_state=0)
    new_ids = {}
    for side, frame in (("test", test), ("train", train)):
        new_ids |= {int(old_id): (side, i) for i, old_id in enumerate(frame["id"], start=1)}
    train, test = train.assign(id=np.arange(1, len(train) + 1)), test.assign(id=np.arange(1, len(test) + 1))
    targets = ["formation_energy_ev_natom", "bandgap_energy_ev"]
    _same(
        prepared,
        {
            "public/train.csv": train,
            "public/test.csv": test.drop(columns=targets),
            "private/test.csv": test,
            "public/sample_submission.csv": test[["id"]].assign(
                formation_energy_ev_natom=0.1779, bandgap_energy_ev=1.8892
            ),
        },
    )
    for old_id, (side, new_id) in new_ids.items():
        expected = _member(raw / "train.zip", f"train/{old_id}/geometry.xyz")
        assert (prepared / "public" / side / str(new_id) / "geometry.xyz").read_bytes() == expected


def test_files_into_stored_zips_as_the_aerial_cactus_script(tmp_path: Path) -> None:
    raw, prepared = _prepare("aerial-cactus-identification", tmp_path)
    old = pd.read_csv(raw / "train.csv", **TEXT)
    train, test = train_test_split(old, test_size=0.19, random_state=0)
    _same(
        prepared,
        {
            "public/train.csv": train,
            "private/test.csv": test,
            "public/sample_submission.csv": test[["id"]].assign(has_cactus=0.5),
        },
    )
    assert not (prepared / "public" / "test.csv").exists()
    for side, frame in (("train", train), ("test", test)):
        with zipfile.ZipFile(prepared / "public" / f"{side}.zip") as archive:
            infos = archive.infolist()
            assert [i.filename for i in infos] == frame["id"].tolist()  # the side's order, at the archive root
            assert {(i.compress_type, i.date_time) for i in infos} == {(zipfile.ZIP_STORED, (1980, 1, 1, 0, 0, 0))}
            for info in infos:
                assert archive.read(info) == _member(raw / "train.zip", f"train/{info.filename}")


def test_group_split_zips_with_source_times_and_an_indexed_sample_as_the_iwildcam_2019_script(tmp_path: Path) -> None:
    raw, prepared = _prepare("iwildcam-2019-fgvc6", tmp_path)
    old = pd.read_csv(raw / "train.csv", **TEXT)
    locations = np.asarray(old["location"].unique(), dtype=object)
    _, test_locations = train_test_split(locations, test_size=0.1, random_state=8)
    in_test = old["location"].isin(set(test_locations))
    train, answers = old[~in_test], old[in_test]
    gold = answers[["id", "category_id"]].rename(columns={"id": "Id", "category_id": "Category"})
    _same(
        prepared,
        {
            "public/train.csv": train,
            "public/test.csv": answers.drop(columns=["category_id"]),
            "private/test.csv": answers,
            "private/answers.csv": gold,
        },
    )
    sample = (prepared / "public" / "sample_submission.csv").read_bytes()
    assert sample == gold.assign(Category=0).to_csv(index=True).encode()
    with (
        zipfile.ZipFile(raw / "train_images.zip") as source,
        zipfile.ZipFile(prepared / "public" / "test_images.zip") as out,
    ):
        assert [i.filename for i in out.infolist()] == [f"{i}.jpg" for i in answers["id"]]
        for info in out.infolist():
            raw_info = source.getinfo(info.filename)
            assert (info.compress_type, info.date_time) == (zipfile.ZIP_DEFLATED, raw_info.date_time)
            assert out.read(info) == source.read(raw_info)


def test_tables_written_into_zips_as_the_movie_review_script(tmp_path: Path) -> None:
    raw, prepared = _prepare("movie-review-sentiment-analysis-kernels-only", tmp_path)
    with zipfile.ZipFile(raw / "train.tsv.zip") as archive, archive.open("train.tsv") as handle:
        old = pd.read_csv(handle, sep="\t")
    train, answers = train_test_split(old, test_size=0.3, random_state=0)
    _same(
        prepared,
        {"private/answers.csv": answers, "public/sampleSubmission.csv": answers[["PhraseId"]].assign(Sentiment=2)},
    )
    for name, frame in (("train.tsv", train), ("test.tsv", answers.drop(columns="Sentiment"))):
        data = _only_member(prepared / "public" / f"{name}.zip", name, zipfile.ZIP_DEFLATED)
        assert data == frame.to_csv(index=False, sep="\t").encode()


def test_copies_out_of_zips_as_the_jigsaw_toxic_script(tmp_path: Path) -> None:
    raw, prepared = _prepare("jigsaw-toxic-comment-classification-challenge", tmp_path)
    for member, target in (
        ("train.csv", "public/train.csv"),
        ("test.csv", "public/test.csv"),
        ("test_labels.csv", "private/test.csv"),
    ):
        assert (prepared / target).read_bytes() == _member(raw / f"{member}.zip", member), target
    with zipfile.ZipFile(raw / "sample_submission.csv.zip") as archive, archive.open("sample_submission.csv") as handle:
        sample = pd.read_csv(handle, **TEXT)
    classes = ["toxic", "severe_toxic", "obscene", "threat", "insult", "identity_hate"]
    _same(prepared, {"public/sample_submission.csv": sample[["id"]].assign(**dict.fromkeys(classes, 0.5))})


def test_sentences_renumbered_and_ids_built_as_the_text_normalization_scripts(tmp_path: Path) -> None:
    for lang, read, quoted_private in (
        ("en", {"dtype": {"class": str, "before": str, "after": str}, "keep_default_na": False}, False),
        ("ru", {}, True),
    ):
        cid = f"text-normalization-challenge-{'english' if lang == 'en' else 'russian'}-language"
        raw, prepared = _prepare(cid, tmp_path / lang)
        with zipfile.ZipFile(raw / f"{lang}_train.csv.zip") as archive, archive.open(f"{lang}_train.csv") as handle:
            table = pd.read_csv(handle, **read)
        _, test_sentences = train_test_split(table["sentence_id"].unique(), test_size=0.1, random_state=0)
        in_test = table["sentence_id"].isin(set(test_sentences))
        train, test = (
            frame.assign(sentence_id=pd.factorize(frame["sentence_id"])[0])
            for frame in (table[~in_test], table[in_test])
        )
        ids = test["sentence_id"].astype(str) + "_" + test["token_id"].astype(str)
        answers = pd.DataFrame({"id": ids, "after": test["after"]})
        sample = pd.DataFrame({"id": ids, "after": test["before"]})
        private = {"quoting": csv.QUOTE_NONNUMERIC} if quoted_private else {}
        assert (prepared / "private" / "answers.csv").read_bytes() == answers.to_csv(index=False, **private).encode()
        assert (prepared / "private" / "sample_submission.csv").read_bytes() == sample.to_csv(
            index=False, **private
        ).encode()
        public = {
            f"{lang}_train.csv": train,
            f"{lang}_test_2.csv": test[["sentence_id", "token_id", "before"]],
            f"{lang}_sample_submission_2.csv": sample,
        }
        for name, frame in public.items():
            data = _only_member(prepared / "public" / f"{name}.zip", name, zipfile.ZIP_STORED)
            assert data == frame.to_csv(index=False, quoting=csv.QUOTE_NONNUMERIC).encode(), name


def test_padded_ids_and_case_folders_as_the_rsna_miccai_script(tmp_path: Path) -> None:
    raw, prepared = _prepare("rsna-miccai-brain-tumor-radiogenomic-classification", tmp_path)
    table = pd.read_csv(raw / "train_labels.csv", dtype={"BraTS21ID": str})
    table["BraTS21ID"] = table["BraTS21ID"].str.zfill(5)
    train, test = train_test_split(table, test_size=0.1, random_state=0)
    _same(
        prepared,
        {
            "public/train_labels.csv": train,
            "private/test.csv": test[["BraTS21ID", "MGMT_value"]],
            "public/sample_submission.csv": test[["BraTS21ID"]].assign(MGMT_value=0.5),
        },
    )
    for side, frame in (("train", train), ("test", test)):
        assert sorted(p.name for p in (prepared / "public" / side).iterdir()) == sorted(frame["BraTS21ID"])
