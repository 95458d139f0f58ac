"""Multi-modal Gesture Recognition: the samples of training4.tar.gz become the test set.

Facts: the Ids of the SampleNNNN.zip files in training4.tar.gz (id = last 4 characters of the
stem) are the test set. Public: training.csv without those ids, test.csv (sorted Ids),
test.tar.gz (a byte copy of training4.tar.gz), training1-3 and validation1-3 archives,
devel01-40.7z, valid_all_files_combined.7z, sample_code_mmrgc.zip, randomPredictions.csv
(random.seed(0); per sorted id random.sample(range(1, 21), 20)); private test.csv holds the
training.csv rows (Id, Sequence) of the test ids.
Version 2 rewrites test.tar.gz without the answers: Video.Labels is removed from every sample's
*_data.mat and any *labels* member of a sample zip is dropped (upstream issue #77).
"""

from __future__ import annotations

import io
import random
import re
import shutil
import tarfile
import zipfile
from pathlib import Path

import numpy as np

SAMPLE = re.compile(r"(?:^|/)Sample(\d{4})\.zip$")
COPIED = (
    "training1.tar.gz",
    "training2.tar.gz",
    "training3.tar.gz",
    "validation1.tar.gz",
    "validation2.tar.gz",
    "validation3.tar.gz",
    "devel01-40.7z",
    "valid_all_files_combined.7z",
    "sample_code_mmrgc.zip",
)
_MAT_HEADER = b"MATLAB 5.0 MAT-file, written by podium".ljust(116, b" ")


def _test_ids(archive: Path) -> list[str]:
    with tarfile.open(archive) as tar:
        return sorted(m.group(1) for name in tar.getnames() if (m := SAMPLE.search(name)))


def _strip_mat(data: bytes) -> bytes:
    """A .mat file without any struct field named Labels (a fixed header keeps the bytes reproducible)."""
    from numpy.lib import recfunctions
    from scipy.io import loadmat, savemat

    variables = {}
    for key, value in loadmat(io.BytesIO(data)).items():
        if key.startswith("__"):
            continue
        names = value.dtype.names
        if names and "Labels" in names:
            value = recfunctions.repack_fields(value[[n for n in names if n != "Labels"]])
        variables[key] = value
    buffer = io.BytesIO()
    savemat(buffer, variables, do_compression=True)
    return _MAT_HEADER + buffer.getvalue()[116:]


def _strip_sample(data: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            lower = info.filename.lower()
            if "labels" in lower.rsplit("/", 1)[-1]:
                continue
            content = source.read(info)
            if lower.endswith(".mat"):
                content = _strip_mat(content)
            target.writestr(info, content, compress_type=info.compress_type)
    return out.getvalue()


def _write_unlabelled_tar(source: Path, target: Path) -> None:
    import gzip

    with (
        target.open("wb") as raw_out,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw_out, mtime=0) as gz,
        tarfile.open(source) as tar_in,
        tarfile.open(fileobj=gz, mode="w") as tar_out,
    ):
        for member in tar_in:
            handle = tar_in.extractfile(member) if member.isfile() else None
            if handle is None:
                tar_out.addfile(member)
                continue
            content = handle.read()
            if SAMPLE.search(member.name):
                content = _strip_sample(content)
            member.size = len(content)
            tar_out.addfile(member, io.BytesIO(content))


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    import pandas as pd

    table = pd.read_csv(raw / "training.csv", dtype=str, keep_default_na=False)
    test_ids = _test_ids(raw / "training4.tar.gz")
    in_test = table["Id"].isin(set(test_ids))
    table[~in_test].to_csv(public / "training.csv", index=False)
    answers = table[in_test][["Id", "Sequence"]]
    answers.to_csv(private / "test.csv", index=False)
    pd.DataFrame({"Id": test_ids}).to_csv(public / "test.csv", index=False)
    random.seed(0)
    guesses = [" ".join(map(str, random.sample(range(1, 21), 20))) for _ in test_ids]
    pd.DataFrame({"Id": test_ids, "Sequence": guesses}).to_csv(public / "randomPredictions.csv", index=False)
    if version >= 2:
        _write_unlabelled_tar(raw / "training4.tar.gz", public / "test.tar.gz")
    else:
        shutil.copyfile(raw / "training4.tar.gz", public / "test.tar.gz")
    for name in COPIED:
        shutil.copyfile(raw / name, public / name)

    assert sorted(answers["Id"]) == test_ids, "a training4 sample has no row in training.csv"
    assert not set(table[~in_test]["Id"]) & set(test_ids)
    assert int(in_test.sum()) + int((~in_test).sum()) == len(table)


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """training.csv (40 ids), four training tars of SampleNNNN.zip (with a labelled _data.mat), stubs."""
    import pandas as pd
    from scipy.io import savemat

    gestures = ["vattene", "vieniqui", "perfetto", "furbo", "cheduepalle", "chevuoi", "daccordo", "seipazzo"]
    rows = []
    for part in range(4):
        tar_buffer = io.BytesIO()
        with tarfile.open(fileobj=tar_buffer, mode="w:gz") as tar:
            for k in range(10):
                sample_id = f"{part * 10 + k + 1:04d}"
                sequence = [int(g) for g in rng.integers(1, 21, int(rng.integers(2, 6)))]
                rows.append((sample_id, " ".join(map(str, sequence))))
                labels = np.zeros((1, len(sequence)), dtype=[("Name", "O"), ("Begin", "O"), ("End", "O")])
                for j, g in enumerate(sequence):
                    labels[0, j] = (gestures[g % len(gestures)], 10 * j + 1, 10 * j + 8)
                video = np.zeros((1, 1), dtype=[("NumFrames", "O"), ("FrameRate", "O"), ("Labels", "O")])
                video[0, 0] = (10 * len(sequence), 20, labels)
                mat = io.BytesIO()
                savemat(mat, {"Video": video})
                sample = io.BytesIO()
                with zipfile.ZipFile(sample, "w") as archive:
                    archive.writestr(f"Sample{sample_id}_data.mat", mat.getvalue())
                    archive.writestr(f"Sample{sample_id}_audio.wav", b"RIFF\x00\x00\x00\x00WAVE")
                info = tarfile.TarInfo(f"Sample{sample_id}.zip")
                info.size = len(sample.getvalue())
                tar.addfile(info, io.BytesIO(sample.getvalue()))
        (raw / f"training{part + 1}.tar.gz").write_bytes(tar_buffer.getvalue())
    pd.DataFrame(rows, columns=["Id", "Sequence"]).to_csv(raw / "training.csv", index=False)
    for name in COPIED[3:]:
        (raw / name).write_bytes(b"stub " + name.encode())
