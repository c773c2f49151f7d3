"""onegraph: a whole DataFrame pipeline - preprocessing, trained models, post-processing - as one
portable, self-describing, verified ONNX graph.

Main entry points::

    import onegraph
    model = onegraph.build(preprocessing, classifier, sample=train_df, path="model.onnx")
    onegraph.score("model.onnx", new_rows)          # -> DataFrame of label / probabilities
    onegraph.parity(preprocessing, classifier, test_df)
    onegraph.compose(preprocessing, {"lr": lr, "xgb": xgb}, sample=train_df, ensemble="mean")
"""

__version__ = "0.1.0"

from onegraph import errors  # noqa: E402
from onegraph.export import build, compose  # noqa: E402
from onegraph.io import load_model, save_model  # noqa: E402
from onegraph.runtime import Session, score  # noqa: E402
from onegraph.verify import parity  # noqa: E402

__all__ = ["__version__", "build", "compose", "score", "parity", "Session", "load_model", "save_model", "errors"]
