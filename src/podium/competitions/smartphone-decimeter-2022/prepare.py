"""Prepare smartphone-decimeter-2022 (facts: split, public, private, known_issues).

Group split by calendar date: the drive folders' dates (first three "-" parts, zero-padded) are
sorted, deduplicated and split with ``train_test_split(dates, test_size=0.1, random_state=0)``.
Train drives are copied whole; test drives without ground_truth.csv, whose rows (concatenated in
sorted path order, tripId = "{drive}-{phone}") form private/test.csv. metadata/ is copied. Version
1 keeps the test supplemental/span_log.nmea files, which hold the high-precision track (upstream
issue #93); version 2 leaves them out.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

TEST_SIZE = 0.1
LAT, LON = 37.904611315634504, -86.48107806249548
COLUMNS = ["tripId", "UnixTimeMillis", "LatitudeDegrees", "LongitudeDegrees"]


def _date(drive: str) -> str:
    year, month, day = drive.split("-")[:3]
    assert year.isdigit() and month.isdigit() and day.isdigit(), drive
    return f"{year}-{month.zfill(2)}-{day.zfill(2)}"


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Split the drives by date; version >= 2 drops the test span_log.nmea files."""
    import pandas as pd
    from sklearn.model_selection import train_test_split

    drives = sorted(p.name for p in (raw / "train").iterdir() if p.is_dir())
    train_dates, test_dates = train_test_split(sorted({_date(d) for d in drives}), test_size=TEST_SIZE, random_state=0)
    train = [d for d in drives if _date(d) in train_dates]
    test = [d for d in drives if _date(d) in test_dates]
    ignore = shutil.ignore_patterns("ground_truth.csv", *(["span_log.nmea"] if version >= 2 else []))
    for drive in train:
        shutil.copytree(raw / "train" / drive, public / "train" / drive)
    for drive in test:
        shutil.copytree(raw / "train" / drive, public / "test" / drive, ignore=ignore)
    frames = []
    for path in sorted((raw / "train").glob("*/*/ground_truth.csv")):
        drive, phone = path.parent.parent.name, path.parent.name
        if drive in test:
            frame = pd.read_csv(path, dtype=str, keep_default_na=False)
            frames.append(frame.assign(tripId=f"{drive}-{phone}")[COLUMNS])
    answers = pd.concat(frames, ignore_index=True)
    answers.to_csv(private / "test.csv", index=False)
    sample = answers.assign(LatitudeDegrees=LAT, LongitudeDegrees=LON)
    sample.to_csv(public / "sample_submission.csv", index=False)
    shutil.copytree(raw / "metadata", public / "metadata")

    assert train and test and set(train).isdisjoint(test) and len(train) + len(test) == len(drives)
    assert not list((public / "test").rglob("ground_truth.csv"))
    assert version < 2 or not list((public / "test").rglob("span_log.nmea"))
    assert {t.rsplit("-", 1)[0] for t in answers["tripId"]} == set(test)
    assert sample[COLUMNS[:2]].equals(answers[COLUMNS[:2]])


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """20 dates (one with two drives), 1-2 phones per drive, each with a short track and its logs."""
    import pandas as pd

    (raw / "metadata").mkdir(parents=True)
    (raw / "metadata" / "raw_state_bit_map.json").write_text('{"0": "CODE_LOCK"}\n')
    (raw / "test").mkdir()
    routes = ["US-MTV-1", "US-SJC-2", "US-LAX-3"]
    drives = [f"2021-{1 + i // 5}-{10 + i}-{routes[i % 3]}" for i in range(20)] + ["2021-1-10-US-SFO-1"]
    for d, drive in enumerate(drives):
        for phone in ["GooglePixel4", "SamsungGalaxyS20Ultra"][: 1 + d % 2]:
            folder = raw / "train" / drive / phone
            (folder / "supplemental").mkdir(parents=True)
            n = int(rng.integers(3, 7))
            times = 1610000000000 + 10**8 * d + 1000 * np.arange(n)
            lat = 37.4 + np.cumsum(rng.normal(0, 1e-4, n))
            lon = -122.1 + np.cumsum(rng.normal(0, 1e-4, n))
            truth = pd.DataFrame(
                {
                    "MessageType": "Fix",
                    "Provider": "GT",
                    "LatitudeDegrees": lat,
                    "LongitudeDegrees": lon,
                    "AltitudeMeters": 10.0,
                    "SpeedMps": 1.5,
                    "AccuracyMeters": 0.1,
                    "BearingDegrees": 90.0,
                    "UnixTimeMillis": times,
                }
            )
            truth.to_csv(folder / "ground_truth.csv", index=False)
            pd.DataFrame({"MessageType": "Raw", "utcTimeMillis": times, "Svid": 5, "Cn0DbHz": 30.5}).to_csv(
                folder / "device_gnss.csv", index=False
            )
            pd.DataFrame({"MessageType": "UncalAccel", "utcTimeMillis": times, "MeasurementX": 0.1}).to_csv(
                folder / "device_imu.csv", index=False
            )
            nmea = "".join(
                f"$GPGGA,{t % 86400000},{la:.8f},N,{-lo:.8f},W,4,12,0.8,10.0,M,,M,,*5B\n"
                for t, la, lo in zip(times, lat, lon, strict=True)
            )
            (folder / "supplemental" / "span_log.nmea").write_text(nmea)
            (folder / "supplemental" / "gnss_log.txt").write_text("# Version: v3.0.0.1\n")
    (raw / "sample_submission.csv").write_text(",".join(COLUMNS) + "\n")
