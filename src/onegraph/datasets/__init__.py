"""Real data sets bundled with onegraph (used by ``onegraph quickstart`` and the examples).

* ``penguins.csv`` - Palmer penguins (Horst, Hill & Gorman 2020), CC0, from the ``palmerpenguins``
  package: 344 penguins, species / island / sex (text, with missing values), bill, flipper and mass
  measurements (with missing values), year.
"""

from __future__ import annotations

from importlib import resources

import pandas as pd

__all__ = ["penguins_path", "load_penguins"]


def penguins_path() -> str:
    """Path of the bundled Palmer penguins CSV."""
    return str(resources.files(__name__) / "penguins.csv")


def load_penguins() -> pd.DataFrame:
    """The Palmer penguins table as pandas reads it (text columns as ``str``, missing values as NaN)."""
    return pd.read_csv(penguins_path())
