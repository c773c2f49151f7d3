"""Adapters: fitted objects from other libraries -> graph nodes. Importing registers them (and the emitters
onegraph's frame transformers register for scikit-learn's scalers, imputers and encoders)."""

import onegraph.frame.transformers  # noqa: F401  (registers emitters for scikit-learn's classes)

from onegraph.export.adapters import (  # noqa: F401
    calibration,
    catboost,
    cluster,
    decomposition,
    discriminant,
    ensembles,
    gaussian_process,
    glm,
    impute,
    kernel_approximation,
    lightgbm,
    linear,
    misc,
    models,
    multiclass,
    naive_bayes,
    neighbors,
    neural,
    outliers,
    pipeline,
    preprocessing,
    refused,
    selection,
    sklearn,
    svm,
    text,
    threshold,
    trees,
)
