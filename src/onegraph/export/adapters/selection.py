"""scikit-learn's feature selectors -> graph: the selected columns, unchanged.

Every ``SelectorMixin`` (``VarianceThreshold``, ``SelectKBest``, ``SelectPercentile``, ``SelectFpr`` /
``Fdr`` / ``Fwe``, ``GenericUnivariateSelect``, ``SelectFromModel``, ``RFE``, ``RFECV``,
``SequentialFeatureSelector``) transforms by ``X[:, get_support()]`` (``sklearn.feature_selection._base``,
scikit-learn 1.9): the graph passes the selected columns through, with their kinds and names.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.feature_selection import SelectorMixin

from onegraph.emit import Col, GraphBuilder, register_emitter
from onegraph.errors import ExportError

__all__ = ["emit_selector"]


@register_emitter(SelectorMixin)
def emit_selector(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    support = np.asarray(est.get_support(), bool)
    if len(support) != len(cols):
        raise ExportError(f"{type(est).__name__} was fitted on {len(support)} columns but receives {len(cols)}")
    if not support.any():
        raise ExportError(f"{type(est).__name__} selects no column", hint="loosen its threshold")
    return [c for c, keep in zip(cols, support) if keep]
