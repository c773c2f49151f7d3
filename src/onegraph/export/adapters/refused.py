"""scikit-learn transformers onegraph refuses, each with the one-line reason (instead of skl2onnx's error).

* ``TSNE``: has no ``transform`` (it embeds its training rows only);
* ``FeatureHasher``: takes dicts or strings per row, not a table of numbers or text columns;
* ``PatchExtractor``: takes images, not a table;
* ``NMF`` / ``MiniBatchNMF``: ``transform`` runs coordinate descent / multiplicative updates until a stopping
  test on the whole batch (``_fit_coordinate_descent``, ``_solve_W``), so a row's answer depends on the
  other rows scored with it;
* ``LatentDirichletAllocation``: ``transform`` iterates variational updates through ``exp(digamma)``, which
  has no ONNX operator;
* ``LocallyLinearEmbedding``: ``transform`` solves a regularized linear system per row (``barycenter_weights``),
  which has no ONNX operator;
* ``Isomap``: ``transform`` takes shortest paths through the training graph and a kernel PCA on them — not
  written yet.
"""

from __future__ import annotations

from typing import Any

import sklearn.decomposition as skd
import sklearn.feature_extraction as skf
import sklearn.feature_extraction.image as skfi
import sklearn.manifold as skm

from onegraph.emit import Col, GraphBuilder, register_emitter
from onegraph.errors import ExportError

__all__ = ["REASONS", "refuse"]

#: class -> (why, what to do instead)
REASONS = {
    skm.TSNE: ("it has no transform: it embeds its training rows only", "use PCA or KernelPCA for new rows"),
    skf.FeatureHasher: ("it takes dicts or strings per row, not table columns",
                        "use onegraph.frame.HashEncoder or OneHotEncoder on text columns"),
    skfi.PatchExtractor: ("it takes images, not a table", "use onegraph.media for images"),
    skd.NMF: ("its transform iterates coordinate descent until a stopping test over the whole batch, so a row's "
              "answer depends on the rows scored with it", "use PCA / TruncatedSVD, or export NMF's components"),
    skd.MiniBatchNMF: ("its transform iterates multiplicative updates until a stopping test over the whole batch, so "
                       "a row's answer depends on the rows scored with it", "use PCA / TruncatedSVD"),
    skd.LatentDirichletAllocation: ("its transform iterates variational updates through exp(digamma), which has no "
                                    "ONNX operator", "use TruncatedSVD on the counts"),
    skm.LocallyLinearEmbedding: ("its transform solves a regularized linear system per row, which has no ONNX "
                                 "operator", "use KernelPCA or PCA"),
    skm.Isomap: ("its transform (shortest paths through the training graph, then kernel PCA) is not written yet",
                 "use KernelPCA or PCA"),
}


@register_emitter(*REASONS)
def refuse(est: Any, g: GraphBuilder, cols: list[Col]) -> list[Col]:
    why, hint = REASONS[type(est)]
    raise ExportError(f"{type(est).__name__} cannot be exported: {why}", hint=hint)
