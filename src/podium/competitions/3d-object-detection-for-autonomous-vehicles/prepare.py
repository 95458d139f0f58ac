"""Lyft 3D Object Detection: split the logs of train_data/log.json 80/20; everything follows its log.

Facts: train_test_split(log tokens in log.json order, test_size=0.2, random_state=0); samples
follow by scene_token (equal to the log token here), then train.csv rows, sample_data,
calibrated_sensor (first use, deduplicated), ego_pose (one per sample_data), scene,
sample_annotation and instance. attribute/category/sensor/visibility.json are copied to both
sides; map.json gets its log_tokens replaced. test_data/ has no sample_annotation.json or
instance.json. Images and lidar files are copied by their sample_data filename's basename; the
palo alto map raster goes to train_maps/ and test_maps/. Private test.csv prefixes every
8-token object with confidence "1.0"; the sample submission has empty PredictionStrings.
The published code edits one shared map record for both sides (a shallow list copy), so both
map.json files list the TEST log tokens; this is reproduced.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np

COPIED = ("attribute.json", "category.json", "sensor.json", "visibility.json")
MAP = "map_raster_palo_alto.png"


def _load(raw: Path, name: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads((raw / "train_data" / name).read_text(encoding="utf-8"))
    return items


def _add_confidence(objects: str) -> str:
    tokens = objects.split(" ")
    assert len(tokens) % 8 == 0, f"expected 8 tokens per object, got {len(tokens)}"
    return " ".join(" ".join(["1.0", *tokens[i : i + 8]]) for i in range(0, len(tokens), 8))


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    import pandas as pd
    from sklearn.model_selection import train_test_split

    sides = {"train": public / "train_data", "test": public / "test_data"}
    for folder in sides.values():
        folder.mkdir()

    def dump(side: str, name: str, items: object) -> None:
        (sides[side] / name).write_text(json.dumps(items), encoding="utf-8")

    logs = _load(raw, "log.json")
    log_ids = [log["token"] for log in logs]
    train_logs, test_logs = train_test_split(log_ids, test_size=0.2, random_state=0)
    side_of_log = {**{t: "train" for t in train_logs}, **{t: "test" for t in test_logs}}
    for side in sides:
        dump(side, "log.json", [log for log in logs if side_of_log[log["token"]] == side])
    samples = _load(raw, "sample.json")
    side_of_sample = {s["token"]: side_of_log[s["scene_token"]] for s in samples}
    for side in sides:
        dump(side, "sample.json", [s for s in samples if side_of_sample[s["token"]] == side])

    table = pd.read_csv(raw / "train.csv", dtype=str, keep_default_na=False)
    in_test = table["Id"].map(side_of_sample).eq("test")
    train, test = table[~in_test], table[in_test]
    train.to_csv(public / "train.csv", index=False)
    test.assign(PredictionString=test["PredictionString"].map(_add_confidence)).to_csv(
        private / "test.csv", index=False
    )
    test[["Id"]].assign(PredictionString="").to_csv(public / "sample_submission.csv", index=False)

    sample_data = _load(raw, "sample_data.json")
    data_by_side = {side: [d for d in sample_data if side_of_sample[d["sample_token"]] == side] for side in sides}
    calibrations = {c["token"]: c for c in _load(raw, "calibrated_sensor.json")}
    poses = {p["token"]: p for p in _load(raw, "ego_pose.json")}
    for side, data in data_by_side.items():
        dump(side, "sample_data.json", data)
        used = dict.fromkeys(d["calibrated_sensor_token"] for d in data)
        dump(side, "calibrated_sensor.json", [calibrations[t] for t in used])
        dump(side, "ego_pose.json", [poses[d["ego_pose_token"]] for d in data])
        dump(side, "scene.json", [s for s in _load(raw, "scene.json") if side_of_log[s["log_token"]] == side])
        for name in COPIED:
            shutil.copyfile(raw / "train_data" / name, sides[side] / name)
    maps = _load(raw, "map.json")
    assert len(maps) == 1, "expected a single map record"
    maps[0]["log_tokens"] = list(test_logs)
    for side in sides:
        dump(side, "map.json", maps)
    annotations = [a for a in _load(raw, "sample_annotation.json") if side_of_sample[a["sample_token"]] == "train"]
    dump("train", "sample_annotation.json", annotations)
    train_instances = {a["instance_token"] for a in annotations}
    dump("train", "instance.json", [i for i in _load(raw, "instance.json") if i["token"] in train_instances])

    for side in sides:
        for kind in ("images", "lidar", "maps"):
            (public / f"{side}_{kind}").mkdir()
        shutil.copyfile(raw / "train_maps" / MAP, public / f"{side}_maps" / MAP)
        for datum in data_by_side[side]:
            name = Path(datum["filename"]).name
            kind = {"jpeg": "images", "bin": "lidar"}[datum["fileformat"]]
            shutil.copyfile(raw / f"train_{kind}" / name, public / f"{side}_{kind}" / name)

    assert not set(train_logs) & set(test_logs)
    assert len(train) + len(test) == len(table) == len(samples)
    assert set(test["Id"]) == {s for s, side in side_of_sample.items() if side == "test"}
    assert not (sides["test"] / "sample_annotation.json").exists()


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """10 logs (= scenes) of 2 samples, each with one camera .jpeg and one lidar .bin, annotations, train.csv."""
    import pandas as pd
    from PIL import Image

    def token() -> str:
        return f"{int(rng.integers(2**62)):016x}{int(rng.integers(2**62)):016x}"[:64]

    tables: dict[str, list[dict[str, Any]]] = {
        n: []
        for n in (
            "log",
            "sample",
            "sample_data",
            "scene",
            "calibrated_sensor",
            "ego_pose",
            "sample_annotation",
            "instance",
        )
    }
    categories = ["car", "pedestrian", "truck"]
    rows = []
    for folder in ("train_data", "train_images", "train_lidar", "train_maps", "test_data"):
        (raw / folder).mkdir()
    for _ in range(10):
        log = token()
        tables["log"].append({"token": log, "vehicle": "a101", "logfile": "", "map_token": "m0"})
        tables["scene"].append({"token": log, "log_token": log, "nbr_samples": 2, "name": "scene"})
        sensors = {kind: token() for kind in ("jpeg", "bin")}
        tables["calibrated_sensor"] += [{"token": t, "sensor_token": k} for k, t in sensors.items()]
        instance = token()
        tables["instance"].append({"token": instance, "category_token": "c0", "nbr_annotations": 2})
        for _ in range(2):
            sample = token()
            tables["sample"].append({"token": sample, "scene_token": log, "timestamp": 1.5e15})
            objects = []
            for k in range(int(rng.integers(1, 3))):
                box = [
                    *rng.uniform(-50, 50, 3).round(2),
                    *rng.uniform(1, 5, 3).round(2),
                    round(float(rng.uniform(-3, 3)), 3),
                ]
                objects.append(" ".join(map(str, [*box, categories[k % 3]])))
                tables["sample_annotation"].append(
                    {"token": token(), "sample_token": sample, "instance_token": instance}
                )
            rows.append((sample, " ".join(objects)))
            for fmt, sensor in sensors.items():
                pose, name = token(), f"host-a101_{fmt}_{token()[:12]}.{fmt}"
                tables["ego_pose"].append({"token": pose, "translation": [0, 0, 0], "rotation": [1, 0, 0, 0]})
                tables["sample_data"].append(
                    {
                        "token": token(),
                        "sample_token": sample,
                        "filename": f"x/{name}",
                        "fileformat": fmt,
                        "calibrated_sensor_token": sensor,
                        "ego_pose_token": pose,
                    }
                )
                if fmt == "jpeg":
                    Image.fromarray(rng.integers(0, 255, (4, 4, 3), dtype=np.uint8)).save(raw / "train_images" / name)
                else:
                    (raw / "train_lidar" / name).write_bytes(rng.random(20).astype(np.float32).tobytes())
    tables["map"] = [{"token": "m0", "log_tokens": [log["token"] for log in tables["log"]], "filename": f"maps/{MAP}"}]
    for name, items in tables.items():
        (raw / "train_data" / f"{name}.json").write_text(json.dumps(items), encoding="utf-8")
    for name in COPIED:
        (raw / "train_data" / name).write_text(json.dumps([{"token": "c0", "name": name}]), encoding="utf-8")
    Image.fromarray(np.zeros((4, 4), dtype=np.uint8)).save(raw / "train_maps" / MAP)
    pd.DataFrame(rows, columns=["Id", "PredictionString"]).to_csv(raw / "train.csv", index=False)
