"""Adapters: fitted objects from other libraries -> graph nodes. Importing registers them."""

from onegraph.export.adapters import (  # noqa: F401
    calibration,
    cluster,
    decomposition,
    discriminant,
    ensembles,
    glm,
    kernel_approximation,
    linear,
    models,
    naive_bayes,
    neighbors,
    neural,
    preprocessing,
    selection,
    sklearn,
    svm,
    trees,
)
