"""Files: atomic writes, reading and writing tables, with errors that name the file.

Every file onegraph writes goes to a temporary file in the target folder first and is renamed into place,
so a crash or a full disk never leaves a half-written model or table behind, and an existing file is
replaced only by a complete one.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from onegraph.errors import DataError, OnegraphError

__all__ = ["atomic_path", "check_output_path", "write_bytes", "save_model", "read_table", "write_table"]


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success rename it to ``path`` (atomic on POSIX)."""
    target, folder = check_output_path(path)
    # the file keeps the mode it had, or gets the one a plain open() would give (mkstemp makes 0600)
    try:
        mode = target.stat().st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise OnegraphError(f"cannot write {target}: {exc.strerror}") from None
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.chmod(tmp_path, mode)
        os.replace(tmp_path, target)
    except OSError as exc:
        raise OnegraphError(f"cannot write {target}: {exc.strerror}") from None
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def check_output_path(path: str | os.PathLike) -> tuple[Path, Path]:
    """The file and folder ``path`` names, or :class:`OnegraphError` if no file can be written there
    (empty, a folder, a missing folder). Commands call it before long work, not only when writing."""
    if not str(path).strip():
        raise OnegraphError("no output path given", hint="give a file name, e.g. -o model.onnx")
    target = Path(path)
    if target.is_dir() or str(path).endswith(os.sep):
        raise OnegraphError(f"cannot write {target}: it is a folder", hint="give a file name inside it")
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise OnegraphError(f"cannot write {target}: folder {folder} does not exist",
                            hint="create the folder first")
    return target, folder


def write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def save_model(model: Any, path: str | os.PathLike) -> None:
    """Save ``model`` (an ``onnx.ModelProto``) to ``path`` atomically (a single file, no external data)."""
    write_bytes(path, model.SerializeToString())


# -- tables ---------------------------------------------------------------------------------------
def read_table(path: str | os.PathLike, *, dtypes: dict[str, str] | None = None,
               specs: Sequence[Any] | None = None) -> pd.DataFrame:
    """Read a CSV or Parquet file into a DataFrame.

    ``specs`` (the model's input schema, :class:`~onegraph.contract.columns.ColumnSpec` list) or ``dtypes``
    (column -> kind) makes CSV columns read as the model takes them: text columns stay text even when every
    value looks like a number, datetime columns are parsed
    (:func:`~onegraph.contract.feeds.parse_datetime_text`: a tz-aware column in its stored zone, whatever
    offsets the text has).

    Raises
    ------
    DataError
        for a missing, empty or unparseable file, or an unknown extension.
    """
    p = Path(path)
    if not p.exists():
        raise DataError(f"data file {p} does not exist", hint="check the path")
    if p.is_dir():
        raise DataError(f"{p} is a folder, not a data file", hint="give a .csv or .parquet file")
    suffixes = [x.lower() for x in p.suffixes]
    compressed = bool(suffixes) and suffixes[-1] in _COMPRESSIONS
    suffix = (suffixes[-2] if compressed and len(suffixes) > 1 else p.suffix.lower()) if suffixes else ""
    try:
        if suffix in (".parquet", ".pq") and not compressed:
            return pd.read_parquet(p)
        if suffix in (".csv", ".txt", ".tsv"):
            sep = "\t" if suffix == ".tsv" else (None if compressed else _sniff_delimiter(p))
            kinds = {s.name: s.kind for s in specs} if specs is not None else dict(dtypes or {})
            zones = {s.name: s.tz for s in specs or () if s.tz}
            return _read_csv(p, kinds, zones, sep=sep or ",")
    except OnegraphError:
        raise
    except Exception as exc:  # pandas / pyarrow raise many types for malformed files
        raise DataError(f"cannot read data file {p}: {exc}", hint="check that it is a valid CSV or Parquet file") from None
    raise DataError(f"data file {p}: unknown format {''.join(suffixes) or '(no extension)'}",
                    hint="use a .csv (optionally .gz, .bz2, .zip, .xz, .zst) or .parquet file")


_COMPRESSIONS = (".gz", ".bz2", ".zip", ".xz", ".zst")


def _sniff_delimiter(p: Path) -> str | None:
    """The field separator of a text table (comma, semicolon, tab or pipe), from its first 64 KiB."""
    import csv

    with open(p, newline="", errors="replace") as f:
        sample = f.read(65536)
    try:
        return csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter
    except csv.Error:
        return None


def _read_csv(p: Path, kinds: dict[str, str], zones: dict[str, str], sep: str) -> pd.DataFrame:
    from onegraph.contract.feeds import parse_datetime_text

    header = pd.read_csv(p, nrows=0, sep=sep).columns
    dtype = {c: "str" for c in header if kinds.get(str(c)) == "string"}
    parse = [c for c in header if kinds.get(str(c)) == "datetime"]
    frame = pd.read_csv(p, sep=sep, dtype=dtype or None)
    for c in parse:
        frame[c] = parse_datetime_text(str(c), frame[c], zones.get(str(c)))
    if frame.shape[1] == 0:
        raise DataError(f"data file {p} has no columns")
    return frame


def write_table(frame: pd.DataFrame, path: str | os.PathLike) -> None:
    """Write ``frame`` to CSV or Parquet (by extension), atomically."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in (".csv", ".parquet", ".pq"):
        raise DataError(f"output {p}: unknown format {suffix or '(no extension)'}", hint="use .csv or .parquet")
    with atomic_path(p) as tmp:
        if suffix == ".csv":
            frame.to_csv(tmp, index=False)
        else:
            frame.to_parquet(tmp, index=False)
