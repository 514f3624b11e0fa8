"""The house's arrows point down: each package imports only from the packages below it, so a
change low in the house never has to look up, and the model never sees Hydra."""

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# each package, and what it may import; model and data stand side by side and know nothing of each other
BELOW = {
    "utils": set(),
    "model": {"utils"},
    "data": {"utils"},
    "inference": {"utils", "model", "data"},
    "viz": {"utils", "model", "data", "inference"},
    "analysis": {"utils", "model", "data", "inference", "viz"},
    "training": {"utils", "model", "data", "inference", "viz", "analysis"},
}
CONFIG_LIBRARIES = {"hydra", "omegaconf"}  # configuration belongs to the entry points and training


def imported(path: Path) -> set[str]:
    """The top-level names of every module `path` imports, at any depth (a deferred import counts)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("package", sorted(BELOW))
def test_a_package_imports_only_from_below(package):
    assert modules(package), f"{package}/ has no modules: BELOW is out of date"
    upward = {
        f"{path.relative_to(ROOT)} imports {name}"
        for path in modules(package)
        for name in imported(path) & (set(BELOW) - BELOW[package] - {package})
    }
    assert not upward


def test_the_model_never_imports_the_configuration_library():
    assert not {
        f"{path.relative_to(ROOT)} imports {name}"
        for path in modules("model")
        for name in imported(path) & CONFIG_LIBRARIES
    }


def test_every_package_of_the_house_has_its_place():
    """A new package must be given a layer here, or the check above would not see it."""
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")} - {"tests", "bench"}
    assert packages == set(BELOW)


@pytest.mark.parametrize("package", ["data", "model"])
def test_a_packages_names_are_its_modules_and_the_type_checkers(package):
    """data/ and model/__init__.py import their names when first used: each one named there
    resolves to its module's, and the eager imports type checkers read name the same ones."""
    imported = importlib.import_module(package)
    for name, module in imported._EXPORTS.items():
        assert getattr(imported, name) is getattr(importlib.import_module(module), name)
    tree = ast.parse((ROOT / package / "__init__.py").read_text(encoding="utf-8"))
    checked = {
        alias.name: node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(f"{package}.")
        for alias in node.names
    }
    assert checked == imported._EXPORTS
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        imported.Nothing  # noqa: B018


def loaded_by(module: str, libraries: set[str]) -> list[str]:
    """Which of `libraries` importing `module` (one of the commands) loads, in a fresh process."""
    script = f"import json, sys, {module}; print(json.dumps(sorted({libraries!r} & set(sys.modules))))"
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def test_train_py_checks_its_settings_before_loading_the_engine():
    """train.py composes and checks the config with Hydra and the dataclasses alone: a misspelled
    or refused setting is said before torch, the corpus libraries and TensorBoard load (~2 s)."""
    assert loaded_by("train", {"torch", "datasets", "pandas", "pyarrow", "matplotlib", "tensorboard"}) == []


def test_translating_starts_without_the_corpus_libraries():
    """translate.py's imports leave out `datasets`, pandas and Arrow (seconds at every start)."""
    assert loaded_by("translate", {"datasets", "pandas", "pyarrow"}) == []
