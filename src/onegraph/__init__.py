"""onegraph: a whole DataFrame pipeline - preprocessing, trained models, post-processing - as one
portable, self-describing, verified ONNX graph.

Main entry points::

    import onegraph
    model = onegraph.build(preprocessing, classifier, sample=train_df, path="model.onnx")
    onegraph.score("model.onnx", new_rows)          # -> DataFrame of label / probabilities
    onegraph.parity(preprocessing, classifier, test_df)
    onegraph.compose(preprocessing, {"lr": lr, "xgb": xgb}, sample=train_df, ensemble="mean")

Attributes are imported on first use (scikit-learn and pandas load only when something needs them).
"""

__version__ = "0.1.0"

from onegraph import _lazy, errors  # noqa: E402

__all__ = ["__version__", "build", "compose", "score", "parity", "Session", "load_model", "save_model", "errors"]
_lazy.exports(__name__, {
    "build": "onegraph.export.build", "compose": "onegraph.export.compose", "score": "onegraph.runtime.score",
    "Session": "onegraph.runtime.session", "parity": "onegraph.export.parity", "load_model": "onegraph.check.loader",
    "save_model": "onegraph.io",
})
