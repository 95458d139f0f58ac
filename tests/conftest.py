import json
import os
import signal

os.environ.setdefault("OMP_NUM_THREADS", "1")

# A shell without job control starts a background command (`pytest ... &`, `nohup .ci/run &`) with SIGINT
# ignored, and every process started from it inherits that: the podium processes the Ctrl-C tests interrupt
# would then never see their SIGINT. An ignored SIGINT is not inherited past exec once it has a handler, so
# the suite's own process takes Python's usual one back.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

import shutil
from pathlib import Path

import pytest

from podium.errors import PodiumError
from xdist_groups import pytest_xdist_node_collection_finished  # noqa: F401  (a hook: stops a run whose groups came apart)

# CI sets PODIUM_REQUIRE_DOCKER=1 after starting its own engine: there a missing engine is a failure,
# not a skip, so the Docker sandbox's tests cannot silently stop running.
REQUIRE_DOCKER = os.environ.get("PODIUM_REQUIRE_DOCKER") == "1"
BUSYBOX_IMAGE = "podium-test-busybox:1"


@pytest.fixture(scope="session")
def docker_sandbox():
    """The Docker sandbox with the host image, or a skip (a failure under PODIUM_REQUIRE_DOCKER=1)."""
    from podium.sandbox import get_sandbox

    try:
        return get_sandbox("docker")
    except PodiumError as error:
        if REQUIRE_DOCKER:
            pytest.fail(f"PODIUM_REQUIRE_DOCKER=1 but the docker sandbox is unavailable: {error}")
        pytest.skip(f"docker sandbox unavailable: {error}")


@pytest.fixture(scope="session")
def busybox_image(docker_sandbox, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A self-contained agent image built here FROM scratch out of Debian's static busybox (no pull)."""
    from podium.sandbox._docker import build_agent_image

    busybox = shutil.which("busybox")
    if busybox is None or "statically linked" not in _describe(busybox):
        if REQUIRE_DOCKER:
            pytest.fail("PODIUM_REQUIRE_DOCKER=1 but no static busybox: apt-get install busybox-static")
        pytest.skip("needs Debian's busybox-static to build a self-contained test image")
    folder = tmp_path_factory.mktemp("busybox-image")
    shutil.copy(busybox, folder / "busybox")
    (folder / "Dockerfile").write_text(
        'FROM scratch\nCOPY busybox /bin/busybox\nRUN ["/bin/busybox", "--install", "-s", "/bin"]\n'
        'RUN ["/bin/busybox", "mkdir", "-p", "/tmp", "/home", "/etc"]\n'
        'RUN ["/bin/busybox", "sh", "-c", "chmod 1777 /tmp && echo agent:x:1000:1000::/home:/bin/sh > /etc/passwd"]\n'
    )
    return build_agent_image(docker_sandbox.client, folder, BUSYBOX_IMAGE)


def _describe(path: str) -> str:
    head = Path(path).read_bytes()[:4096]
    # a static ELF has no PT_INTERP, so no dynamic loader path in its first page
    return "dynamically linked" if b"ld-linux" in head else "statically linked"


@pytest.fixture(scope="session")
def minimal_env_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The `minimal` agent environment, built once for the session's LLM-agent runs."""
    from podium.environments import build, load_profile

    root = _shared(tmp_path_factory, "envs")
    build(load_profile("minimal"), root)
    return root


@pytest.fixture(scope="session")
def aide_env_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where AIDE's environment is built once (by the first run that needs it) for the session's AIDE runs."""
    return _shared(tmp_path_factory, "aide-envs")


def _shared(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """A folder of the session's, the same for every xdist worker (the parent of the workers' own): an environment
    is built there once, by the first worker to need it, while the others wait on its build lock
    (podium.environments.build); without workers, a folder of this process's."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        return tmp_path_factory.mktemp(name)
    root = tmp_path_factory.getbasetemp().parent / name
    root.mkdir(exist_ok=True)
    return root


@pytest.fixture(scope="session")
def practice_data() -> Path:
    """practice-titanic and practice-wine prepared in the data dir podium uses by default (``$PODIUM_DATA_DIR``, else
    the user's cache), as `podium run` would prepare them there; data already prepared is kept. The gym's tests play
    them from there, on a fresh machine too (they were skipped when nothing had prepared them yet)."""
    from podium import registry
    from podium.data.prepare import prepare_competition
    from podium.paths import default_data_dir

    root = default_data_dir()
    for competition in ("practice-titanic", "practice-wine"):
        prepare_competition(registry.get(competition), root)
    return root


@pytest.fixture(scope="session")
def spaceship_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """spaceship-titanic prepared from its generated raw folder (the runs' tests share it)."""
    from podium import registry
    from podium.data.prepare import prepare_competition
    from podium.fixtures import make_raw

    root = tmp_path_factory.mktemp("spaceship")
    comp = registry.get("spaceship-titanic")
    prepare_competition(comp, root / "data", source=make_raw(comp, root / "raw"))
    return root / "data"


# Browser tests drive the system's chromium through Playwright. CI installs both and sets
# PODIUM_REQUIRE_BROWSER=1: there a missing browser fails the tests instead of skipping them.
REQUIRE_BROWSER = os.environ.get("PODIUM_REQUIRE_BROWSER") == "1"
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")


def _chromium() -> str | None:
    named = os.environ.get("PODIUM_CHROMIUM")
    if named:
        return named
    return next((found for name in CHROMIUM_NAMES if (found := shutil.which(name))), None)


def _browser_unavailable(reason: str) -> None:
    if REQUIRE_BROWSER:
        pytest.fail(f"PODIUM_REQUIRE_BROWSER=1 but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def browser():
    """Headless chromium from the system, driven by Playwright (one per test session)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _browser_unavailable("playwright is not installed (pip install -e '.[dev]')")
    executable = _chromium()
    if executable is None:
        _browser_unavailable("no chromium on PATH (apt-get install chromium, or set PODIUM_CHROMIUM)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser, request: pytest.FixtureRequest, tmp_path: Path):
    """A fresh page; its screenshot goes to PODIUM_TEST_ARTEFACTS (or the test's tmp_path) at the end, and for a test
    marked ``docs_screenshot(NAME)`` also to PODIUM_DOCS_SCREENSHOTS/NAME when that is set (the README's pictures)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    try:
        yield opened
    finally:
        artefacts = Path(os.environ.get("PODIUM_TEST_ARTEFACTS", tmp_path))
        artefacts.mkdir(parents=True, exist_ok=True)
        docs = os.environ.get("PODIUM_DOCS_SCREENSHOTS")  # scripts/screenshots.sh: the README's pictures
        marker = request.node.get_closest_marker("docs_screenshot")
        try:
            if docs and marker is not None:
                opened.screenshot(path=str(Path(docs) / marker.args[0]))
            opened.screenshot(path=str(artefacts / f"{request.node.name}.png"), full_page=True)
        finally:
            context.close()


TIMINGS = Path(__file__).with_name("timings.json")  # seconds per file under the workers: scripts/test_timings.py


def _group(item: pytest.Item) -> str:
    marker = item.get_closest_marker("xdist_group")
    if marker is not None:
        return str(marker.args[0] if marker.args else marker.kwargs.get("name", "default"))
    return item.path.name


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Slow stacks run last, in this order: the Ray cluster's tests (a few minutes of their own, with Ray's
    processes beside the suite's), then the Dolos tests (in CI Dolos is still installing, npm ci, in the
    background), then the root-filesystem and local-model tests (the openhands environment and the model
    server still building in the background: scripts/openhands_env.sh, scripts/local_model.sh; the training
    stack: scripts/train_env.sh).

    Under pytest-xdist (``-n``, ``--dist loadgroup --no-loadscope-reorder``: the suite's default, pyproject.toml)
    each test file runs whole in one worker, in its order, its module fixtures set up once (the two Ray files each
    start a cluster of their own, with their own ports and folders, and may run side by side). The workers take the
    groups longest first (``tests/timings.json``; a group it does not name goes after those it does), so that no
    long file starts late and runs alone at the end; the stacks' tests still come last."""
    parallel = os.environ.get("PYTEST_XDIST_WORKER") is not None
    timings = json.loads(TIMINGS.read_text(encoding="utf-8")) if parallel and TIMINGS.is_file() else {}
    groups = {item.nodeid: _group(item) for item in items}
    items.sort(
        key=lambda item: (
            any(item.get_closest_marker(m) is not None for m in ("rootfs", "local_model", "train")),
            item.get_closest_marker("dolos") is not None,
            # one after the other, the cluster's tests go late; beside the rest (xdist), longest group first
            (item.get_closest_marker("cluster") is not None) if not parallel else -timings.get(groups[item.nodeid], 0),
        )
    )
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(groups[item.nodeid]))
