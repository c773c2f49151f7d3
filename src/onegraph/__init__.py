"""onegraph: a whole DataFrame pipeline - preprocessing, trained models, post-processing - as one
portable, self-describing, verified ONNX graph.

Main entry points::

    import onegraph
    model = onegraph.build(preprocessing, classifier, sample=train_df, path="model.onnx")
    onegraph.score("model.onnx", new_rows)          # -> DataFrame of label / probabilities
    onegraph.parity(preprocessing, classifier, test_df)

Attributes are imported on first use, so ``import onegraph`` (and the command line's start) stays fast.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "build": "onegraph.export",
    "score": "onegraph.runtime",
    "Session": "onegraph.runtime",
    "parity": "onegraph.verify",
    "load_model": "onegraph.io",
    "save_model": "onegraph.io",
    "errors": "onegraph.errors",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'onegraph' has no attribute {name!r}")
    value = importlib.import_module(module)
    if name != "errors":
        value = getattr(value, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
