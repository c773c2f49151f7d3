"""The README's Python examples run as written and print what the README shows under them.

Each ```python block of README.md is run in order in one temporary folder (``tests/`` linked into it, the
paths the examples read), so a block may read the files an earlier one wrote (``penguins.onnx``). A block
followed by a ```text block must print that text. Numbers printed in scientific notation below 1e-9 (parity's
max abs / rel diffs of rounding, ~1e-16) are compared as such, not digit for digit: they are the BLAS's
rounding on a given CPU. Blocks needing what the test suite does not start (a Spark session, a server on
localhost, the CLI's federated round, media tensors defined elsewhere) are listed in ``NOT_RUN`` by a phrase
they contain.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOT_RUN = {
    "global-0.onnx": "reads the models the README's `onegraph fed` commands write",
    "SparkSession": "starts a Spark session (tests/test_spark_*.py run these models)",
    "tritonclient": "talks to `onegraph serve` on localhost:8080 (tests/test_serve*.py)",
    "sample_photos": "uses tensors and models defined in the media section's prose",
}
_TINY = re.compile(r"\b\d\.\d+e-(?:1\d|09)\b")


def _blocks() -> list[tuple[int, str, str | None]]:
    text = (ROOT / "README.md").read_text()
    return [(text[:m.start()].count("\n") + 1, m.group(1), m.group(2))
            for m in re.finditer(r"```python\n(.*?)```\n+(?:```text\n(.*?)```)?", text, re.DOTALL)]


def _normal(text: str) -> list[str]:
    return [_TINY.sub("<rounding>", line.rstrip()) for line in text.strip().splitlines()]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    path = tmp_path_factory.mktemp("readme")
    (path / "tests").symlink_to(ROOT / "tests")
    return path


def test_the_readme_has_examples_to_run():
    run = [b for b in _blocks() if not any(p in b[1] for p in NOT_RUN)]
    assert len(run) >= 8 and sum(out is not None for _, _, out in run) >= 5


@pytest.mark.parametrize("line, code, shown", _blocks(), ids=lambda v: f"line{v}" if isinstance(v, int) else "")
def test_readme_example(line, code, shown, folder):
    skip = [why for phrase, why in NOT_RUN.items() if phrase in code]
    if skip:
        pytest.skip(skip[0])
    printed = io.StringIO()
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        with contextlib.redirect_stdout(printed):
            exec(compile(code, f"README.md:{line}", "exec"), {"__name__": "__readme__"})  # noqa: S102
    finally:
        os.chdir(cwd)
    if shown is not None:
        assert _normal(printed.getvalue()) == _normal(shown), f"README.md line {line} prints otherwise"
