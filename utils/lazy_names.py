"""A package's names imported when first used (PEP 562): its __init__.py lists which module
defines each name, and importing the package loads none of them. data/ and model/ use it, so
that a command needing only their configuration starts without torch or the corpus libraries."""

from collections.abc import Callable
from importlib import import_module


def lazy_getattr(package: str, exports: dict[str, str]) -> Callable[[str], object]:
    """The package's module-level __getattr__: `exports` maps each name to its module."""

    def __getattr__(name: str) -> object:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(import_module(exports[name]), name)

    return __getattr__
