"""Prepare tensorflow-speech-recognition-challenge (facts: split, test_renaming, public, private).

Every wav under train/audio/ (label = folder name: 30 words and _background_noise_), sorted by
"{label}_{filename}", is split with ``train_test_split(files, test_size=0.1, random_state=0)``.
Train clips keep their path; test clips become test/audio/clip_{idx:08d}.wav (split order).
Answers: test.csv (fname, label = original folder name); sample label = "silence". raw/train.7z
is extracted first (with py7zr, through a temporary folder) when raw/train/audio/ is absent.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np

TEST_SIZE = 0.1


def _extract(archive: Path, raw: Path) -> None:
    """raw/train/ from raw/train.7z, moved into place only once complete."""
    import py7zr

    staging = raw / f".train.7z.tmp-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    with py7zr.SevenZipFile(archive) as handle:
        handle.extractall(staging)
    shutil.rmtree(raw / "train", ignore_errors=True)
    os.replace(staging / "train", raw / "train")
    shutil.rmtree(staging)


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Split the clips 90/10 at file level and rename the test clips."""
    import pandas as pd
    from sklearn.model_selection import train_test_split

    audio = raw / "train" / "audio"
    if not audio.is_dir():
        _extract(raw / "train.7z", raw)
    files = sorted(((p.parent.name, p) for p in audio.rglob("*.wav")), key=lambda f: f"{f[0]}_{f[1].name}")
    train, test = train_test_split(files, test_size=TEST_SIZE, random_state=0)
    for label, path in train:
        (public / "train" / "audio" / label).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, public / "train" / "audio" / label / path.name)
    (public / "test" / "audio").mkdir(parents=True)
    records = []
    for idx, (label, path) in enumerate(test):
        name = f"clip_{idx:08d}.wav"
        shutil.copyfile(path, public / "test" / "audio" / name)
        records.append((name, label))
    answers = pd.DataFrame(records, columns=["fname", "label"])
    answers.to_csv(private / "test.csv", index=False)
    sample = answers.assign(label="silence")
    sample.to_csv(public / "sample_submission.csv", index=False)

    assert len(train) + len(test) == len(files) and not {p for _, p in train} & {p for _, p in test}
    assert len(list((public / "test" / "audio").glob("*.wav"))) == len(sample) == len(answers)


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """The Kaggle top level: train.7z (train/audio/{label}/*.wav for 4 labels x 8 tiny clips, names
    repeating across labels, plus train/testing_list.txt and train/validation_list.txt), test.7z
    (test/audio/clip_*.wav) and sample_submission.7z (sample_submission.csv)."""
    import io
    import wave

    import py7zr

    def clip() -> io.BytesIO:
        buffer = io.BytesIO()
        with wave.open(buffer, "wb") as handle:
            handle.setnchannels(1)
            handle.setsampwidth(2)
            handle.setframerate(16000)
            handle.writeframes(rng.integers(-300, 300, 160, dtype=np.int16).tobytes())
        buffer.seek(0)
        return buffer

    speakers = [f"{rng.bytes(4).hex()}_nohash_{k}" for k in range(8)]
    with py7zr.SevenZipFile(raw / "train.7z", "w") as archive:
        for label in ["bed", "yes", "no", "_background_noise_"]:
            for speaker in speakers:
                archive.writef(clip(), f"train/audio/{label}/{speaker}.wav")
        archive.writestr(f"yes/{speakers[0]}.wav\n", "train/testing_list.txt")
        archive.writestr(f"no/{speakers[1]}.wav\n", "train/validation_list.txt")
    names = [f"clip_{rng.bytes(5).hex()[:9]}.wav" for _ in range(3)]
    with py7zr.SevenZipFile(raw / "test.7z", "w") as archive:
        for name in names:
            archive.writef(clip(), f"test/audio/{name}")
    with py7zr.SevenZipFile(raw / "sample_submission.7z", "w") as archive:
        archive.writestr("fname,label\n" + "".join(f"{n},silence\n" for n in names), "sample_submission.csv")
