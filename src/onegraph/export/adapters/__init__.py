"""Adapters: fitted objects from other libraries -> graph nodes. Importing registers them."""

from onegraph.export.adapters import (  # noqa: F401
    calibration,
    decomposition,
    discriminant,
    ensembles,
    glm,
    linear,
    models,
    naive_bayes,
    neighbors,
    neural,
    sklearn,
    svm,
    trees,
)
