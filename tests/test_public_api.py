"""Every module of podium names its public API in ``__all__``, and every name there imports.

The packages re-export what the stages offer (``podium.grading``, ``podium.run``, ...), so code
outside a package reaches it through those names rather than through private modules.
"""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import podium

MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(podium.__path__, prefix="podium.")
    if ".competitions" not in info.name and ".agents.builtin" not in info.name and info.name != "podium.__main__"
)
PUBLIC = [name for name in MODULES if not any(part.startswith("_") for part in name.split("."))]


def test_the_stages_are_packages() -> None:
    for stage in ("grading", "data", "sandbox", "services", "agents", "run", "report", "metrics", "cli"):
        assert f"podium.{stage}" in MODULES and hasattr(importlib.import_module(f"podium.{stage}"), "__path__")


@pytest.mark.parametrize("module_name", PUBLIC)
def test_every_public_module_lists_its_names_and_each_imports(module_name: str) -> None:
    module = importlib.import_module(module_name)
    names = getattr(module, "__all__", None)
    assert isinstance(names, list) and names, f"{module_name} has no __all__"
    assert len(names) == len(set(names)), f"{module_name}.__all__ repeats a name"
    for name in names:
        assert hasattr(module, name), f"{module_name}.__all__ names {name!r}, which it does not define"


@pytest.mark.parametrize("package", [m for m in PUBLIC if hasattr(importlib.import_module(m), "__path__")])
def test_a_package_exports_only_public_names(package: str) -> None:
    for name in importlib.import_module(package).__all__:
        assert not name.startswith("_") or name == "__version__", f"{package}.__all__ exports the private {name!r}"


def test_the_top_level_api() -> None:
    comp = podium.get_competition("spaceship-titanic")
    assert isinstance(comp, podium.Competition) and comp.version == 1
    assert podium.get_metric(comp.metric.name) is comp.metric.metric
    with pytest.raises(podium.UnknownMetricError, match="known metrics"):
        podium.get_metric("accuracyy")
    with pytest.raises(podium.UsageError):
        podium.split_ids("lowe")
