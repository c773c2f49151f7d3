"""Make ``descriptions.csv``: the paragraphs of the dataset descriptions that ship with scikit-learn
(``sklearn/datasets/descr/*.rst``, BSD-3-Clause) and the UTF-8 samples of CPython's CJK codec tests
(``Lib/test/cjkencodings/*-utf8.txt``, PSF licence), one paragraph per row: real English prose with
punctuation, digits, URLs and reStructuredText markup, and Chinese / Japanese / Korean text.

Run ``python tests/data/text/make.py`` to remake it (the files are read from the installed packages)."""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

import sklearn


def paragraphs(text: str) -> list[str]:
    return [" ".join(p.split()) for p in re.split(r"\n\s*\n", text) if len(p.split()) >= 3]


def main() -> None:
    rows = []
    for path in sorted((Path(sklearn.__file__).parent / "datasets" / "descr").glob("*.rst")):
        rows += [("scikit-learn " + path.name, p) for p in paragraphs(path.read_text(encoding="utf-8"))]
    test_dir = Path(sys.base_prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "test"
    for name in ("big5-utf8.txt", "euc_jp-utf8.txt", "euc_kr-utf8.txt", "gb18030-utf8.txt"):
        path = test_dir / "cjkencodings" / name
        if path.exists():
            rows += [("cpython " + name, p) for p in paragraphs(path.read_text(encoding="utf-8"))]
    out = Path(__file__).with_name("descriptions.csv")
    with out.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["source", "text"])
        w.writerows(rows)
    print(f"{len(rows)} rows -> {out}")


if __name__ == "__main__":
    main()
