"""``podium bundle verify`` against forged bundles: each forgery edits members, recomputes their sha256 and size in
``manifest.json`` (so the hashes alone hold) and repacks, as anyone holding the bundle could. And hostile
bundles: a huge or deep manifest, too many files, a cut archive; and ``bundle create`` while a run lands."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from test_publish import bundle, groups, hostile, kind, podium, practice, read_bundle  # noqa: F401  (fixtures)

BASE = "podium-bundle/"
RUN = "runs/pg-baseline/practice-wine/0"


def forge(
    source: Path,
    target: Path,
    edit: Callable[[str, bytes], bytes | None] = lambda name, data: data,
    manifest_edit: Callable[[dict[str, Any]], None] = lambda manifest: None,
) -> Path:
    """``source`` with ``edit(name, data)`` applied to each member (None leaves it out), the manifest's hashes
    recomputed for every member written, then ``manifest_edit`` applied to the manifest."""
    files = read_bundle(source)
    manifest = json.loads(files.pop(BASE + "manifest.json"))
    out: dict[str, bytes] = {}
    for name, data in files.items():
        changed = edit(name.removeprefix(BASE), data)
        if changed is not None:
            out[name] = changed
    manifest["files"] = {
        name.removeprefix(BASE): {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
        for name, data in out.items()
    }
    manifest_edit(manifest)
    out[BASE + "manifest.json"] = json.dumps(manifest).encode()
    with tarfile.open(target, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for name, data in out.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return target


def edit_json(path: str, change: Callable[[dict[str, Any]], None]) -> Callable[[str, bytes], bytes | None]:
    def edit(name: str, data: bytes) -> bytes | None:
        if name != path:
            return data
        value = json.loads(data)
        change(value)
        return json.dumps(value).encode()

    return edit


def verify(path: Path, data: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return podium("bundle", "verify", str(path), "--data-dir", str(data), *extra)


def gold(record: dict[str, Any]) -> None:
    record["grade"].update(gold_medal=True, any_medal=True, above_median=True)


def test_a_run_left_out_of_the_manifest_is_still_found_and_regraded(
    practice: dict[str, Path],  # noqa: F811
    bundle: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    def drop_run(manifest: dict[str, Any]) -> None:
        manifest["runs"] = [r for r in manifest["runs"] if r["path"] != RUN]

    forged = forge(bundle, tmp_path / "f.tar.gz", edit_json(f"{RUN}/record.json", gold), drop_run)
    result = verify(forged, practice["data2"])
    assert result.returncode == 1, result.stdout
    assert "run pg-baseline/practice-wine/0: in the bundle, not in the manifest's runs" in result.stdout
    assert "pg-baseline/practice-wine/0: grade gold_medal true in the record, false graded again" in result.stdout


def test_a_competition_that_cannot_be_regraded_is_a_difference(
    practice: dict[str, Path],  # noqa: F811
    bundle: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    def drop_data(manifest: dict[str, Any]) -> None:
        del manifest["data"]["practice-wine"]

    forged = forge(bundle, tmp_path / "f.tar.gz", edit_json(f"{RUN}/record.json", gold), drop_data)
    result = verify(forged, practice["data2"])
    assert result.returncode == 1
    assert "not verified: cannot re-grade practice-wine: the manifest names no prepared data for it" in result.stdout
    empty = tmp_path / "empty-data"
    empty.mkdir()
    result = verify(bundle, empty)  # an honest bundle, but nothing prepared here: not verified
    assert result.returncode == 1
    assert f"not verified: cannot re-grade practice-breast-cancer: it is not prepared in {empty}" in result.stdout
    assert not result.stdout.startswith("verified:") and "\nverified:" not in result.stdout


def test_every_field_of_the_grade_is_compared(practice: dict[str, Path], bundle: Path, tmp_path: Path) -> None:  # noqa: F811
    def rank(record: dict[str, Any]) -> None:
        record["grade"].update(percentile=0.99, rank=1, gold_threshold=-1e9)

    forged = forge(bundle, tmp_path / "f.tar.gz", edit_json(f"{RUN}/record.json", rank))
    result = verify(forged, practice["data2"])
    assert result.returncode == 1
    lines = [line for line in result.stdout.splitlines() if line.startswith("pg-baseline/practice-wine/0: grade ")]
    assert [line.split()[2] for line in lines] == ["gold_threshold", "percentile", "rank"], result.stdout


def test_an_audit_rewritten_clean_is_caught_and_the_judge_is_carried(
    practice: dict[str, Path],  # noqa: F811
    bundle: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    def clean(audit: dict[str, Any]) -> None:
        audit["results"] = [{"check": "judge", "verdict": "clean", "flags": [], "inputs": {}}]
        audit["verdict"] = "clean"
        audit["skipped"], audit["incomplete"] = {}, []

    forged = forge(bundle, tmp_path / "f.tar.gz", edit_json(f"{RUN}/audit.json", clean))
    result = verify(forged, practice["data2"])
    assert result.returncode == 1
    for check in ("submission", "answers", "oracle", "integrity"):
        assert f"pg-baseline/practice-wine/0: audit {check} missing from audit.json, clean run again" in result.stdout
    assert "carried from the bundle, not verified: the verdicts of judge on 1 run(s)" in result.stderr

    def flip(audit: dict[str, Any]) -> None:
        (entry,) = [r for r in audit["results"] if r["check"] == "answers"]
        entry["verdict"] = "flagged"

    flipped = forge(bundle, tmp_path / "g.tar.gz", edit_json(f"{RUN}/audit.json", flip))
    result = verify(flipped, practice["data2"])
    assert "pg-baseline/practice-wine/0: audit answers flagged in audit.json, clean run again" in result.stdout

    def verdict(audit: dict[str, Any]) -> None:
        audit["verdict"] = "clean"  # the judge never ran: the results make it incomplete

    rewritten = forge(bundle, tmp_path / "h.tar.gz", edit_json(f"{RUN}/audit.json", verdict))
    result = verify(rewritten, practice["data2"])
    assert result.returncode == 1
    assert (
        "pg-baseline/practice-wine/0: audit verdict clean in audit.json, its checks' results make it incomplete"
        in result.stdout
    )


@pytest.fixture(scope="module")
def baseline_bundle(practice: dict[str, Path]) -> Path:  # noqa: F811
    """The baseline's group alone: a bundle with nothing to differ (the dummy's seeds are alike, a difference)."""
    path = practice["root"] / "baseline.tar.gz"
    made = podium("bundle", "create", str(practice["runs"] / "pg-baseline"), "-o", str(path), "--data-dir",
                  str(practice["data"]))  # fmt: skip
    assert made.returncode == 0, made.stderr[-3000:]
    return path


def test_the_pages_are_not_verified_and_extract_writes_only_the_verified_tree(
    practice: dict[str, Path],  # noqa: F811
    baseline_bundle: Path,
    tmp_path: Path,
) -> None:
    def pages(name: str, data: bytes) -> bytes:
        return data.replace(b"</body>", b"<p>gold medal</p></body>") if name.endswith(".html") else data

    forged = forge(baseline_bundle, tmp_path / "f.tar.gz", pages)
    out = tmp_path / "out"
    result = verify(forged, practice["data2"], "--extract", str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "note: not verified: index.html, pages/, README.md" in result.stderr
    written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    manifest = json.loads((out / "manifest.json").read_bytes())
    verified = sorted(n for n in manifest["files"] if n.startswith(("runs/", "agents/", "environments/")))
    assert written == sorted([*verified, "manifest.json"])
    for name in verified:
        assert (out / name).read_bytes() == read_bundle(forged)[BASE + name]

    again = verify(baseline_bundle, practice["data2"], "--extract", str(out))  # not empty: refused up front
    assert again.returncode == 2 and "--extract" in again.stderr and len(again.stderr.strip().splitlines()) == 1
    forged = forge(baseline_bundle, tmp_path / "g.tar.gz", edit_json(f"{RUN}/record.json", gold))
    fresh = tmp_path / "fresh"
    result = verify(forged, practice["data2"], "--extract", str(fresh))
    assert result.returncode == 1 and not fresh.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # nothing half-written

    wrong = "0" * 64
    result = verify(baseline_bundle, practice["data2"], "--expect-sha256", wrong)
    assert result.returncode == 1
    actual = hashlib.sha256(baseline_bundle.read_bytes()).hexdigest()
    assert (
        result.stderr.strip()
        == f"podium: bundle {baseline_bundle} not verified: its sha256 is {actual}, not the {wrong} expected"
    )
    assert verify(baseline_bundle, practice["data2"], "--expect-sha256", actual).returncode == 0


_MEASURE = """import resource, runpy, sys
sys.argv = ["podium", *sys.argv[1:]]
try:
    runpy.run_module("podium", run_name="__main__")
    code = 0
except SystemExit as stop:
    code = stop.code
print(f"maxrss {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}", file=sys.stderr)
sys.exit(code)
"""


def measured(path: Path, *extra: str) -> tuple[int, int, str]:
    """(exit status, the verify process's peak resident memory in MiB, its output)."""
    result = subprocess.run(
        [sys.executable, "-c", _MEASURE, "bundle", "verify", str(path), "--data-dir", str(path.parent), *extra],
        capture_output=True,
        text=True,
        timeout=600,
    )
    *rest, last = result.stderr.strip().splitlines()
    assert last.startswith("maxrss "), result.stderr
    return result.returncode, int(last.split()[1]) // 1024, result.stdout + "\n".join(rest)


def test_a_hostile_manifest_costs_little_and_ends_in_one_line(tmp_path: Path) -> None:
    huge = b"[" + b"{}," * (16 << 20) + b"{}]"  # 48 MiB of {}
    deep = b"[" * 200_000 + b"]" * 200_000
    tiny = hostile(tmp_path / "tiny.tar.gz", [(kind(BASE + "manifest.json", tarfile.REGTYPE), b"[{}]")])
    _, baseline, _ = measured(tiny)  # what verify itself costs here (its imports), refusing a manifest of 4 bytes
    for name, manifest in (("huge", huge), ("deep", deep)):
        path = hostile(tmp_path / f"{name}.tar.gz", [(kind(BASE + "manifest.json", tarfile.REGTYPE), manifest)])
        code, peak, output = measured(path)
        assert code == 1, output
        assert "Traceback" not in output and "internal error" not in output
        assert peak < baseline + 64, (name, peak, baseline)  # before: 1,332 MiB for the huge one
    many = [(kind(f"{BASE}f/{n}", tarfile.REGTYPE), b"") for n in range(60)]
    path = hostile(tmp_path / "many.tar.gz", many)
    code, _, output = measured(path, "--max-files", "50")
    assert code == 1 and "more than 50 files and folders" in output
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(path.read_bytes()[:-40])
    code, _, output = measured(cut)
    assert code == 1 and output.strip().endswith("not verified: the archive ends early"), output


def test_bundle_create_builds_the_pages_from_the_rows_it_bundles(
    practice: dict[str, Path],  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import podium.report
    from podium.publish.bundle import create_bundle

    group = tmp_path / "runs" / "pg-baseline"
    shutil.copytree(practice["runs"] / "pg-baseline", group)
    real = podium.report.load_inputs
    calls = []

    def landing(*args: Any, **kwargs: Any) -> Any:
        inputs = real(*args, **kwargs)
        if not calls:  # a run lands just after the runs were read
            landed = group / "practice-wine" / "7"
            shutil.copytree(group / "practice-wine" / "1", landed)
            record = json.loads((landed / "record.json").read_text())
            record["seed"] = 7
            (landed / "record.json").write_text(json.dumps(record))
        calls.append(1)
        return inputs

    monkeypatch.setattr(podium.report, "load_inputs", landing)
    out = tmp_path / "b.tar.gz"
    create_bundle([str(group)], out, data_dir=practice["data"], say=lambda line: None)
    files = read_bundle(out)
    manifest = json.loads(files[BASE + "manifest.json"])
    assert sorted(r["seed"] for r in manifest["runs"]) == [0, 0, 1, 1]
    index = files[BASE + "index.html"].decode()
    with_landed = tmp_path / "with.tar.gz"
    monkeypatch.setattr(podium.report, "load_inputs", real)
    create_bundle([str(group)], with_landed, data_dir=practice["data"], say=lambda line: None)
    assert index != read_bundle(with_landed)[BASE + "index.html"].decode()  # the landed run would change it
    shutil.rmtree(group / "practice-wine" / "7")
    create_bundle([str(group)], tmp_path / "without.tar.gz", data_dir=practice["data"], say=lambda line: None)
    assert index == read_bundle(tmp_path / "without.tar.gz")[BASE + "index.html"].decode()
