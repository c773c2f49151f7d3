"""Lazy package attributes (PEP 562): a package names what it exports without importing it up front.

``import onegraph`` used to import scikit-learn, skl2onnx and pandas (several seconds); commands and the
model-checking process that need none of them now start in the time onnx and onnxruntime take.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any


class _Package(types.ModuleType):
    """A package whose exports may share a name with one of its submodules (``runtime.score``).

    Importing the submodule binds its name on the package; the export keeps that name, as it did when the
    package imported it eagerly (``from .score import score`` rebinds the name to the function). Only
    ``__setattr__`` is overridden: a ``__getattr__`` method on the class would route every attribute read
    (``onegraph.score`` in a scoring loop: 0.18 us instead of 0.02 us) through Python; the module-level
    ``__getattr__`` of PEP 562, which :func:`exports` installs, runs only for a name not yet bound.
    """

    _exports: dict[str, str]

    def __setattr__(self, name: str, value: Any) -> None:
        exports = self.__dict__.get("_exports", {})
        if name in exports and isinstance(value, types.ModuleType) and value.__name__ == exports[name]:
            value = getattr(value, name)
        super().__setattr__(name, value)


def _load(module: types.ModuleType, name: str) -> Any:
    """The export or submodule ``name`` of ``module``, imported and bound on first access."""
    exports = module.__dict__.get("_exports", {})
    if name in exports:
        value = getattr(importlib.import_module(exports[name]), name)
    else:
        try:
            value = importlib.import_module(f"{module.__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{module.__name__}.{name}":
                raise
            raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}") from None
        value = module.__dict__.get(name, value)
    types.ModuleType.__setattr__(module, name, value)
    return value


def exports(package: str, names: dict[str, str]) -> None:
    """Make ``package`` export ``names`` (attribute -> the module that defines it) on first access.

    Submodules of ``package`` (``onegraph.runtime``) are imported on first access too.
    """
    module = sys.modules[package]
    module.__class__ = _Package
    module.__dict__["_exports"] = dict(names)
    module.__dict__["__getattr__"] = lambda name: _load(module, name)
    module.__dict__["__dir__"] = lambda: sorted(set(module.__dict__) | set(module.__dict__.get("_exports", {})))
