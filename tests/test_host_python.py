"""What an isolating sandbox shows of the host's Python: its installation and the folders on its path (the user
site, ``.pth`` folders), read-only, and never the current folder, the data dir, the runs folder or a home."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

from podium.errors import PodiumError
from podium.sandbox import Sandbox, get_sandbox
from podium.sandbox._python import host_python, python_prefixes
from venvs import venv_under

REPO = Path(__file__).resolve().parents[1]


def _folders(root: Path, *names: str) -> list[Path]:
    made = [root / name for name in names]
    for folder in made:
        folder.mkdir(parents=True)
    return made


def test_path_folders_are_shown_and_nothing_near_a_hidden_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user_site, pth, project, data, runs, cwd = _folders(
        tmp_path, "user/site-packages", "pth", "project", "project/data", "runs", "cwd"
    )
    (inside_runs,) = _folders(runs, "group/comp/0/code")
    (tmp_path / "to-data").symlink_to(data)
    monkeypatch.chdir(cwd)
    path = ["", "relative", str(cwd), str(user_site), str(pth), str(project), str(inside_runs), str(tmp_path / "to-data"),
            str(tmp_path / "missing"), "/opt", "/", "/proc/self", "/usr/lib", os.path.expanduser("~"), str(tmp_path / "x.zip")]  # fmt: skip
    view = host_python(hidden=[data, runs], path=path)
    assert view.folders == sorted([*python_prefixes(), str(pth), str(user_site)]), view.folders
    refused = "\n".join(view.warnings)
    for folder in (project, inside_runs, tmp_path / "to-data", "/opt", "/proc/self", os.path.expanduser("~")):
        assert f"the folder {folder} on the harness's Python path is not shown" in refused
    assert str(cwd) not in refused and str(user_site) not in refused and len(view.warnings) == 7


def test_an_installation_that_holds_a_hidden_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(PodiumError, match=f"The Python installation {sys.prefix} holds {sys.prefix}/podium-data"):
        host_python(hidden=[Path(sys.prefix) / "podium-data"], path=[])


@pytest.fixture(params=["bwrap", "docker"])
def isolated(request: pytest.FixtureRequest) -> Sandbox:
    if request.param == "docker":
        docker: Sandbox = request.getfixturevalue("docker_sandbox")
        return docker
    try:
        return get_sandbox("bwrap")
    except PodiumError as error:
        pytest.skip(f"bubblewrap sandbox unavailable: {error}")


PROBE = """
import json, os, sys
seen = {"imported": []}
for name in ("podium_probe_pth", "podium_probe_user"):
    try:
        __import__(name)
        seen["imported"].append(name)
    except ImportError as error:
        seen[name] = str(error)
seen["visible"] = [p for p in sys.argv[1:] if os.path.lexists(p)]
try:
    open(os.path.join(sys.argv[1], "planted.py"), "w").close()
    seen["wrote"] = True
except OSError as error:
    seen["wrote"] = error.strerror
print(json.dumps(seen))
"""


def test_the_agent_imports_from_path_folders_and_sees_no_secret_near_them(isolated: Sandbox, tmp_path: Path) -> None:
    """A `.pth` folder and the user site (as `pip install --user` leaves them) reach the agent's Python, read-only;
    a `.pth` folder holding the data dir, and the folder `python -m` puts first (the current one), do not."""
    with venv_under("/tmp") as venv:
        root = venv.parent
        config = venv / "pyvenv.cfg"  # a venv has no user site unless it reaches the system's site-packages
        config.write_text(
            config.read_text().replace("include-system-site-packages = false", "include-system-site-packages = true")
        )
        pth, project, cwd = _folders(root, "pth", "project", "cwd")
        user_site = root / "userbase" / sysconfig.get_path("purelib", "posix_user", {"userbase": ""}).lstrip("/")
        user_site.mkdir(parents=True)
        (pth / "podium_probe_pth.py").write_text("")
        (user_site / "podium_probe_user.py").write_text("")
        answers = project / "data" / "practice" / "prepared" / "private" / "answers.csv"
        answers.parent.mkdir(parents=True)
        answers.write_text("id,y\n1,0\n")
        site = sysconfig.get_path("purelib", scheme="venv", vars={"base": str(venv), "platbase": str(venv)})
        (Path(site) / "podium-test-probe.pth").write_text(f"{pth}\n{project}\n")
        (cwd / "secret.txt").write_text("the user's own file\n")
        (cwd / "harness.py").write_text(textwrap.dedent(f"""
            import json
            from pathlib import Path
            from podium.sandbox import Limits, get_sandbox
            result = get_sandbox({isolated.name!r}).run(
                ["python3", "-c", {PROBE!r}, {str(pth)!r}, {str(project)!r}, {str(answers)!r}, {str(cwd)!r}],
                mounts=[], env={{}}, limits=Limits(wall_seconds=60), workdir="/tmp",
                stdout=Path({str(tmp_path / "out.txt")!r}), stderr=Path({str(tmp_path / "err.txt")!r}),
                hidden=[Path({str(project / "data")!r})],
            )
            print(json.dumps({{"exit": result.exit_code, "warnings": result.warnings}}))
        """))  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "PYTHONUSERBASE": str(root / "userbase")}
        done = subprocess.run(
            [str(venv / "bin" / "python"), "-m", "harness"],
            capture_output=True,
            text=True,
            env=env,
            cwd=cwd,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    harness = json.loads(done.stdout.splitlines()[-1])
    assert harness["exit"] == 0, (tmp_path / "err.txt").read_text()
    seen = json.loads((tmp_path / "out.txt").read_text())
    assert seen["imported"] == ["podium_probe_pth", "podium_probe_user"], seen
    assert seen["visible"] == [str(pth)] and seen["wrote"] == "Read-only file system", seen
    assert any(f"the folder {project} on the harness's Python path is not shown" in w for w in harness["warnings"])
