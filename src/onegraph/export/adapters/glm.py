"""scikit-learn's generalized linear models -> graph: the linear predictor through the model's inverse link.

``PoissonRegressor``, ``GammaRegressor``, ``TweedieRegressor`` (scikit-learn 1.9,
``_GeneralizedLinearRegressor.predict``): ``link.inverse(X @ coef_ + intercept_)``, the link of the
fitted loss (``_base_loss.link``: ``exp`` for Poisson, Gamma and Tweedie with ``power > 0`` or
``link="log"``, the identity for ``power=0``).
"""

from __future__ import annotations

from typing import Any

import onnx_ir as ir
import sklearn.linear_model as lm

from onegraph.emit import GraphBuilder
from onegraph.export.adapters.linear import decision_function
from onegraph.export.adapters.models import ModelOutputs, register_model
from onegraph.export.adapters.ops import flat, inverse_link

__all__ = ["emit_glm"]


@register_model(lm.PoissonRegressor, lm.GammaRegressor, lm.TweedieRegressor)
def emit_glm(model: Any, g: GraphBuilder, x: ir.Value) -> ModelOutputs:
    raw = decision_function(g, model, x)
    return ModelOutputs.regressor(flat(g, inverse_link(g, model._base_loss.link, raw, type(model).__name__)))
