"""Files: atomic writes, reading and writing tables, with errors that name the file.

Every file onegraph writes goes to a temporary file in the target folder first and is renamed into place,
so a crash or a full disk never leaves a half-written model or table behind, and an existing file is
replaced only by a complete one.

A writer killed outright (``kill -9``, the OOM killer, power loss) leaves its temporary file
``.NAME.XXXXXXXX.tmp`` next to ``NAME``. The next write to ``NAME`` removes such leftovers of ``NAME``'s own
pattern, and only the stale ones: each writer holds an exclusive ``flock`` on its temporary file for as long
as it writes, and the kernel drops the lock when the process dies however it dies, so a leftover is a file
of the pattern whose lock can be taken. A lock, not an age, tells a dead writer from a slow one (a large
model on a slow disk, a paused process, a clock that differs on a network folder). Files younger than
:data:`STALE_AFTER` seconds are left alone whatever their lock: that covers the instant between a writer
creating its file and locking it, and writers without the lock (another program, an older onegraph).
Without ``fcntl`` (Windows) nothing is removed.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from onegraph.errors import DataError, OnegraphError
from onegraph.written import note_write

__all__ = ["atomic_path", "check_output_path", "TABLE_SUFFIXES", "write_bytes", "save_model", "is_parquet_dataset",
           "read_table", "read_text_columns", "write_table", "na_words", "NA_WORDS", "csv_dialect",
           "remove_stale_temporaries", "STALE_AFTER", "table_format"]

#: seconds since its last change before an unlocked temporary file counts as a dead writer's leftover
STALE_AFTER = 60.0


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path ``.NAME.XXXXXXXX.tmp`` next to ``path``; on success rename it to ``path``
    (atomic on POSIX); on failure remove it. The temporary file is locked (``flock``) while the caller
    writes, and leftovers of ``NAME`` from writers that were killed are removed first (module docstring).

    Raises
    ------
    OnegraphError
        naming the file, when it cannot be written (see :func:`check_output_path`, or the OS error).
    """
    target, folder = check_output_path(path, probe=False)  # creating the temporary file below is the probe
    from onegraph.kept import kept_as

    read_as = kept_as(target)
    if read_as is not None:
        raise OnegraphError(f"cannot write {target}: it is {read_as}, which would be replaced",
                            hint="write the output to another file")
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
    tmp_path = Path(tmp)
    try:
        _lock(fd)  # held until the file is renamed or removed: this writer is alive
        remove_stale_temporaries(target, keep=tmp_path)
        yield tmp_path
        os.chmod(tmp_path, mode)
        os.replace(tmp_path, target)
        note_write()
    except OSError as exc:
        raise OnegraphError(f"cannot write {target}: {exc.strerror}") from None
    finally:
        if tmp_path.exists():
            tmp_path.unlink()
        os.close(fd)


def _lock(fd: int) -> bool:
    """Take an exclusive ``flock`` on ``fd`` (waiting, briefly, for a cleaner that is testing it); False
    without ``fcntl``."""
    try:
        import fcntl
    except ImportError:  # Windows: no advisory locks, no clean-up
        return False
    fcntl.flock(fd, fcntl.LOCK_EX)
    return True


def _temporaries(target: Path) -> re.Pattern:
    """The names :func:`atomic_path` gives temporary files of ``target`` (``tempfile.mkstemp``: 8 characters
    of ``[a-z0-9_]`` between the prefix and the suffix)."""
    return re.compile(rf"\.{re.escape(target.name)}\.[a-z0-9_]{{8}}\.tmp")


def remove_stale_temporaries(target: Path, *, keep: Path | None = None, now: float | None = None) -> list[Path]:
    """Remove the temporary files of ``target``'s own pattern that no live writer holds: regular files
    ``.NAME.XXXXXXXX.tmp`` next to ``target``, unchanged for :data:`STALE_AFTER` seconds or more, whose
    ``flock`` this process can take. ``keep`` (this writer's own file), other names, folders and links are
    never touched; a file that cannot be inspected or removed is skipped. Returns the files removed."""
    try:
        import fcntl
    except ImportError:
        return []
    pattern = _temporaries(target)
    folder = target.parent if str(target.parent) else Path(".")
    now = time.time() if now is None else now
    removed = []
    try:
        names = [n for n in os.listdir(folder) if pattern.fullmatch(n)]
    except OSError:
        return []
    for name in names:
        path = folder / name
        if keep is not None and path == keep:
            continue
        try:
            info = os.lstat(path)
            if not stat.S_ISREG(info.st_mode) or now - info.st_mtime < STALE_AFTER:
                continue
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held: a writer is at work on it
            os.close(fd)
            continue
        try:
            if os.path.samestat(os.fstat(fd), os.lstat(path)):  # still the file we locked
                os.unlink(path)
                removed.append(path)
        except OSError:
            pass
        finally:
            os.close(fd)
    return removed


#: suffixes of table files: a model written under one of them would be mistaken for data (and not read back)
TABLE_SUFFIXES = frozenset({".csv", ".tsv", ".parquet", ".pq", ".json", ".jsonl", ".arrow", ".feather", ".ipc",
                            ".xlsx", ".xls"})


def check_output_path(path: str | os.PathLike, *, model: bool = False, delta: bool = False, probe: bool = True,
                      inputs: Sequence[str | os.PathLike | None] = ()) -> tuple[Path, Path]:
    """The file and folder ``path`` names, or :class:`OnegraphError` if no file can be written there
    (empty, a folder, a missing folder, a folder where no file can be created — probed by creating and removing
    a temporary file, as the atomic write will). Commands call it before long work, not only when writing.

    ``model``: the file will hold an ONNX model, so a table's suffix (``.csv``, ``.parquet``...,
    :data:`TABLE_SUFFIXES`) or a delta's (``.safetensors``) is refused; ``delta``: it will hold a federated
    delta (safetensors), so ``.onnx`` and a table's suffix are refused. ``probe=False`` skips the temporary
    file (the atomic write itself). ``inputs``: the files the command reads; writing over one of them is
    refused (an input is never replaced).
    """
    if not str(path).strip():
        raise OnegraphError("no output path given", hint="give a file name, e.g. -o model.onnx")
    target = Path(path)
    if target.is_dir() and target.suffix.lower() in (".parquet", ".pq"):  # a Parquet dataset (score --spark)
        raise OnegraphError(f"cannot write {target}: it exists (a folder: a Parquet dataset)",
                            hint="remove it or give another name")
    if target.is_dir() or str(path).endswith(os.sep):
        raise OnegraphError(f"cannot write {target}: it is a folder", hint="give a file name inside it")
    for given in inputs:
        if given is not None and _same_file(target, Path(given)):
            raise OnegraphError(f"cannot write {target}: it is the input {given}, which would be replaced",
                                hint="write the output to another file")
    suffix = target.suffix.lower()
    if model and (suffix in TABLE_SUFFIXES or suffix == ".safetensors"):
        stem = target.stem if target.stem.lower().endswith(".onnx") else f"{target.stem}.onnx"
        what = "a table file" if suffix in TABLE_SUFFIXES else "a delta file"
        raise OnegraphError(f"cannot write a model to {target}: {target.suffix} names {what}, and the model "
                            "is ONNX", hint=f"give a .onnx name, e.g. {stem}")
    if delta and (suffix in TABLE_SUFFIXES or suffix == ".onnx"):
        raise OnegraphError(f"cannot write a delta to {target}: {target.suffix} names "
                            f"{'a table' if suffix in TABLE_SUFFIXES else 'a model'} file, and a delta is safetensors",
                            hint=f"give a .safetensors name, e.g. {target.stem}.safetensors")
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        if folder.exists():
            raise OnegraphError(f"cannot write {target}: {folder} is a file, not a folder",
                                hint="give a path in a folder")
        raise OnegraphError(f"cannot write {target}: folder {folder} does not exist",
                            hint="create the folder first")
    if probe:
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
        except OSError as exc:
            raise OnegraphError(f"cannot write {target}: {exc.strerror} (folder {folder})",
                                hint="choose a folder you can write to") from None
        os.close(fd)
        os.unlink(tmp)
    return target, folder


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def save_model(model: Any, path: str | os.PathLike) -> None:
    """Save ``model`` (an ``onnx.ModelProto``) to ``path`` atomically (a single file, no external data).

    Raises :class:`OnegraphError` when ``path`` cannot be written or names a table file (``.csv``...).
    """
    check_output_path(path, model=True, probe=False)
    write_bytes(path, model.SerializeToString())


# -- tables ---------------------------------------------------------------------------------------
def is_parquet_dataset(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a folder holding a Parquet dataset (part files, hive partitions: what Spark and
    ``score --spark`` write)."""
    p = Path(path)
    return p.is_dir() and next(p.rglob("*.parquet"), None) is not None


def read_table(path: str | os.PathLike, *, dtypes: dict[str, str] | None = None,
               specs: Sequence[Any] | None = None, keep_na_words: bool = False) -> pd.DataFrame:
    """Read a CSV or Parquet file (or a Parquet dataset folder, :func:`is_parquet_dataset`) into a DataFrame.

    ``specs`` (the model's input schema, :class:`~onegraph.contract.columns.ColumnSpec` list) or ``dtypes``
    (column -> kind) makes CSV columns read as the model takes them: text columns stay text even when every
    value looks like a number, datetime columns are parsed
    (:func:`~onegraph.contract.feeds.parse_datetime_text`: a tz-aware column in its stored zone, whatever
    offsets the text has). Cells pandas reads as missing (empty, ``NA``, ``null``, ``N/A``, ``nan``...) are
    missing in every such column, as when ``build`` reads the CSV (:func:`read_text_columns` reads columns
    exactly as written); with ``keep_na_words`` only an empty cell is missing and the words pandas reads as
    missing (:data:`NA_WORDS`: ``NA``, ``null``, ``nan``...) are text (a category or class ``NA``).
    :func:`na_words` counts the cells holding them.

    Raises
    ------
    DataError
        for a missing, empty or unparseable file, an unknown extension, or a CSV header that names a column
        twice (naming it).
    """
    p = Path(path)
    if not p.exists():
        raise DataError(f"data file {p} does not exist", hint="check the path")
    if is_parquet_dataset(p):
        try:
            return _index_as_columns(pd.read_parquet(p))
        except Exception as exc:  # pyarrow's dataset errors (mixed schemas, unreadable part files)
            raise DataError(f"cannot read the Parquet dataset {p}: {exc}",
                            hint="check that its part files share one schema") from None
    if p.is_dir():
        raise DataError(f"{p} is a folder, not a data file", hint="give a .csv or .parquet file, or a folder of "
                        "Parquet part files")
    suffix, compressed = _data_format(p)
    if p.suffix.lower() == ".zst":
        _need_zstandard(p, "reading", "or decompress it first (zstd -d FILE)")
    _refuse_misnamed(p, suffix, compressed)
    try:
        if suffix in (".parquet", ".pq") and not compressed:
            _refuse_repeated_parquet_names(p)
            return _index_as_columns(pd.read_parquet(p))
        if suffix in _TEXT_TABLES:
            kinds = {s.name: s.kind for s in specs} if specs is not None else dict(dtypes or {})
            zones = {s.name: s.tz for s in specs or () if s.tz}
            sep, decimal = _dialect(p, suffix, compressed)
            return _read_csv(p, kinds, zones, sep=sep, decimal=decimal, keep_na_words=keep_na_words)
    except OnegraphError:
        raise
    except UnicodeDecodeError as exc:  # pandas reads CSV text as UTF-8; its message counts in a buffer
        raise DataError(f"data file {p} is not UTF-8 text: {_first_undecodable(p, compressed) or exc.reason}",
                        hint="save it as UTF-8 (pandas: to_csv(path, encoding='utf-8'); or iconv -f latin1 -t "
                             "utf-8 IN > OUT)") from None
    except Exception as exc:  # pandas / pyarrow raise many types for malformed files
        raise DataError(f"cannot read data file {p}: {exc}", hint="check that it is a valid CSV or Parquet file") from None
    raise DataError(f"data file {p}: unknown format {''.join(p.suffixes) or '(no extension)'}",
                    hint="use a .csv (optionally .gz, .bz2, .zip, .xz, .zst) or .parquet file")


#: the first bytes of the formats a data file may be in (Parquet, then the compressions pandas reads)
_MAGIC = {b"\x1f\x8b": ("gzip-compressed", ".csv.gz"), b"\x28\xb5\x2f\xfd": ("zstd-compressed", ".csv.zst"),
          b"\xfd7zXZ\x00": ("xz-compressed", ".csv.xz"), b"PK\x03\x04": ("a zip archive", ".csv.zip")}


def _sniffed(head: bytes, tail: bytes) -> tuple[str, str] | None:
    """What the first (10) and last (4) bytes of a file say it is, or None for anything else (text). Parquet
    begins and ends with PAR1, bzip2 is ``BZh`` + a level + the block magic ``1AY&SY``: a CSV whose header
    begins ``PAR1`` or ``BZh`` is text."""
    if head.startswith(b"PAR1") and tail == b"PAR1":
        return "a Parquet file", ".parquet"
    if head.startswith(b"BZh") and head[3:4].isdigit() and head[4:10] == b"1AY&SY":
        return "bzip2-compressed", ".csv.bz2"
    return next((what for magic, what in _MAGIC.items() if head.startswith(magic)), None)


def _refuse_misnamed(p: Path, suffix: str, compressed: bool) -> None:
    """:class:`DataError` for a file whose first bytes say another format than its name: a Parquet or gzip file
    named ``.csv`` was read as text ("not UTF-8": advice to re-encode it from Latin-1), a CSV named ``.parquet``
    as Parquet (pyarrow's "magic bytes not found")."""
    try:
        with open(p, "rb") as f:
            head = f.read(10)
            f.seek(max(0, os.fstat(f.fileno()).st_size - 4))
            tail = f.read(4)
    except OSError:
        return  # the reader below says why
    found = _sniffed(head, tail)
    parquet = suffix in (".parquet", ".pq") and not compressed
    if found is not None and not compressed and not (parquet and found[1] == ".parquet"):
        raise DataError(f"data file {p} is {found[0]}, not what its name says ({''.join(p.suffixes)})",
                        hint=f"rename it to end in {found[1]}")
    # after PAR1 a Parquet file has binary page headers, a CSV whose header begins "PAR1" has text
    if parquet and head.startswith(b"PAR1") and found is None and not all(
            32 <= b < 127 or b in b"\t\r\n" for b in head[4:]):
        raise DataError(f"data file {p} begins as a Parquet file but does not end as one (Parquet ends with PAR1; it "
                        f"ends {tail!r}): it was cut short or damaged", hint="copy or write the file again")
    if parquet and head and (found is None or found[1] != ".parquet"):
        raise DataError(f"data file {p} is named {p.suffix} but is not a Parquet file (Parquet begins and ends with "
                        f"PAR1; it starts {head[:6]!r})", hint="if it is a CSV, rename it to end in .csv")


def _index_as_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """A Parquet file pandas wrote from a frame with a named index (``df.set_index("Name").to_parquet()``) holds
    that index as a column, which ``read_parquet`` restores as the index: a model's column ``Name`` was then
    "missing from the data". A named index becomes columns again (rows keep their order)."""
    if any(n is not None for n in frame.index.names):
        return frame.reset_index()
    return frame


def _need_zstandard(p: Path, doing: str, instead: str) -> None:
    """:class:`DataError` when the optional zstandard package, through which pandas reads and writes .zst, is
    missing (pandas' own message, "`Import zstandard` failed...", read as a malformed file)."""
    from importlib.util import find_spec

    if find_spec("zstandard") is None:
        raise DataError(f"{p}: {doing} .zst needs the zstandard package", hint=f"pip install zstandard, {instead}")


#: compressed suffixes read_table reads (pandas infers the codec from the suffix)
_COMPRESSIONS = (".gz", ".bz2", ".zip", ".xz", ".zst")
#: suffixes of the delimited text tables read_table reads with pandas' read_csv
_TEXT_TABLES = (".csv", ".txt", ".tsv")


def _first_undecodable(p: Path, compressed: bool) -> str | None:
    """Where the first byte that is not UTF-8 sits in an uncompressed text file: its line (counted from 1, the
    header line 1) and the text around it; None for a compressed file (the failure path only reads it)."""
    if compressed:
        return None
    with open(p, "rb") as f:
        for number, line in enumerate(f, 1):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as exc:
                around = line[max(0, exc.start - 20):exc.end + 20].decode("utf-8", "backslashreplace").strip()
                return f"line {number} holds the byte 0x{line[exc.start]:02x} (\"{around}\")"
    return None


def _data_format(p: Path) -> tuple[str, bool]:
    """``(table suffix, compressed)`` of a data file's name: ``rows.csv.gz`` -> ``(".csv", True)``."""
    suffixes = [x.lower() for x in p.suffixes]
    compressed = bool(suffixes) and suffixes[-1] in _COMPRESSIONS
    return (suffixes[-2] if compressed and len(suffixes) > 1 else p.suffix.lower()) if suffixes else "", compressed


def _separator(p: Path, suffix: str, compressed: bool) -> str:
    """The field separator of a text table: tab for .tsv, else sniffed (a compressed file: a comma)."""
    return _dialect(p, suffix, compressed, decimal=False)[0]


def _dialect(p: Path, suffix: str, compressed: bool, decimal: bool = True) -> tuple[str, str]:
    """The field separator and (with ``decimal``) the decimal mark of a text table, from one read of its first
    64 Ki characters (see :func:`csv_dialect`)."""
    if suffix == ".tsv" or compressed:
        return ("\t" if suffix == ".tsv" else ","), "."
    sample = _sample(p)
    sep = _sniff_delimiter(sample) or ","
    return sep, _decimal_mark(sample, sep) if decimal else "."


def _sample(p: Path) -> str:
    """The first 64 Ki characters of a text file (what the sniffing reads)."""
    with open(p, newline="", errors="replace") as f:
        return f.read(_SAMPLE)


_SAMPLE = 1 << 16


def _sniff_delimiter(sample: str) -> str | None:
    """The field separator of a text table (comma, semicolon, tab or pipe), from the ``sample`` of its start."""
    import csv

    try:
        return csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter
    except csv.Error:
        return None


def csv_dialect(path: str | os.PathLike) -> tuple[str, str]:
    """The field separator and the decimal mark :func:`read_table` reads a text table with.

    The separator: tab for ``.tsv``, else sniffed from the first 64 KiB (comma, semicolon, tab or pipe; a
    comma for a compressed file). The decimal mark: ``,`` for a semicolon-separated table whose numbers are
    written with decimal commas (``39,1``: the convention of the spreadsheets that separate fields with
    semicolons, in most of Europe), when some field of the first 64 KiB is digits, a comma and digits and
    none is digits, a point and digits other than point thousands groups (``3.750``, ``1.234,5``); else ``.``.
    With the decimal comma, a column whose every value is such a number reads the points as thousands
    separators (3.750 is 3750); pandas' ``thousands="."`` is not used, as it would read every dotted text
    (a ``11.11.2007`` date) as a number too.
    """
    p = Path(path)
    suffix, compressed = _data_format(p)
    if suffix not in _TEXT_TABLES or p.is_dir():
        return ",", "."
    return _dialect(p, suffix, compressed)


def _decimal_mark(sample: str, sep: str) -> str:
    """``,`` when the ``sample`` of a ``;``-separated table writes numbers with decimal commas, else ``.``."""
    if sep != ";":
        return "."
    lines = sample.splitlines()[1:]  # not the header
    if len(sample) == _SAMPLE and len(lines) > 1:
        lines = lines[:-1]  # nor a last line the sample cut
    fields = [f.strip().strip('"') for line in lines for f in line.split(sep)]
    comma = re.compile(r"[+-]?(?:\d+|\d{1,3}(?:\.\d{3})+),\d+")
    point = re.compile(r"[+-]?\d*\.\d+")
    if any(comma.fullmatch(f) for f in fields) and not any(
            point.fullmatch(f) and not GROUPED_NUMBER.fullmatch(f) for f in fields):
        return ","
    return "."


#: a number written with a decimal comma and point thousands groups (3.750, 1.234.567,5, -12,5)
GROUPED_NUMBER = re.compile(r"[+-]?(?:\d{1,3}(?:\.\d{3})+|\d+)(?:,\d+)?")


def _read_grouped_numbers(frame: pd.DataFrame, kinds: dict[str, str]) -> None:
    """Each text column of a decimal-comma ``frame`` whose every value is a number with point thousands
    groups (see :func:`csv_dialect`) as numbers (int64, or float64 with a missing value or a decimal), in place; a column the model reads as text is kept."""
    for c in frame.columns:
        if kinds.get(str(c)) == "string" or not pd.api.types.is_string_dtype(frame[c]):
            continue
        values = frame[c].dropna()
        if len(values) and all(isinstance(v, str) and GROUPED_NUMBER.fullmatch(v.strip()) for v in values):
            text = frame[c].str.strip().str.replace(".", "", regex=False).str.replace(",", ".", regex=False)
            frame[c] = pd.to_numeric(text)


def _read_csv(p: Path, kinds: dict[str, str], zones: dict[str, str], sep: str, decimal: str = ".",
              keep_na_words: bool = False) -> pd.DataFrame:
    from onegraph.contract.feeds import parse_datetime_text

    _refuse_repeated_names(p, sep)
    header = pd.read_csv(p, nrows=0, sep=sep).columns
    dtype = {c: "str" for c in header if kinds.get(str(c)) == "string"}
    parse = [c for c in header if kinds.get(str(c)) == "datetime"]
    missing = {"keep_default_na": False, "na_values": [""]} if keep_na_words else {}
    frame = pd.read_csv(p, sep=sep, decimal=decimal, dtype=dtype or None, **missing)
    if not isinstance(frame.index, pd.RangeIndex):
        # pandas takes the first field(s) of a row longer than the header as its index: every column shifted
        raise DataError(f"data file {p}: line 2 has {len(header) + frame.index.nlevels} fields but the header names "
                        f"{len(header)} columns, so every value would be read one column to the left",
                        hint="remove the extra field (a separator at the end of each line?) or name every column "
                             "in the header")
    if frame.shape[1] == 0:
        raise DataError(f"data file {p} has no columns")
    if frame.iloc[:, -1].isna().any():  # a line cut short reads as missing values in its last fields
        _refuse_short_lines(p, sep, len(header))
    if decimal == ",":
        _read_grouped_numbers(frame, kinds)
    for c in parse:
        frame[c] = parse_datetime_text(str(c), frame[c], zones.get(str(c)))
    return frame


def _refuse_short_lines(p: Path, sep: str, width: int) -> None:
    """Refuse a data line with fewer fields than the header: pandas fills the fields it lacks with missing
    values and says nothing (a longer line it refuses). Arrow's CSV reader reports such a row, with its line."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    found: list = []

    def invalid(row: Any) -> str:
        if row.actual_columns < row.expected_columns and not found:
            found.append(row)
        return "skip"

    # one thread: the reader numbers the rows it reports (the header is row 1)
    with pa.input_stream(str(p), compression="detect") as stream:
        pacsv.read_csv(stream, read_options=pacsv.ReadOptions(block_size=1 << 24, use_threads=False),
                       parse_options=pacsv.ParseOptions(delimiter=sep, invalid_row_handler=invalid,
                                                        newlines_in_values=True))
    if found:
        row = found[0]
        where = f"row {row.number} (the header is row 1)" if row.number is not None else "a row"
        raise DataError(f"data file {p}: {where} has {row.actual_columns} fields but the header names "
                        f"{row.expected_columns} columns, so its last values would be read as missing "
                        f"({row.text[:60]!r})",
                        hint="complete the line (an empty field between separators is a missing value)")


def _default_na_words() -> frozenset[str]:
    try:
        from pandas._libs.parsers import STR_NA_VALUES
    except ImportError:  # pandas' list as of 2.x / 3.x
        STR_NA_VALUES = {"#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
                         "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"}
    return frozenset(STR_NA_VALUES) - {""}


#: the words (besides the empty cell) pandas' ``read_csv`` reads as missing by default (its ``na_values``)
NA_WORDS = _default_na_words()


def na_words(path: str | os.PathLike, columns: Sequence[str] | None = None) -> dict[str, dict[str, int]]:
    """Per column of a CSV (``columns``, default all), the cells holding one of :data:`NA_WORDS` (``NA``,
    ``N/A``, ``null``, ``nan``, ``None``...), which :func:`read_table` reads as missing unless
    ``keep_na_words``: ``{column: {word: cells}}`` for the columns holding any (empty cells, missing however
    read, are not counted). ``{}`` for a Parquet file, whose missing values are stored as such.

    Raises
    ------
    DataError
        as :func:`read_table`.
    """
    p = Path(path)
    suffix, compressed = _data_format(p)
    if suffix not in _TEXT_TABLES or p.is_dir():
        return {}
    sep = _separator(p, suffix, compressed)
    try:
        raw = pd.read_csv(p, sep=sep, dtype=str, keep_default_na=False, na_values=[""],
                          usecols=list(columns) if columns is not None else None)
    except Exception as exc:  # as read_table, which has already read the file
        raise DataError(f"cannot read data file {p}: {exc}", hint="check that it is a valid CSV file") from None
    found: dict[str, dict[str, int]] = {}
    for c in raw.columns:
        counts = raw[c][raw[c].isin(NA_WORDS)].value_counts()
        if len(counts):
            found[str(c)] = {str(w): int(n) for w, n in counts.items()}
    return found


def read_text_columns(path: str | os.PathLike, columns: Sequence[str], read: pd.DataFrame | None = None
                      ) -> pd.DataFrame:
    """``columns`` of a table file as written: a CSV's cells as text exactly (``007`` stays ``007``, ``NA`` stays
    ``NA``, ``18.00`` stays ``18.00``; only an empty cell is missing), a Parquet file's values as stored (taken
    from ``read``, the table already read from ``path``, when given). For columns copied into an output
    (``score --keep``), whatever a model reads them as.

    Raises
    ------
    DataError
        as :func:`read_table`, and for a column the file does not have (naming it).
    """
    p = Path(path)
    suffix, compressed = _data_format(p)
    text = suffix in _TEXT_TABLES and not p.is_dir()
    if text:
        sep = _separator(p, suffix, compressed)
        names = [str(c) for c in pd.read_csv(p, nrows=0, sep=sep).columns]
    else:
        read = read_table(p) if read is None else read
        names = [str(c) for c in read.columns]
    missing = [c for c in columns if c not in names]
    if missing:
        raise DataError(f"column {missing[0]!r} is not in {p}", hint=f"columns: {', '.join(names)}")
    if not text:
        return read[list(columns)]
    return pd.read_csv(p, sep=sep, usecols=list(columns), dtype=str, keep_default_na=False,
                       na_values={c: [""] for c in columns})[list(columns)]


def _refuse_repeated_parquet_names(p: Path) -> None:
    """DataError naming a column name the file's schema repeats (pyarrow: "Multiple matches for FieldRef")."""
    import pyarrow.parquet as pq

    names = pq.read_schema(p).names
    repeated = next((n for i, n in enumerate(names) if n in names[:i]), None)
    if repeated is not None:
        raise DataError(f"data file {p}: column name {repeated!r} appears more than once",
                        hint="rename or drop the repeated column")


def _refuse_repeated_names(p: Path, sep: str) -> None:
    """DataError naming the first column name the header repeats: pandas would rename the second ``a.1``,
    and a model's column ``a`` would silently take the first."""
    raw = pd.read_csv(p, nrows=1, header=None, sep=sep, dtype=str, keep_default_na=False).iloc[0].tolist()
    seen: set[str] = set()
    for i, name in enumerate(raw):
        if name in seen and name != "":  # unnamed columns (a written index) pandas names "Unnamed: <i>"
            raise DataError(f"data file {p}: column name {name!r} appears more than once in the header (again as "
                            f"column {i + 1})", hint="rename or drop the repeated column")
        seen.add(name)


#: compressed suffixes write_table writes -> pandas' codec name (a .zip is an archive: not written)
_OUTPUT_COMPRESSIONS = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz", ".zst": "zstd"}


def table_format(path: str | os.PathLike) -> tuple[str, str | None]:
    """``("csv" | "parquet", compression)`` of an output table file by its name (``.csv``, ``.csv.gz``, ``.bz2``,
    ``.xz``, ``.zst``; ``.parquet`` / ``.pq``); :class:`DataError` for any other name. Commands call it before
    the work, so a name that cannot be written is said at once."""
    p = Path(path)
    suffixes = [s.lower() for s in p.suffixes[-2:]]
    compression = _OUTPUT_COMPRESSIONS.get(suffixes[-1]) if suffixes else None
    kind = suffixes[-2] if compression and len(suffixes) == 2 else (suffixes[-1] if suffixes else "")
    if kind == ".csv":
        if compression == "zstd":
            _need_zstandard(p, "writing", "or write .csv.gz / .csv.xz / .parquet")
        return "csv", compression
    if kind in (".parquet", ".pq") and compression is None:
        return "parquet", None
    raise DataError(f"output {p}: unknown format {''.join(p.suffixes[-2:]) or '(no extension)'}",
                    hint="use .csv (optionally .csv.gz, .csv.bz2, .csv.xz, .csv.zst) or .parquet")


def write_table(frame: pd.DataFrame, path: str | os.PathLike) -> None:
    """Write ``frame`` to CSV (compressed by its suffix, see :func:`table_format`) or Parquet, atomically."""
    kind, compression = table_format(path)
    with atomic_path(path) as tmp:
        if kind == "csv":
            frame.to_csv(tmp, index=False, compression=compression)
        else:
            frame.to_parquet(tmp, index=False)
