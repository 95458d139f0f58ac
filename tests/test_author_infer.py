"""What ``podium new`` infers from raw files, case by case: the test size from Kaggle's test set (rows, or files
beside the train files), a group or a time column from the evidence of Kaggle's own split, files that follow
their rows, the metric from Kaggle's names; and the declaration's schema, shared by its reader and its writer."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
import yaml

from podium import registry, schema
from podium.author import NewRequest, new_competition
from podium.author.metric_names import find_in_text, resolve, unknown_message
from podium.author.write import Commented, render
from podium.errors import RegistryError
from podium.metrics import METRICS


def _table(path: Path, header: str, rows: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")


def _new(tmp_path: Path, raw: Path, **flags: object) -> dict[str, object]:
    written = new_competition(NewRequest("case", tmp_path / "mine", source=raw, **flags))  # type: ignore[arg-type]
    return yaml.safe_load((written.folder / "competition.yaml").read_text(encoding="utf-8"))


def _split(declared: dict[str, object]) -> dict[str, object]:
    return declared["prepare"]["split"]  # type: ignore[index,return-value]


@pytest.mark.parametrize(("train", "test", "size"), [(300, 100, 0.25), (100, 400, 0.5), (10_000, 30, 30)])
def test_the_test_size_is_the_original_ratio_capped_or_a_row_count_when_tiny(
    tmp_path: Path, train: int, test: int, size: float
) -> None:
    raw = tmp_path / "raw"
    _table(raw / "train.csv", "id,x,y", [f"{i},{i % 7},{i % 2}" for i in range(train)])
    _table(raw / "test.csv", "id,x", [f"{i},{i % 7}" for i in range(train, train + test)])
    _table(raw / "sample_submission.csv", "id,y", [f"{i},0" for i in range(train, train + test)])
    assert _split(_new(tmp_path, raw, metric="accuracy"))["test_size"] == size


def test_the_test_files_beside_the_train_files_give_the_ratio(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    _table(raw / "train.csv", "image,label", [f"im{i},{i % 2}" for i in range(40)])
    with zipfile.ZipFile(raw / "train.zip", "w") as archive:
        for i in range(40):
            archive.writestr(f"train/im{i}.png", b"png")
    with zipfile.ZipFile(raw / "test.zip", "w") as archive:
        for i in range(10):
            archive.writestr(f"test/t{i}.png", b"png")
    declared = _new(tmp_path, raw, targets=("label",), metric="roc_auc")
    split = _split(declared)
    assert split["files"] == [
        {
            "from": "train.zip:train/{image}.png",
            "train": "public/train.zip:train/{image}.png",
            "test": "public/test.zip:test/{image}.png",
        }
    ]
    assert split["test_size"] == 0.2 and declared["data_kind"] == "image (binary classification)"


def test_a_column_kaggle_never_shares_between_its_train_and_test_is_a_group(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    _table(raw / "train.csv", "id,site,x,y", [f"{i},s{i % 12},{i * 0.37},{i % 3}" for i in range(240)])
    _table(raw / "test.csv", "id,site,x", [f"{i},s{12 + i % 4},{i * 0.37}" for i in range(240, 320)])
    _table(raw / "sample_submission.csv", "id,y", [f"{i},0" for i in range(240, 320)])
    split = _split(_new(tmp_path, raw, metric="accuracy"))
    assert split["group"] == "site" and split["engine"] == "pandas" and "time" not in split


def test_a_date_at_or_after_the_train_tables_last_in_kaggles_test_is_a_time_split(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    _table(raw / "train.csv", "id,day,x,y", [f"{i},2021-01-{1 + i % 20:02d},{i % 5},{i % 2}" for i in range(200)])
    _table(raw / "test.csv", "id,day,x", [f"{i},2021-01-{20 + i % 8:02d},{i % 5}" for i in range(200, 260)])
    _table(raw / "sample_submission.csv", "id,y", [f"{i},0" for i in range(200, 260)])
    declared = _new(tmp_path, raw, metric="accuracy")
    split = _split(declared)
    assert split["time"] == "day" and "group" not in split
    text = (tmp_path / "mine" / "case" / "competition.yaml").read_text()
    assert "# a time split: every day of Kaggle's test table is at or after the train table's last" in text


def test_without_evidence_the_split_is_random_and_says_why(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    _table(raw / "train.csv", "id,day,x,y", [f"{i},2021-01-{1 + i % 20:02d},{i % 5},{i % 2}" for i in range(200)])
    declared = _new(tmp_path, raw, targets=("y",), metric="accuracy")
    split = _split(declared)
    assert split["test_size"] == 0.1 and "group" not in split and "time" not in split
    assert "the raw files hold no test set to measure" in (tmp_path / "mine" / "case" / "competition.yaml").read_text()


def test_kaggles_metric_names_map_to_podiums() -> None:
    cases = {
        "Area Under Receiver Operating Characteristic Curve": "roc_auc", "Categorization Accuracy": "accuracy",
        "Multi Class Log Loss": "log_loss", "Root Mean Squared Error": "rmse", "quadratic-weighted-kappa": "quadratic_weighted_kappa",
        "Mean Absolute Error": "mae", "MCRMSE": "mcrmse", "Pearson Correlation Coefficient": "pearson",
        "mean_columnwise_rmsle": "mean_columnwise_rmsle",
    }  # fmt: skip
    for given, name in cases.items():
        resolved = resolve(given)
        assert resolved is not None and resolved.name == name, given
    assert resolve("AUC", n_targets=3).name == "mean_columnwise_roc_auc"  # type: ignore[union-attr]
    at12 = resolve("MAP@12")
    assert at12 is not None and (at12.name, at12.options) == ("map_at_k", {"k": 12})
    assert all(resolve(name).name == name for name in METRICS)  # type: ignore[union-attr]
    assert resolve("Weighted Banana Score") is None
    assert "nearest: accuracy" in unknown_message("acuracy") and "\n" not in unknown_message("acuracy")
    assert find_in_text("## Evaluation\nSubmissions are evaluated on the Root Mean Squared Error.\n")[1].name == "rmse"  # type: ignore[index]


def test_an_unknown_field_is_refused_with_the_nearest_and_the_writer_uses_the_readers_order(tmp_path: Path) -> None:
    declared = registry._read_declaration("spaceship-titanic")
    with pytest.raises(
        RegistryError, match=r"'metrics' is not a field of a declaration\. Fix: did you mean 'metric'\?"
    ):
        schema.check_fields({**declared, "metrics": {}}, "x")
    with pytest.raises(RegistryError, match=r"version 2: 'same_date'.*did you mean 'same_data'"):
        schema.check_fields({**declared, "versions": {2: {"same_date": True}}}, "x")
    with pytest.raises(RegistryError, match="answers missing"):
        schema.check_fields({k: v for k, v in declared.items() if k != "answers"}, "x")
    shuffled = dict(reversed(list(declared.items())))
    text = render({**shuffled, "complexity": Commented("dev", "why")}, {}, [])
    keys = [line.split(":")[0] for line in text.splitlines() if line and line[0].isalpha()]
    assert keys == [f.key for f in schema.FIELDS if f.key in declared]
    assert f"id: spaceship-titanic  # {schema.field('id').comment}" in text and yaml.safe_load(text) == declared
