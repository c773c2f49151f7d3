"""scikit-learn's clusterers as transformers -> graph in double precision.

Follows scikit-learn 1.9: ``KMeans`` / ``MiniBatchKMeans`` / ``BisectingKMeans.transform`` and
``Birch.transform`` are ``euclidean_distances(X, centers)`` (``cluster_centers_``, ``subcluster_centers_``:
``sqrt(max(-2 X @ C.T + |x|^2 + |c|^2, 0))``); ``FeatureAgglomeration.transform`` (``pooling_func=np.mean``)
is ``np.bincount(labels_, x) / size`` per row: the mean of each cluster's features.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import sklearn.cluster as skc

from onegraph.emit import DOUBLE, Col, GraphBuilder, register_emitter
from onegraph.errors import ExportError
from onegraph.export.adapters.discriminant import feature_block
from onegraph.export.adapters.ops import euclidean

__all__ = ["emit_center_distances", "emit_feature_agglomeration"]


@register_emitter(skc.KMeans, skc.MiniBatchKMeans, skc.BisectingKMeans, skc.Birch)
def emit_center_distances(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    centers = est.subcluster_centers_ if isinstance(est, skc.Birch) else est.cluster_centers_
    return feature_block(g, est, euclidean(g, g.matrix(cols, DOUBLE), centers), cols)


@register_emitter(skc.FeatureAgglomeration)
def emit_feature_agglomeration(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    if est.pooling_func is not np.mean:
        raise ExportError("FeatureAgglomeration with a pooling_func other than np.mean cannot be exported")
    labels = np.asarray(est.labels_)
    size = np.bincount(labels)
    onehot = (labels[:, None] == np.arange(len(size))[None, :]).astype(np.float64)
    y = g.op("MatMul", g.matrix(cols, DOUBLE), g.const(onehot, "clusters"), dtype=DOUBLE)
    y = g.op("Div", y, g.const(size.astype(np.float64), "size"), dtype=DOUBLE)
    return feature_block(g, est, y, cols)
