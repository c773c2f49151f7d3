"""What a model consumes, checked before anything is exported; the adapter every composable model is.

An :class:`Adapter` wraps one fitted model (scikit-learn, XGBoost, LightGBM, a PyTorch module, an existing
ONNX graph) and declares what it consumes (:class:`Consumes`: element type, width, and for a sequence
model the window length), so :func:`onegraph.export.compose` checks every edge of a composition (what the
preprocessing gives against what each model takes) before any graph is written. :func:`adapt` picks the
adapter for an object.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import onnx_ir as ir

from onegraph.emit import DOUBLE, FLOAT, GraphBuilder
from onegraph.errors import ExportError

__all__ = ["Consumes", "Adapter", "qualified_name"]


@dataclasses.dataclass(frozen=True)
class Consumes:
    """The input a model takes.

    Attributes
    ----------
    dtype: ``"double"`` (float64) or ``"float"`` (float32): the element type the model computes in. The
        composition casts the double feature matrix to it (as the source library does when it predicts).
    width: number of features (columns of the matrix), or None when the model takes any width.
    steps: for a sequence model, the window length: the model takes ``[N, steps, width]``; None for a
        feature matrix ``[N, width]``.
    """

    dtype: str
    width: int | None
    steps: int | None = None

    @property
    def ir_dtype(self) -> ir.DataType:
        return FLOAT if self.dtype == "float" else DOUBLE

    def __str__(self) -> str:
        bits = "float32" if self.dtype == "float" else "float64"
        w = "?" if self.width is None else self.width
        if self.steps is not None:
            return f"{bits} windows [N, {self.steps}, {w}]"
        return f"a {bits} feature matrix [N, {w}]"

    def check(self, model: str, producer: str, width: int, kinds: set[str], steps: int | None = None) -> None:
        """Raise :class:`ExportError` naming both sides when ``producer``'s columns do not fit this input."""
        gives = f"{producer} gives {width} column(s)" + (f" in windows of {steps}" if steps else "")
        if kinds - {"float", "int", "bool"}:
            raise ExportError(f"{gives}, some of them {'/'.join(sorted(kinds - {'float', 'int', 'bool'}))}, "
                              f"but {model} consumes {self}",
                              hint="encode text and dates into numbers in the preprocessing")
        if self.width is not None and width != self.width:
            raise ExportError(f"{gives} but {model} consumes {self}",
                              hint="fit the model on the preprocessing's output, or change the preprocessing")
        if self.steps != steps:
            want = "a sequence" if self.steps else "a feature matrix"
            raise ExportError(f"{gives} but {model} consumes {self}",
                              hint=f"the model takes {want}: "
                                   + ("pass sequence=Sequence(...) to compose" if self.steps else
                                      "compose it without sequence="))


class Adapter:
    """A fitted model ready to be composed into a graph.

    Attributes
    ----------
    model: the wrapped object.
    source: its qualified class (``xgboost.sklearn.XGBClassifier``).
    task: ``"classifier"`` or ``"regressor"``.
    classes: class labels of a classifier (the order of its probability columns), else None.
    consumes: what it takes (:class:`Consumes`).
    tolerance: ``(rtol, atol)`` its graph is checked with against the source library (float32 models:
        1e-5).
    """

    model: Any
    source: str
    task: str
    classes: list | None = None
    consumes: Consumes
    tolerance: tuple[float, float] = (1e-6, 1e-12)

    def emit(self, g: GraphBuilder, x: ir.Value) -> Any:
        """Write the model's nodes on ``x`` (``[N, width]`` double, or ``[N, steps, width]`` double);
        return :class:`~onegraph.export.adapters.models.ModelOutputs`."""
        raise NotImplementedError

    def expected(self, x: Any) -> dict[str, np.ndarray]:
        """The source library's own outputs (``label`` / ``probabilities`` / ``prediction``) for ``x`` as
        the preprocessing gives it (a DataFrame or an array), for the parity check."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.source}, consumes {self.consumes})"


def qualified_name(obj: Any) -> str:
    """``sklearn.linear_model.LogisticRegression``: the public module path of ``obj``'s class (private parts
    dropped)."""
    from onegraph.meta.model import qualified_name as name_of

    return name_of(type(obj))
