"""Adapters: fitted objects from other libraries -> graph nodes. Importing registers them."""

from onegraph.export.adapters import calibration, linear, models, sklearn, trees  # noqa: F401
