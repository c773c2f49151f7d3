"""The architecture, held against the code: packages import downward only, no circle between modules, no
private name taken from another module, ``__all__`` in every public module, and the scoring runtime does not
load the fitting stack (docs/architecture.md draws the layers)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

SRC = Path(__file__).parent.parent / "src" / "onegraph"

#: each package (or top-level module) of onegraph and its floor: a package imports only packages on lower
#: floors. The same order is drawn in docs/architecture.md.
FLOORS = {
    "errors": 0, "_lazy": 0, "datasets": 0, "extras": 1, "registry": 1, "kept": 1, "written": 1,
    "contract": 2,
    "io": 3, "emit": 3, "shapes": 3,
    "check": 4,
    "runtime": 5, "meta": 5, "inspect": 5,
    "verify": 6, "frame": 6, "passes": 6, "stats": 6, "federated": 6,
    "convert": 7, "export": 7,
    "spark": 8, "media": 8, "serve": 8,
    "cli": 9,
    "__main__": 10,  # python -m onegraph: runs the command line
    "campaign": 10,
}


def _modules() -> dict[str, Path]:
    found = {}
    for path in SRC.rglob("*.py"):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> list[tuple[str, list[str], int]]:
    """(imported module, names taken from it, line) for every import statement of the module, nested ones too."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, [], node.lineno) for a in node.names if a.name.startswith("onegraph")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("onegraph"):
                continue
            for a in node.names:
                sub = f"{target}.{a.name}"
                out.append((sub, [], node.lineno) if sub in MODULES else (target, [a.name], node.lineno))
    return out


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_every_package_has_a_floor():
    packages = {_package(m) for m in MODULES} - {""}
    assert packages <= set(FLOORS), f"give {sorted(packages - set(FLOORS))} a floor in FLOORS"


def test_packages_import_downward_only():
    upward = []
    for name, path in MODULES.items():
        here = _package(name)
        for target, _, line in _imports(name, path):
            there = _package(target)
            if not here or not there or here == there:
                continue
            if FLOORS[there] >= FLOORS[here]:
                upward.append(f"{path.relative_to(SRC.parent)}:{line} imports {target} "
                              f"(floor {FLOORS[there]} from floor {FLOORS[here]})")
    assert not upward, "imports that do not go down:\n  " + "\n  ".join(upward)


def test_no_import_circle_between_modules():
    graph = defaultdict(set)
    for name, path in MODULES.items():
        for target, _, _ in _imports(name, path):
            if target in MODULES and target != name and not name.startswith(target + "."):
                graph[name].add(target)
    # Tarjan's strongly connected components
    index, low, on, stack, circles, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                circles.append(sorted(part))

    sys.setrecursionlimit(10000)
    for v in list(MODULES):
        if v not in index:
            visit(v)
    assert not circles, "modules that import each other:\n  " + "\n  ".join(" <-> ".join(c) for c in circles)


def test_no_private_name_is_taken_from_another_module():
    taken = []
    for name, path in MODULES.items():
        for target, names, line in _imports(name, path):
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            if private and target != name:
                taken.append(f"{path.relative_to(SRC.parent)}:{line} takes {', '.join(private)} from {target}")
    assert not taken, "private names used across modules (make them public, or move the code):\n  " + \
        "\n  ".join(taken)


def test_every_public_module_says_what_it_exports():
    missing = []
    for name, path in MODULES.items():
        if any(part.startswith("_") for part in name.split(".")[1:]) or name.endswith("__main__"):
            continue
        tree = ast.parse(path.read_text())
        defines = any(isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)) and
                      not n.name.startswith("_") for n in tree.body)
        has_all = any(isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in n.targets)
                      for n in tree.body)
        if defines and not has_all:
            missing.append(str(path.relative_to(SRC.parent)))
    assert not missing, "modules defining public names without __all__:\n  " + "\n  ".join(missing)


#: what scoring, show and check never need: the fitting and converting stack
HEAVY = ["sklearn", "scipy", "skl2onnx", "onnxscript", "onnxmltools", "onnxconverter_common", "torch", "pyspark",
         "matplotlib"]


@pytest.mark.parametrize("code", [
    "import onegraph, pandas as pd; onegraph.score(MODEL, pd.read_csv(DATA))",
    "import sys; sys.argv = ['onegraph', 'score', MODEL, DATA, '-o', OUT]\nfrom onegraph.cli import main\n"
    "try:\n    main()\nexcept SystemExit:\n    pass",
    "import sys; sys.argv = ['onegraph', 'show', MODEL]\nfrom onegraph.cli import main\n"
    "try:\n    main()\nexcept SystemExit:\n    pass",
    "import sys; sys.argv = ['onegraph', 'check', MODEL]\nfrom onegraph.cli import main\n"
    "try:\n    main()\nexcept SystemExit:\n    pass",
], ids=["score()", "score", "show", "check"])
def test_scoring_show_and_check_load_no_fitting_stack(code, tmp_path, penguins_onnx):
    from onegraph.datasets import penguins_path

    program = (f"MODEL, DATA, OUT = {str(penguins_onnx)!r}, {str(penguins_path())!r}, {str(tmp_path / 'o.csv')!r}\n"
               f"{code}\nimport sys, json\nprint(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert loaded == [], f"loaded {loaded}"


def test_a_scikit_learn_pipeline_builds_in_a_fresh_interpreter():
    """scikit-learn's transformers get their emitters from onegraph.frame's modules: building a pipeline of
    scikit-learn objects alone, in an interpreter that never imported onegraph.frame, must find them (once,
    scoring imported onegraph.frame and hid that the export did not)."""
    program = """
import onegraph
from onegraph.datasets import load_penguins
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
df = load_penguins().dropna(subset=["species"])
y = df.pop("species")
pipe = make_pipeline(ColumnTransformer([
    ("num", make_pipeline(SimpleImputer(), StandardScaler()), ["bill_length_mm", "body_mass_g"]),
    ("cat", make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore")),
     ["island", "sex"])]), LogisticRegression(max_iter=500)).fit(df, y)
onegraph.build(pipe, None, df)
print("built")
"""
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "built" in done.stdout, done.stderr[-1500:]


def test_calibrating_a_tensor_model_loads_no_table_stack():
    """``onegraph.stats.calibrate`` of a tensor model (the digits CNN, fed numpy batches) imports numpy, onnx,
    onnxruntime and its sketch library only: pandas, pyarrow and pydantic are the table side (once, a helper
    moved into a module next to the metadata schema loaded them all, 0.3 s and 80 MiB per calibration), and
    none of the fitting stack."""
    model = Path(__file__).parent / "data" / "digits-cnn.onnx"
    program = f"""
import sys, json
import numpy as np
from onegraph.stats import calibrate
rng = np.random.default_rng(0)
report = calibrate({str(model)!r}, ({{"x": rng.random((8, 1, 8, 8), dtype=np.float32)}} for _ in range(3)),
                   progress=False).stats()
assert report, "no statistics"
print(json.dumps(sorted(m for m in {HEAVY + ["pandas", "pyarrow", "pydantic", "polars"]!r} if m in sys.modules)))
"""
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
