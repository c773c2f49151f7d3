"""Adapters: fitted objects from other libraries -> graph nodes. Importing registers them."""

from onegraph.export.adapters import (  # noqa: F401
    calibration,
    discriminant,
    ensembles,
    glm,
    linear,
    models,
    naive_bayes,
    sklearn,
    trees,
)
