"""Frame transformers whose statistics scikit-learn computes.

Where scikit-learn already has the estimator (scalers, imputers, encoders), onegraph does not re-derive
its statistics: the DataFrame-native class converts the columns (any pandas / Arrow dtype, missing values
included) into the arrays scikit-learn expects, fits scikit-learn's estimator on them (kept in
``estimator_``), and exposes its learned attributes. Its graph is written by the emitter registered for
scikit-learn's class, so our class and scikit-learn's own give the same graph.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import clone

from onegraph.emit import Col, GraphBuilder, find_emitter
from onegraph.frame.transformers.base import FrameTransformer, matrix_of
from onegraph.frame.transformers.constraints import sklearn_constraints

__all__ = ["SklearnBacked"]


# not ColumnWise: scikit-learn fits all the columns at once
class SklearnBacked(FrameTransformer):
    """A :class:`FrameTransformer` delegating its statistics to a scikit-learn estimator.

    Subclasses set ``sklearn_class`` and ``convert`` (column values -> the array scikit-learn sees), and
    take the same ``__init__`` parameters as ``sklearn_class``; so they take its declared constraints for
    them too (set when the subclass is made).
    """

    sklearn_class: type
    convert = staticmethod(lambda spec, values: values)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "_parameter_constraints" not in vars(cls):
            cls._parameter_constraints = sklearn_constraints(cls.sklearn_class, *cls._get_param_names())

    def _fit(self, frame: pd.DataFrame, y: Any) -> None:
        self.estimator_ = clone(self.sklearn_class(**self._sklearn_params())).fit(self._matrix(frame), y)
        self._copy_learned()

    def _copy_learned(self) -> None:
        """Expose the estimator's learned attributes (``mean_``, ``categories_``...) on this object."""
        for name, value in vars(self.estimator_).items():
            if name.endswith("_") and not name.startswith("_") and name not in ("n_features_in_", "feature_names_in_"):
                setattr(self, name, value)

    def _sklearn_params(self) -> dict:
        """Parameters of the scikit-learn estimator (ours, plus any the wrapper fixes)."""
        return self.get_params()

    def _matrix(self, frame: pd.DataFrame) -> np.ndarray:
        return matrix_of(frame, self.input_specs_, self.convert)

    def _transform(self, frame: pd.DataFrame) -> pd.DataFrame:
        out = self.estimator_.transform(self._matrix(frame))
        if hasattr(out, "toarray"):
            out = out.toarray()
        return pd.DataFrame(out, columns=self._names_out())

    def _names_out(self) -> list[str]:
        return [str(n) for n in self.estimator_.get_feature_names_out(self.feature_names_in_)]

    def emit(self, g: GraphBuilder, cols: list[Col]) -> list[Col]:
        return find_emitter(self.estimator_)(self.estimator_, g, cols)
