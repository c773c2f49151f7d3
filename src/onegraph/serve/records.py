"""The records endpoint's bodies: rows in (JSON records, Arrow IPC, CSV) and scored rows out.

Rows are read into the tables :func:`onegraph.score` takes (a dict of one row's values, a list of records,
a pyarrow Table, a DataFrame read by :func:`onegraph.io.read_table` with the model's input schema, so CSV
text columns stay text and missing markers read as missing) and scored with its rules; the answer has
``onegraph.score``'s columns (``label``, ``probabilities_<class>``, ``prediction``...).
"""

from __future__ import annotations

import io
import json
import os
import tempfile
from typing import Any

from onegraph.errors import DataError, MissingColumnError, OnegraphError
from onegraph.io import read_table
from onegraph.serve.errors import NotAcceptableError, ProtocolError, UnsupportedMediaError

__all__ = ["JSON", "ARROW_STREAM", "ARROW_FILE", "CSV", "MEDIA_TYPES", "media_type", "read_rows",
           "write_rows", "error_row"]

JSON = "application/json"
ARROW_STREAM = "application/vnd.apache.arrow.stream"
ARROW_FILE = "application/vnd.apache.arrow.file"
CSV = "text/csv"
MEDIA_TYPES = (JSON, ARROW_STREAM, ARROW_FILE, CSV)
_SCALARS = (str, int, float, bool, type(None))
#: what `curl -d` declares whatever it sends: read as the default (JSON), which reports a body that is not
_FORM = "application/x-www-form-urlencoded"


def media_type(header: str | None, default: str = JSON, *, accept: bool = False) -> str:
    """The media type of a Content-Type (or, with ``accept``, an Accept) header value, without parameters;
    ``default`` when absent, ``*/*`` or curl's form default. Raises :class:`UnsupportedMediaError` (415) for a
    body the endpoint does not read, :class:`NotAcceptableError` (406) for an answer it does not write."""
    if not header:
        return default
    for part in header.split(","):
        kind = part.split(";")[0].strip().lower()
        if kind in MEDIA_TYPES:
            return kind
        if kind in ("*/*", "application/*", "", _FORM):
            return default
    if accept:
        raise NotAcceptableError(f"media type {header!r} is not written here", hint=f"accept {', '.join(MEDIA_TYPES)}")
    raise UnsupportedMediaError(f"media type {header!r} is not read here", hint=f"use {', '.join(MEDIA_TYPES)}")


def read_rows(body: bytes, kind: str, specs: list) -> tuple[int | None, Any]:
    """The table in a request body of media type ``kind``, and its row count when known before scoring.

    ``{"instances": [{column: value, ...}, ...]}`` for JSON (one record is passed as a dict, which scores the
    same row faster); an Arrow IPC stream or file; CSV with a header line (read as ``onegraph score`` reads
    files, by ``specs``, the model's input schema).

    Raises :class:`~onegraph.serve.errors.ProtocolError` for a body that is not of its type or not rows.
    """
    if kind == JSON:
        try:
            doc = json.loads(body)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # RecursionError: nested too deeply
            raise ProtocolError(f"the body is not JSON ({exc})", hint=_INSTANCES) from None
        instances = doc.get("instances") if isinstance(doc, dict) else None
        if not isinstance(instances, list):
            raise ProtocolError("the body has no 'instances' list", hint=_INSTANCES)
        if not instances:  # no rows: scored as an empty table of the model's columns (an empty answer)
            return 0, {s.name: [] for s in specs}
        for i, rec in enumerate(instances):
            if not isinstance(rec, dict):
                raise ProtocolError(f"instance {i} is not an object of column values", hint=_INSTANCES)
        # one record as a dict (faster); not `{}`, which alone would be a table of no rows
        if len(instances) == 1 and instances[0] and all(type(v) in _SCALARS for v in instances[0].values()):
            return 1, instances[0]
        return len(instances), instances
    if kind in (ARROW_STREAM, ARROW_FILE):
        import pyarrow as pa

        try:
            reader = pa.ipc.open_stream(body) if kind == ARROW_STREAM else pa.ipc.open_file(body)
            table = reader.read_all()
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise ProtocolError(f"the body is not an Arrow IPC {kind.rsplit('.', 1)[1]} ({exc})") from None
        return table.num_rows, table
    return None, _read_csv(body, specs)


_INSTANCES = 'send {"instances": [{"column": value, ...}, ...]}'


def _read_csv(body: bytes, specs: list) -> Any:
    # read_table takes a file: the one reader keeps CSV rules (typed columns, dates, missing markers) in one place
    with tempfile.TemporaryDirectory(prefix="onegraph-serve-") as folder:
        path = os.path.join(folder, "rows.csv")
        with open(path, "wb") as f:
            f.write(body)
        try:
            return read_table(path, specs=specs)
        except DataError as exc:
            said = str(exc).replace(f"data file {path}", "the CSV body").replace(path, "the CSV body")
            raise ProtocolError(" ".join(said.replace("a valid CSV or Parquet file", "valid CSV").split())) from None


def write_rows(rows: Any, kind: str) -> bytes:
    """The scored rows (a :class:`~onegraph.serve.lanes.ScoredRows`) as a response body of media type
    ``kind``: ``{"predictions": [record, ...]}`` (missing values as null), Arrow IPC, or CSV."""
    if kind == JSON:
        return json.dumps({"predictions": rows.records()}, separators=(",", ":")).encode()
    frame = rows.frame()
    if kind == CSV:
        return frame.to_csv(index=False).encode()
    import pyarrow as pa

    table = pa.Table.from_pandas(frame, preserve_index=False)
    sink = io.BytesIO()
    writer = pa.ipc.new_stream(sink, table.schema) if kind == ARROW_STREAM else pa.ipc.new_file(sink, table.schema)
    with writer:
        writer.write_table(table)
    return sink.getvalue()


def error_row(feeds: Any, table: Any, n: int | None, exc: OnegraphError) -> int | None:
    """The first row at fault for ``exc`` (raised by ``feeds(table)``), found by bisection when the
    message does not name a row itself; None when it does, or for a column absent from every row."""
    if "row" in exc.message or n is None or n < 1 or isinstance(exc, MissingColumnError):
        return None
    if n == 1:
        return 0
    lo, hi = 0, n  # the first bad row is in [lo, hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            feeds(_rows(table, lo, mid))
        except OnegraphError:
            hi = mid
        else:
            lo = mid
    return lo


def _rows(table: Any, start: int, stop: int) -> Any:
    if isinstance(table, list):
        return table[start:stop]
    if isinstance(table, dict):  # columns (v2 tensors)
        return {k: v[start:stop] for k, v in table.items()}
    if hasattr(table, "iloc"):
        return table.iloc[start:stop]
    return table.slice(start, stop - start)  # pyarrow
