"""ICML 2013 right whale redux: a temporal split of train2.zip by recording day (facts: split, public).

Facts implemented: the clips in raw train2.zip (train2/YYYYMMDD_HHMMSS_<sec>s_TRAIN<idx>_<label>.aif)
are grouped by date (exactly 4 dates asserted); the 2 earliest dates are the new train, the 2
latest the new test. Each list is sorted by file name (time order); train clips are renamed
TRAIN<new idx> (label suffix kept), test clips become <date>_<time>_<sec>s_Test<idx>.aif. Public
train2.zip / test2.zip hold folders train2/ and test2/; private test.csv is (clip, probability=0/1
label); the sample submission sampleSubmission.csv gives probability 0.
"""

from __future__ import annotations

import re
import struct
import zipfile
from pathlib import Path

import numpy as np


def _write_zip(source: zipfile.ZipFile, renames: list[tuple[str, str]], target: Path, folder: str) -> None:
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
        out.writestr(zipfile.ZipInfo(f"{folder}/", date_time=(2013, 1, 1, 0, 0, 0)), b"")
        for old, new in renames:
            info = source.getinfo(old)
            member = zipfile.ZipInfo(f"{folder}/{new}", date_time=info.date_time)
            member.compress_type = zipfile.ZIP_DEFLATED
            out.writestr(member, source.read(info))


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    import pandas as pd

    with zipfile.ZipFile(raw / "train2.zip") as archive:
        members = [n for n in archive.namelist() if n.startswith("train2/") and n.endswith(".aif")]
        names = {n.rsplit("/", 1)[1]: n for n in members}
        dates = sorted({name.split("_")[0] for name in names})
        assert len(dates) == 4, f"expected 4 recording days in train2, found {dates}"
        train = sorted(n for n in names if n.split("_")[0] in dates[:2])
        test = sorted(n for n in names if n.split("_")[0] in dates[2:])
        train_renames = [(names[n], re.sub(r"TRAIN\d+", f"TRAIN{i}", n)) for i, n in enumerate(train)]
        test_renames = [(names[n], n.split("TRAIN")[0] + f"Test{i}.aif") for i, n in enumerate(test)]
        _write_zip(archive, train_renames, public / "train2.zip", "train2")
        _write_zip(archive, test_renames, public / "test2.zip", "test2")

    answers = pd.DataFrame(
        {
            "clip": [new for _, new in test_renames],
            "probability": [1 if Path(old).stem.endswith("_1") else 0 for old, _ in test_renames],
        }
    )
    answers.to_csv(private / "test.csv", index=False)
    answers.assign(probability=0).to_csv(public / "sampleSubmission.csv", index=False)

    assert len(train) + len(test) == len(names)
    assert not {n for _, n in train_renames} & set(answers["clip"])
    assert answers["clip"].is_unique and not answers["clip"].str.contains("TRAIN").any()


def _aiff(samples: np.ndarray, rate: int = 2000) -> bytes:
    """A minimal mono 16-bit AIFF file."""
    exponent = rate.bit_length() - 1
    extended = struct.pack(">HQ", 16383 + exponent, rate << (63 - exponent))
    comm = struct.pack(">hLh", 1, len(samples), 16) + extended
    data = samples.astype(">i2").tobytes()
    ssnd = struct.pack(">LL", 0, 0) + data
    body = b"AIFF" + b"COMM" + struct.pack(">L", len(comm)) + comm + b"SSND" + struct.pack(">L", len(ssnd)) + ssnd
    return b"FORM" + struct.pack(">L", len(body)) + body


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """train2.zip: 48 tiny labelled clips over 4 recording days, train2/<date>_<time>_<sec>s_TRAIN<i>_<label>.aif."""
    with zipfile.ZipFile(raw / "train2.zip", "w") as archive:
        archive.writestr(zipfile.ZipInfo("train2/", date_time=(2013, 1, 1, 0, 0, 0)), b"")
        for i in range(48):
            day, hour = 28 + i // 12, i % 12
            label = int(rng.integers(0, 2)) if i % 12 > 1 else i % 2
            name = f"train2/200903{day}_{hour:02d}{int(rng.integers(0, 60)):02d}00_{int(rng.integers(0, 900)):03d}s_TRAIN{i}_{label}.aif"
            clip = _aiff(rng.integers(-2000, 2000, 64))
            archive.writestr(zipfile.ZipInfo(name, date_time=(2013, 1, 1, 0, 0, 0)), clip)
