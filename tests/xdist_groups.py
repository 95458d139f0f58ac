"""The guard that keeps the suite's layout honest under pytest-xdist (issue 41): every test carries an
``xdist_group`` (tests/conftest.py), and ``--dist loadgroup`` schedules by the ``@group`` suffix xdist writes into
each node id. A pytest that no longer lets xdist write it (pytest 9.2 derives a node id from a structure of its own,
and xdist 3.8 still assigns the old attribute) spreads every file over all the workers, with its module fixtures
set up in each at once: the suite took 30 minutes instead of 8, without a word. tests/conftest.py imports this hook,
so such a run stops at once and says why; tests/test_suite_layout.py holds both to a toy suite."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.hookimpl(optionalhook=True)  # an xdist hook, run on the controller with each worker's collection
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    if node.config.getvalue("dist") == "loadgroup" and ids and not all("@" in nodeid for nodeid in ids):
        pytest.exit(
            f"pytest {pytest.__version__} with this pytest-xdist does not keep a test file in one worker (its node ids "
            "carry no @group): install the versions pyproject.toml pins (pip install -e '.[dev]'), or run with -n 0",
            returncode=4,
        )
