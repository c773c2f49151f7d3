"""DataFrame preprocessing that fits in Python and exports to standard ONNX / ONNX-ML operators.

The column <-> graph-input contract is in :mod:`onegraph.contract.columns`.
"""

from onegraph.contract.columns import MISSING_STRING, NA_INT64, ColumnSpec
from onegraph.frame.transformers import *  # noqa: F401,F403
from onegraph.frame.transformers import __all__ as _transformers

__all__ = ["ColumnSpec", "MISSING_STRING", "NA_INT64", *_transformers]
