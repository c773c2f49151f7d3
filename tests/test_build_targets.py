"""``onegraph build DATA --target COL`` chooses the task from the target's values as they would be without its
blank cells, and refuses a target that is numbers but for a few words, which a classifier would take as
hundreds of classes (UCI's auto-mpg writes a missing horsepower as ``?``: 94 classes, accuracy near 0)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import onegraph

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def cars() -> pd.DataFrame:
    return pd.read_csv(DATA / "cars.csv")


def test_a_numeric_target_with_question_marks_is_refused_naming_them(cli, cars, tmp_path):
    data = tmp_path / "auto-mpg.csv"
    cars.assign(Horsepower=cars["Horsepower"].map(lambda v: "?" if pd.isna(v) else f"{v:.1f}")).to_csv(data,
                                                                                                       index=False)
    missing = cars.index[cars["Horsepower"].isna()]
    out = cli("build", str(data), "--target", "Horsepower", "-o", str(tmp_path / "hp.onnx"))
    assert out.returncode == 1 and not (tmp_path / "hp.onnx").exists()
    lines = out.stderr.strip().splitlines()
    n = cars["Horsepower"].notna().sum()
    assert len(lines) == 1, out.stderr
    assert (f"target column 'Horsepower' has {cars['Horsepower'].nunique() + 1} distinct values, and {n} of its "
            f"{len(cars)} values are numbers, but {len(missing)} {'is' if len(missing) == 1 else 'are'} not: '?' "
            f"(row {missing[0]})") in lines[0]
    assert "make those cells empty" in lines[0]
    # the advice works: blank cells are rows without a target, and the numbers make a regression
    cars.to_csv(data, index=False)
    built = cli("build", str(data), "--target", "Horsepower", "-o", str(tmp_path / "hp.onnx"))
    assert built.returncode == 0 and "(regression) on" in built.stderr, built.stderr
    # asked for, the texts are classes
    asked = cars.assign(Horsepower=cars["Horsepower"].map(lambda v: "?" if pd.isna(v) else f"{v:.0f}"))
    asked["Horsepower"] = asked["Horsepower"].where(asked["Horsepower"].isin(["?", "150", "90", "110"]), "other")
    asked.to_csv(data, index=False)
    classes = cli("build", str(data), "--target", "Horsepower", "--task", "classification",
                  "-o", str(tmp_path / "c.onnx"))
    assert classes.returncode == 0 and "(classification) on" in classes.stderr, classes.stderr


@pytest.fixture(scope="module")
def long_bills(penguins) -> pd.DataFrame:
    """Penguins with a yes/no target derived from a measurement (missing where the measurement is) and the
    measurement itself left out."""
    frame = penguins.drop(columns=["bill_length_mm"])
    frame["long_bill"] = (penguins["bill_length_mm"] > 44).where(penguins["bill_length_mm"].notna())
    assert frame["long_bill"].isna().sum() == 2
    return frame


def test_a_true_false_target_with_blanks_is_a_bool_classification(cli, long_bills, tmp_path):
    data = tmp_path / "bills.csv"
    long_bills.assign(long_bill=long_bills["long_bill"].map({True: "True", False: "False"})).to_csv(data,
                                                                                                    index=False)
    assert pd.read_csv(data)["long_bill"].dtype == object  # what pandas gives: Python bools and NaN
    model = tmp_path / "bills.onnx"
    out = cli("build", str(data), "--target", "long_bill", "-o", str(model))
    assert out.returncode == 0, out.stderr
    assert "(classification) on 273 rows" in out.stderr
    frame = long_bills.dropna(subset=["long_bill"]).drop(columns=["long_bill"])
    labels = onegraph.score(model, frame)["label"]
    assert labels.dtype == bool
    truth = long_bills["long_bill"].dropna().astype(bool).to_numpy()
    assert (labels.to_numpy() == truth).mean() > 0.8  # island, species and depth tell long bills well


def test_a_zero_one_target_with_blanks_is_the_same_task_from_csv_and_parquet(cli, long_bills, tmp_path):
    frame = long_bills.assign(long_bill=long_bills["long_bill"].map({True: 1, False: 0}).astype("Int64"))
    csv, parquet = tmp_path / "bills.csv", tmp_path / "bills.parquet"
    frame.to_csv(csv, index=False)
    frame.to_parquet(parquet, index=False)
    assert pd.read_csv(csv)["long_bill"].dtype == np.float64  # the blanks make the CSV's column float
    outs = {}
    for data in (csv, parquet):
        model = tmp_path / f"{data.suffix[1:]}.onnx"
        out = cli("build", str(data), "--target", "long_bill", "-o", str(model))
        assert out.returncode == 0 and "(classification) on 273 rows" in out.stderr, out.stderr
        outs[data.suffix] = onegraph.score(model, frame.drop(columns=["long_bill"]))
    for suffix, got in outs.items():
        assert got["label"].dtype == np.int64, suffix
        assert set(got["label"]) <= {0, 1}
    np.testing.assert_array_equal(outs[".csv"]["label"], outs[".parquet"]["label"])
    for column in ("probabilities_0", "probabilities_1"):
        # the same data in the same rows: the same fit (lbfgs is deterministic), so the same probabilities
        np.testing.assert_array_equal(outs[".csv"][column], outs[".parquet"][column])


def test_class_codes_written_with_leading_zeros_keep_them(cli, penguins, tmp_path):
    """A target of codes (``001``, ``002``; FIPS, ZIP and product codes are written so) reads from a CSV as
    the numbers 1, 2 in pandas: the model's labels are the codes as written, from CSV and from the same table
    with the codes as text, and a note says so. A numeric target without such zeros stays numbers."""
    species = sorted(penguins["species"].unique())
    codes = penguins.assign(species=penguins["species"].map({s: f"{i + 1:03d}" for i, s in enumerate(species)}))
    data = tmp_path / "codes.csv"
    codes.to_csv(data, index=False)
    built = cli("build", str(data), "--target", "species", "-o", str(tmp_path / "codes.onnx"))
    assert built.returncode == 0, built.stderr
    assert "note: target 'species' is written with leading zeros ('001'): its classes are the texts" in built.stderr
    scored = onegraph.score(tmp_path / "codes.onnx", codes.drop(columns="species"))
    assert set(scored["label"]) <= {"001", "002", "003"} and len(set(scored["label"])) == 3
    assert (scored["label"] == codes["species"]).mean() > 0.9  # the penguins' species, learned
    parquet = tmp_path / "codes.parquet"
    codes.to_parquet(parquet)
    assert cli("build", str(parquet), "--target", "species", "-o", str(tmp_path / "p.onnx")).returncode == 0
    np.testing.assert_array_equal(onegraph.score(tmp_path / "p.onnx", codes.drop(columns="species"))["label"],
                                  scored["label"])
    # signed codes: -01, 01 and +01 are three classes (pandas reads -1, 1, 1: two)
    signed = codes.assign(species=codes["species"].map({"001": "-01", "002": "01", "003": "+01"}))
    signed.to_csv(data, index=False)
    assert cli("build", str(data), "--target", "species", "-o", str(tmp_path / "s.onnx")).returncode == 0
    labels = onegraph.score(tmp_path / "s.onnx", signed.drop(columns="species"))["label"]
    assert set(labels) == {"-01", "01", "+01"}
    # plain integers stay integers (no zero before another digit)
    plain = codes.assign(species=codes["species"].astype(int))
    plain.to_csv(data, index=False)
    built = cli("build", str(data), "--target", "species", "-o", str(tmp_path / "plain.onnx"))
    assert built.returncode == 0 and "leading zeros" not in built.stderr, built.stderr
    labels = onegraph.score(tmp_path / "plain.onnx", plain.drop(columns="species"))["label"]
    assert set(labels) <= {1, 2, 3}


def test_rows_without_a_target_value_are_counted_in_a_note(cli, tmp_path):
    """Rows with an empty target cell were left out of the fit without a word (NA words had a note)."""
    import pandas as pd
    from conftest import DATA

    cars = pd.read_csv(DATA / "cars.csv")
    cars.loc[[3, 50, 51], "Origin"] = None
    path = tmp_path / "cars.csv"
    cars.to_csv(path, index=False)
    done = cli("build", str(path), "--target", "Origin", "-o", str(tmp_path / "cars.onnx"))
    assert done.returncode == 0, done.stderr
    assert f"note: 3 of {len(cars)} rows have no 'Origin' value and are left out of the fit" in done.stderr
