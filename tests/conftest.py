"""Shared fixtures: the real tables in tests/data and the bundled penguins."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from onegraph.datasets import load_penguins

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="session")
def penguins() -> pd.DataFrame:
    """Palmer penguins as pandas reads the CSV (str text columns with NaN, float64, int64)."""
    return load_penguins()


@pytest.fixture(scope="session")
def penguins_raw() -> pd.DataFrame:
    return pd.read_csv(DATA / "penguins-raw.csv")


@pytest.fixture(scope="session")
def seattle() -> pd.DataFrame:
    return pd.read_csv(DATA / "seattle-weather.csv", parse_dates=["date"])


@pytest.fixture(scope="session")
def cars() -> pd.DataFrame:
    return pd.read_csv(DATA / "cars.csv")


@pytest.fixture(scope="session")
def airports() -> pd.DataFrame:
    return pd.read_csv(DATA / "airports.csv")


def assert_same_values(got, expected, *, rtol: float = 1e-12, atol: float = 1e-12, name: str = "") -> None:
    """Numbers within tolerance (NaN where NaN); anything else equal, missing values equal."""
    got = np.asarray(got)
    expected = np.asarray(expected)
    assert got.shape == expected.shape, f"{name}: shape {got.shape} != {expected.shape}"
    if got.dtype.kind in "fiub" and expected.dtype.kind in "fiub":
        np.testing.assert_allclose(got.astype(float), expected.astype(float), rtol=rtol, atol=atol,
                                   equal_nan=True, err_msg=name)
        return
    g_missing = pd.isna(got)
    e_missing = pd.isna(expected)
    assert (g_missing == e_missing).all(), f"{name}: missing values differ"
    assert (got[~g_missing].astype(str) == expected[~e_missing].astype(str)).all(), f"{name}: values differ"


@pytest.fixture
def cli(capsys, monkeypatch):
    """Run ``onegraph ARGS`` in this process through the command line's own ``main()``; returns a
    ``CompletedProcess`` (exit code, stdout, stderr). Faster than a subprocess: the imports are paid once."""
    import subprocess
    import sys

    from onegraph.cli import main

    def invoke(*args: str) -> subprocess.CompletedProcess:
        monkeypatch.setattr(sys, "argv", ["onegraph", *args])
        code = 0
        try:
            main()
        except SystemExit as exc:
            code = exc.code or 0
        captured = capsys.readouterr()
        return subprocess.CompletedProcess(list(args), code, captured.out, captured.err)

    return invoke
