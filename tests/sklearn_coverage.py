"""Which scikit-learn estimators onegraph exports with parity: the measurement of issue 16.

Every class of ``sklearn.utils.all_estimators()`` that is a classifier, a regressor or a transformer (in that
order; a class of several kinds counts once, as the first) is made with its default parameters
(``random_state=0`` where it has one, so the run is repeatable) and fitted on a small real numeric table: the
Auto MPG cars of ``tests/data/cars.csv`` (every fourth row: 102 rows), five measurements (cylinders,
displacement, horsepower, weight, acceleration) as float64. Classifiers predict ``Origin`` (3 classes),
regressors ``Miles_per_Gallon``; transformers are fitted with ``Origin`` as ``y`` (the supervised ones use
it). Rows with a missing value are dropped, except for estimators that accept missing values (scikit-learn's
``allow_nan`` tag: imputers, ``MissingIndicator``, histogram boosting...), which get the 6 rows with a
missing horsepower too. Text vectorizers (``HashingVectorizer``) take the text of the table instead
(the car names). A class whose ``fit`` fails on that table is not counted.

Each fitted class is built with :func:`onegraph.build` (the fitted object alone, ``sample`` = the same rows),
whose parity check runs onnxruntime and scikit-learn on every row and refuses a graph differing by more than
``1e-12 + 1e-6 * |expected|`` (labels exactly). The result per class is ``parity`` or ``refused`` with the
first line of onegraph's reason.

Run ``python tests/sklearn_coverage.py --write`` to measure and rewrite the table in the README.
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
FEATURES = ["Cylinders", "Displacement", "Horsepower", "Weight_in_lbs", "Acceleration"]
KINDS = ("classifier", "regressor", "transformer")
#: vectorizers of text: measured on the car names
TEXT_INPUT = {"HashingVectorizer"}
#: classes whose default fit does not fit the test's time budget, with the one change made: the transform
#: measured is the same whatever fitted the dictionary (DictionaryLearning's default 1000 LARS iterations
#: take ~165 s here)
FIT_OVERRIDES = {"DictionaryLearning": {"max_iter": 20}}
BEGIN = "<!-- coverage table: python tests/sklearn_coverage.py --write -->"
END = "<!-- end of coverage table -->"


@dataclasses.dataclass
class Result:
    kind: str
    name: str
    status: str  # "parity" | "refused"
    reason: str = ""
    seconds: float = 0.0


def tables() -> dict[str, tuple[pd.DataFrame, pd.Series]]:
    """The rows each kind of estimator is fitted on: (features, target); ``"nan"`` keeps missing features."""
    every = pd.read_csv(ROOT / "tests" / "data" / "cars.csv")
    gaps = every[FEATURES].isna().any(axis=1)
    cars = every[(every.index % 4 == 0) | gaps].reset_index(drop=True)  # every fourth row, and those with gaps
    x = cars[FEATURES].astype(np.float64)
    complete = x.notna().all(axis=1)
    mpg = cars["Miles_per_Gallon"].notna()
    return {
        "classifier": (x[complete].reset_index(drop=True), cars.loc[complete, "Origin"].reset_index(drop=True)),
        "classifier-nan": (x, cars["Origin"]),
        "regressor": (x[complete & mpg].reset_index(drop=True),
                      cars.loc[complete & mpg, "Miles_per_Gallon"].reset_index(drop=True)),
        "regressor-nan": (x[mpg].reset_index(drop=True), cars.loc[mpg, "Miles_per_Gallon"].reset_index(drop=True)),
        "text": (cars[["Name"]], cars["Origin"]),
    }


def estimators() -> list[tuple[str, str, type]]:
    """(kind, name, class) of every estimator measured, classifiers first, each class once."""
    from sklearn.experimental import enable_iterative_imputer  # noqa: F401  (IterativeImputer is listed)
    from sklearn.utils import all_estimators

    seen: set[str] = set()
    out = []
    for kind in KINDS:
        for name, cls in all_estimators(type_filter=kind):
            if name not in seen:
                seen.add(name)
                out.append((kind, name, cls))
    return out


def _make(cls: type):
    params = inspect.signature(cls.__init__).parameters
    est = cls()
    if "random_state" in params:
        est.set_params(random_state=0)
    est.set_params(**FIT_OVERRIDES.get(cls.__name__, {}))
    return est


def _allows_nan(est) -> bool:
    try:
        return bool(est.__sklearn_tags__().input_tags.allow_nan)
    except AttributeError:
        return False


def fitted(kind: str, name: str, cls: type, data: dict):
    """The fitted estimator and the rows it was fitted on, or None when it does not fit on the table; a
    transformer without ``transform`` (TSNE: it fits, in 20 s) is not fitted: nothing could score new rows."""
    if kind == "transformer" and not hasattr(cls, "transform"):
        return cls(), data["classifier"][0]
    try:
        est = _make(cls)
    except TypeError:  # a meta-estimator without a default estimator
        return None
    if name in TEXT_INPUT:
        x, y = data["text"]
    else:
        table = "regressor" if kind == "regressor" else "classifier"
        x, y = data[table + ("-nan" if _allows_nan(est) else "")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            est.fit(x["Name"] if name in TEXT_INPUT else x, y)
        except Exception:  # noqa: BLE001 - any failure to fit with the defaults removes the class
            return None
    return est, x


def measure(only: set[str] | None = None, log=None) -> list[Result]:
    """Build every estimator that fits; :class:`Result` per class."""
    import onegraph
    from onegraph.errors import ExportError, OnegraphError
    from onegraph.export.sources import is_predictor

    data = tables()
    results = []
    for kind, name, cls in estimators():
        if only is not None and name not in only:
            continue
        start = time.perf_counter()
        made = fitted(kind, name, cls, data)
        if made is None:
            continue
        est, x = made
        try:
            if not hasattr(est, "transform") and not is_predictor(est):
                raise ExportError(f"{name} cannot be exported: it has no transform (it embeds its training rows "
                                  "only)")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if is_predictor(est):
                    onegraph.build(None, est, x)
                else:
                    onegraph.build(est, None, x)
            result = Result(kind, name, "parity")
        except OnegraphError as exc:
            result = Result(kind, name, "refused", _one_line(str(exc)))
        except Exception as exc:  # noqa: BLE001 - a bug of onegraph, recorded as such
            result = Result(kind, name, "refused", _one_line(f"internal error: {type(exc).__name__}: {exc}"))
        result.seconds = time.perf_counter() - start
        results.append(result)
        if log is not None:
            log(result)
    return results


def _one_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else "?"
    return line if len(line) <= 200 else line[:197] + "..."


def counts(results: list[Result]) -> dict[str, tuple[int, int]]:
    """Per kind (and ``"all"``): (with parity, measured)."""
    out = {}
    for kind in KINDS + ("all",):
        rows = [r for r in results if kind in ("all", r.kind)]
        out[kind] = (sum(r.status == "parity" for r in rows), len(rows))
    return out


def table(results: list[Result]) -> str:
    """The README section: the counts, then one row per class."""
    c = counts(results)
    lines = [BEGIN, "",
             f"**{c['all'][0]} of {c['all'][1]}** exported with parity (transformers {c['transformer'][0]}/"
             f"{c['transformer'][1]}, classifiers {c['classifier'][0]}/{c['classifier'][1]}, regressors "
             f"{c['regressor'][0]}/{c['regressor'][1]}).", "",
             "| kind | class | result |", "|---|---|---|"]
    for r in sorted(results, key=lambda r: (KINDS.index(r.kind), r.status != "parity", r.name)):
        what = "parity" if r.status == "parity" else "refused: " + r.reason.replace("|", "\\|")
        lines.append(f"| {r.kind} | `{r.name}` | {what} |")
    lines += ["", END]
    return "\n".join(lines)


def readme_rows(text: str) -> dict[str, str]:
    """class name -> ``parity`` / ``refused`` as the README's table says."""
    section = text.split(BEGIN, 1)[1].split(END, 1)[0]
    out = {}
    for line in section.splitlines():
        parts = [p.strip() for p in line.strip().strip("|").split("|")]
        if len(parts) >= 3 and parts[1].startswith("`"):
            out[parts[1].strip("`")] = "parity" if parts[2] == "parity" else "refused"
    return out


def write_readme(results: list[Result]) -> None:
    path = ROOT / "README.md"
    text = path.read_text()
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    path.write_text(head + table(results) + tail)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    only = {a for a in sys.argv[1:] if not a.startswith("--")} or None
    measured = measure(only, log=lambda r: print(f"{r.seconds:6.2f}s {r.kind:11} {r.name:34} {r.status} {r.reason}",
                                                 flush=True))
    print(counts(measured))
    if "--write" in sys.argv:
        write_readme(measured)
