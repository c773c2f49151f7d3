"""One onnxruntime session per model, fed straight from DataFrames.

A :class:`Session` reads the input schema stored in the model (see :mod:`onegraph.contract.columns`) once,
then turns each table it is given into feeds column by column (no copy of the whole table, no pandas
indexing per row), runs onnxruntime in batches and returns the outputs as a DataFrame whose index is the
input's. Rows a step refuses (a category never seen in fit, with ``handle_unknown="error"``) raise
:class:`~onegraph.errors.UnknownCategoryError` naming the column, the values and the rows; values outside
the range a step was built for (a date beyond its time-zone table) raise
:class:`~onegraph.errors.OutOfRangeError`; a row holding ±inf for which the model gives no answer (NaN
probabilities or a non-finite prediction) raises :class:`~onegraph.errors.ColumnTypeError` naming the
column and the row (see :meth:`Session._raise_infinite`).
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import onnxruntime as ort
import pandas as pd

from onegraph.check.loader import load_model, read_model
from onegraph.check.options import session_options
from onegraph.contract import metadata as meta
from onegraph.contract.columns import MISSING_STRING, NA_INT64, ColumnSpec
from onegraph.contract.feeds import text_bytes, to_feed
from onegraph.contract.outputs import check_entries
from onegraph.contract.rows import RowFeeds
from onegraph.contract.tables import column_reader
from onegraph.errors import (
    ColumnTypeError,
    DataError,
    MissingColumnError,
    ModelFileError,
    OutOfRangeError,
    RuntimeFailure,
    UnknownCategoryError,
    whole_number,
)
from onegraph.runtime.frames import FrameTemplate

__all__ = ["Session", "BATCH_BYTES"]

#: bytes a batch's widest value may take in double (``row_width`` values a row); see :class:`Session`
BATCH_BYTES = 64 << 20

_ORT_KINDS = {
    "tensor(double)": ("float", "double"), "tensor(float)": ("float", "float"), "tensor(int64)": ("int", "int64"),
    "tensor(bool)": ("bool", "bool"), "tensor(string)": ("string", "string"),
}


class Session:
    """A model ready to score tables.

    Parameters
    ----------
    model:
        Path to a ``.onnx`` file, its bytes, or an ``onnx.ModelProto``.
    threads:
        onnxruntime intra-op threads (None: onnxruntime's default, all cores).
    batch_size:
        Rows per onnxruntime call; larger tables are scored in batches of this size. A model whose metadata
        gives its widest value (``row_width``: a one-hot block of 6,300 categories is 6,300 doubles a row) is
        scored in batches that keep that value near :data:`BATCH_BYTES` (64 MiB), whatever ``batch_size``
        asks: a 65,536-row batch of such a block would be 3.3 GB, and its neighbours as much again. A row's
        answer may differ in its last bit between batch sizes (onnxruntime's kernels sum in another order for
        another shape), never more than rounding.
    trusted:
        Skip the pre-check that parses and opens the model in an isolated process first
        (:func:`onegraph.check.loader.read_model`); only for files you made or trust.
    extra_outputs:
        The model carries graph outputs its ``org.onegraph.outputs`` does not describe (a tool's copy with
        intermediate tensors exposed, read with :meth:`run_feeds`); by default such a model is refused
        (:func:`onegraph.contract.metadata.output_problems`).

    Raises
    ------
    ModelFileError
        when the model cannot be read or onnxruntime cannot open it;
        :class:`~onegraph.check.guard.UnsafeModelError` when the pre-check finds an error (naming it).
    """

    def __init__(self, model: Any, *, threads: int | None = None, batch_size: int = 65536,
                 trusted: bool = False, extra_outputs: bool = False) -> None:
        batch_size = whole_number("batch_size", batch_size)
        if threads is not None:
            threads = whole_number("threads", threads, 0, hint="give threads >= 0 (0 or None: onnxruntime's default)")
        source = read_model(model, trusted=trusted, purpose="run")
        options = session_options(threads=threads, folder=source.folder)
        try:
            self._session = ort.InferenceSession(source.data, options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own Fail / InvalidGraph / InvalidArgument types
            load_model(model if isinstance(model, (str, os.PathLike)) else source.data, trusted=True)  # no model?
            raise ModelFileError(f"onnxruntime cannot open {source.label}: {str(exc).strip()[:500]}",
                                 hint="check it with `onegraph check`") from None
        fields, _ = meta.decode(self._session.get_modelmeta().custom_metadata_map,
                                only=("inputs", "outputs", "sequence", "media", "row_width"))
        fields = {k: v for k, v in fields.items() if v is not None}  # a field written as null says nothing
        self.batch_size = min(batch_size, _rows_within_budget(fields.get("row_width", 1)))
        ort_inputs = self._session.get_inputs()
        if "inputs" in fields:
            # ORT's types: "tensor(double)" -> "double" (the entries' spelling)
            problems = meta.input_problems(fields["inputs"], {i.name: i.type[7:-1] if i.type.startswith("tensor(")
                                                              else None for i in ort_inputs},
                                           meta.internal_inputs(fields))
            if problems:
                raise ModelFileError(f"the model's metadata (org.onegraph.inputs) {problems[0]}",
                                     hint=_fix_metadata("inputs"))
            self.inputs = [ColumnSpec.from_dict(d) for d in fields["inputs"]]
        else:
            self.inputs = [_spec_from_ort(i) for i in ort_inputs]
        columns = {s.name for s in self.inputs}
        self._rank2 = [i.name for i in ort_inputs if len(i.shape) == 2 and i.name in columns]
        ort_outputs = [o.name for o in self._session.get_outputs()]
        if "outputs" in fields:
            described_names = {o["name"] for o in fields["outputs"]}
            problems = meta.output_problems(fields["outputs"], [n for n in ort_outputs if n in described_names]
                                            if extra_outputs else ort_outputs, meta.output_widths(
                                                {o.name: o.shape for o in self._session.get_outputs()}))
            if problems:
                raise ModelFileError(f"the model's metadata (org.onegraph.outputs) {problems[0]}",
                                     hint=_fix_metadata("outputs"))
            described = fields["outputs"]
        else:
            described = [{"name": n, "column": n, "role": "output"} for n in ort_outputs]
        # every check the graph computes is read, whether or not its metadata entry says so (see check_entries)
        checks = check_entries(described, ort_outputs)
        flagged = {c["name"] for c in checks}
        self.outputs = [o for o in described if o["name"] not in flagged] + checks
        self._output_names = [o["name"] for o in self.outputs]
        self._checks = [(i, o) for i, o in enumerate(self.outputs) if o.get("role") == "check"]
        self._scored = [(i, o) for i, o in enumerate(self.outputs) if o.get("role") != "check"]
        # a model's answers, and the inputs that can hold ±inf: see _raise_infinite
        self._answers = [(i, o) for i, o in self._scored if o.get("role") in _ANSWERS]
        self._answer_indices = [i for i, _ in self._answers]
        self._float_inputs = [s.name for s in self.inputs if s.kind == "float"] if self._answers else []
        self._run = self._session._sess.run  # the binding, without the wrapper's per-call validation
        self._run_options = ort.RunOptions()
        self._templates: dict[tuple, FrameTemplate] = {}
        # per scored output, what score() does to it: (result index, role, kind, tz)
        self._post = [(i, o.get("role"), o.get("kind"), o.get("tz")) for i, o in self._scored]
        self._rows = RowFeeds(self.inputs, self._rank2)  # single-row feeds, planned once
        #: rows scored as windows of their group (see :mod:`onegraph.runtime.windows`), or None
        self.sequence = meta.SequenceSpec.from_dict(fields["sequence"]) if "sequence" in fields else None
        #: the model's image / audio input (``org.onegraph.media``: input, dtype, layout...), or None
        self.media = fields.get("media")

    @property
    def input_names(self) -> list[str]:
        return [s.name for s in self.inputs]

    @property
    def tensor_inputs(self) -> list[tuple[str, list]]:
        """(name, shape) of the graph inputs no table column feeds as one value per row: images ``[N, H, W,
        C]``, feature matrices ``[N, k]``, inputs outside the input schema (a media model's); ``[]`` for a model
        of columns (``[N]`` or ``[N, 1]`` each)."""
        columns = set(self.input_names)
        return [(i.name, list(i.shape)) for i in self._session.get_inputs()
                if i.name not in columns or len(i.shape) > 2 or (len(i.shape) == 2 and i.shape[1] != 1)]

    # -- feeds ------------------------------------------------------------------------------------
    def feeds(self, data: Any) -> tuple[int, dict[str, np.ndarray]]:
        """Number of rows and the onnxruntime feeds for ``data`` (any table onegraph reads).

        Raises :class:`~onegraph.errors.MissingColumnError` / :class:`~onegraph.errors.ColumnTypeError`
        naming the column at fault.
        """
        return self._feeds(data)

    def _feeds(self, data: Any, as_bytes: bool = False) -> tuple[int, dict[str, np.ndarray]]:
        """:meth:`feeds`; with ``as_bytes``, long Arrow text columns as fixed-width bytes
        (:func:`~onegraph.contract.feeds.text_bytes`), for feeds that go to onnxruntime only."""
        if self.media is not None:
            return self._media_feeds(data)
        t = type(data)
        if t is dict:
            row = self._rows.record(data)
            if row is not None:
                return 1, row
        elif t is pd.DataFrame:
            few = self._rows.frame(data)
            if few is not None:
                return few
        n, names, get = column_reader(data)
        feeds = {}
        for spec in self.inputs:
            try:
                values = get(spec.name)
            except MissingColumnError:
                given = {str(c) for c in names}
                missing = [s.name for s in self.inputs if s.name not in given]
                raise MissingColumnError(missing or spec.name, [str(c) for c in names]) from None
            arr = text_bytes(spec, values) if as_bytes else None
            if arr is None:
                arr = to_feed(spec, values)
            if len(arr) != n:
                raise DataError(f"column {spec.name!r} has {len(arr)} values for {n} rows")
            feeds[spec.name] = arr
        return n, self._shaped(feeds)

    def _media_feeds(self, data: Any) -> tuple[int, dict[str, np.ndarray]]:
        """A media model's feed: the batch array itself, or ``{input: array}``.

        Raises :class:`~onegraph.errors.DataError` for anything else (a table has no images), or an array of
        another dtype or rank than the input's."""
        name, dtype, layout = self.media["input"], self.media["dtype"], self.media["layout"]
        arr = data.get(name) if isinstance(data, dict) else data
        takes = f"a {dtype} array {layout} {list(self._session.get_inputs()[0].shape)} (input {name!r})"
        if not isinstance(arr, np.ndarray):
            raise DataError(f"a media model takes {takes}, not a {type(data).__name__}",
                            hint=f"give the batch as a numpy array (or {{{name!r}: array}}), or score files with "
                                 "`onegraph score MODEL FOLDER`")
        if arr.dtype != np.dtype(dtype) or arr.ndim != len(layout):
            raise DataError(f"a media model takes {takes}; the array is {arr.dtype} of shape {list(arr.shape)}",
                            hint=f"convert it (e.g. .astype(np.{dtype})) or reshape it to {layout}")
        return len(arr), {name: arr}

    def _shaped(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        for name in self._rank2:
            feeds[name] = feeds[name].reshape(-1, 1)
        return feeds

    # -- running ----------------------------------------------------------------------------------
    def rows_per_batch(self, values_per_row: int) -> int:
        """Rows per onnxruntime call for inputs of ``values_per_row`` values a row (an image's pixels times its
        channels): at most :attr:`batch_size`, and few enough that the batch's input, counted in double, stays
        near :data:`BATCH_BYTES` (a media graph computes on values of its input's size; 300 images of 512 x 512
        in one call took 2.2 GB)."""
        return min(self.batch_size, _rows_within_budget(values_per_row))

    def run(self, data: Any, *, unsettled: bool = False) -> dict[str, np.ndarray]:
        """Outputs for ``data`` as arrays keyed by output name (rows refused by a check raise).

        ``unsettled``: rows flagged by a check marked ``unsettled`` (a value scikit-learn itself decides
        arbitrarily: KNNImputer's tied donors) do not raise; their flags are in the outputs (build's parity
        check leaves those rows out of the comparison)."""
        return dict(zip(self._output_names, self._checked(data, unsettled=unsettled)[0]))

    def _results(self, data: Any) -> list[np.ndarray]:
        return self._checked(data)[0]

    def _checked(self, data: Any, unsettled: bool = False) -> tuple[list[np.ndarray], bool]:
        """The outputs for ``data`` (rows refused by a check or unanswered for ±inf raise), and whether every
        answer is finite (then no label needs marking missing)."""
        n, feeds = self._feeds(data, as_bytes=self.sequence is None)
        if n == 0:
            return self._empty_outputs(), True
        # a media input's size is known per call (images of any size): its rows bound the batch too
        batch = self.batch_size if self.media is None else self.rows_per_batch(next(iter(feeds.values())).size // n)
        if self.sequence is not None:
            results = self._sequence_results(data, feeds)
        elif n <= batch:
            results = self._call(feeds)
        else:
            starts = range(0, n, batch)
            # onnxruntime releases the GIL while it runs: batches in parallel use the cores its own
            # intra-op threads leave idle (string conversion, lookups); outputs keep the row order
            with ThreadPoolExecutor(max_workers=min(len(starts), os.cpu_count() or 1, 4)) as pool:
                parts = list(pool.map(lambda i: self._call({k: v[i:i + batch] for k, v in feeds.items()},
                                                           first_row=i), starts))
            results = [np.concatenate([p[j] for p in parts]) for j in range(len(self._output_names))]
        # one pass over the answers (single-row scoring feels every loop): each has one row per input row (a
        # graph flattening [N, k] to [N * k] would otherwise be laid out as a frame of N rows from its first N
        # values; a sequence model's rows come back restored), and whether each is finite
        finite = True
        for i in self._answer_indices:
            value = results[i]
            if self.sequence is None and (value.ndim == 0 or len(value) != n):
                rows = "a scalar" if value.ndim == 0 else f"{len(value)} rows"
                raise RuntimeFailure(f"the model's output {self._output_names[i]!r} has {rows} for {n} input rows, "
                                     "so its values cannot be paired with the rows",
                                     hint="the graph is not row-wise: rebuild it, or run it with onnxruntime")
            if finite and value.dtype.kind == "f" and not _all_finite(value):
                finite = False
        if self._checks:  # a row a check refuses is reported before an answer it left non-finite
            self._raise_checks(results, data, unsettled)
        if not finite:
            self._raise_infinite(results, feeds)
        return results, finite

    def run_feeds(self, feeds: dict[str, np.ndarray], names: list[str] | None = None) -> list[np.ndarray]:
        """Run onnxruntime on prepared ``feeds`` (from :meth:`feeds`) for the outputs ``names`` (default:
        the model's), without the checks :meth:`run` applies. Raises :class:`~onegraph.errors.RuntimeFailure`."""
        try:
            return self._run(names or self._output_names, feeds, self._run_options)
        except Exception as exc:  # onnxruntime's own exception types
            raise _failure(exc, feeds) from None

    def _sequence_results(self, data: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        """Rows sorted by (group, order), windows indexed, one call (a window spans the batch)."""
        from onegraph.runtime.windows import restore_order, sequence_feeds

        _, names, get = column_reader(data)
        perm, sorted_feeds = sequence_feeds(self.sequence, get, list(names), feeds)
        return restore_order(self._call(sorted_feeds), perm)

    def _call(self, feeds: dict[str, np.ndarray], first_row: int = 0) -> list[np.ndarray]:
        try:
            return self._run(self._output_names, feeds, self._run_options)
        except Exception as exc:  # onnxruntime's own exception types
            raise _failure(exc, feeds, first_row) from None

    def _raise_checks(self, results: list[np.ndarray], data: Any, unsettled: bool = False) -> None:
        for i, out in self._checks:
            if unsettled and out.get("unsettled"):
                continue
            flags = np.asarray(results[i]).reshape(-1)
            if flags.any():
                rows = np.flatnonzero(flags).tolist()
                column = out["column"]
                values: list = []
                try:
                    _, _, get = column_reader(data)
                    col = np.asarray(get(column), dtype=object)
                    values = list(dict.fromkeys(col[rows[:50]].tolist()))
                except Exception:  # the refused column may be internal: name rows only
                    values = []
                if out.get("check") == "out_of_range":
                    raise OutOfRangeError(column, values, rows, out.get("covers", ""), out.get("hint"))
                raise UnknownCategoryError(column, values, rows, out.get("hint"))

    def _raise_infinite(self, results: list[np.ndarray], feeds: dict[str, np.ndarray]) -> None:
        """A row whose answer (probabilities, prediction) is not finite while one of its numeric inputs is ±inf
        raises :class:`~onegraph.errors.ColumnTypeError` naming that column and row: the model cannot answer
        for it (scikit-learn's models refuse infinite values; a linear model gives NaN probabilities). Rows
        whose answer is NaN because of missing values keep their missing label; an infinite value the model
        answers for (a tree, HistGradientBoosting, a clipping step before the model) is scored."""
        unanswered = None
        for i, _ in self._answers:
            value = results[i]
            if value.dtype.kind != "f" or _all_finite(value):
                continue
            bad = ~np.isfinite(value)
            bad = bad.reshape(len(bad), -1).any(axis=1)
            unanswered = bad if unanswered is None else unanswered | bad
        if unanswered is None or not unanswered.any():
            return
        rows = np.flatnonzero(unanswered)
        for name in self._float_inputs:
            values = feeds[name].reshape(-1)[rows]
            infinite = np.isinf(values)
            if infinite.any():
                k = int(np.flatnonzero(infinite)[0])
                raise ColumnTypeError(name, f"value {values[k]} at row {int(rows[k])} is infinite and the model "
                                      "gives no answer for it (scikit-learn refuses infinite values)",
                                      hint="replace infinite values with NaN (a missing value) or clip them")
        self._raise_out_of_domain(results, feeds)

    def _raise_out_of_domain(self, results: list[np.ndarray], feeds: dict[str, np.ndarray]) -> None:
        """An answer of ±inf from finite inputs, or of NaN for a row none of whose inputs is missing, raises
        :class:`~onegraph.errors.DataError` naming the row and its numbers: a step computed beyond its domain
        (``log`` of 0 or of a negative number, Box-Cox of 0, a square root of a negative number, an ``exp``
        overflow, an unknown category encoded as NaN), which scikit-learn's next step refuses ("Input X contains
        infinity / NaN"); the answer would otherwise read as a number, or as the missing answer that a row with
        a missing value gets from a model that cannot score it (which stays: scikit-learn refuses those rows
        too, but the value was missing before the pipeline, so the row is answered as missing)."""
        for i, _ in self._answers:
            value = results[i]
            if value.dtype.kind != "f":
                continue
            infinite = np.isinf(value).reshape(len(value), -1).any(axis=1)
            if infinite.any():
                self._raise_answer(i, int(np.flatnonzero(infinite)[0]), "infinite", feeds)
        if self.sequence is not None:  # a window's NaN may come from an earlier row's missing value
            return
        for i, _ in self._answers:
            value = results[i]
            if value.dtype.kind != "f":
                continue
            nan = np.isnan(value).reshape(len(value), -1).any(axis=1)
            if nan.any() and (unexplained := nan & ~_missing_rows(feeds, len(nan))).any():
                self._raise_answer(i, int(np.flatnonzero(unexplained)[0]), "NaN though no input of the row is "
                                   "missing", feeds)

    def _raise_answer(self, i: int, row: int, what: str, feeds: dict[str, np.ndarray]) -> None:
        numbers = [f"{n}={feeds[n].reshape(-1)[row]:g}" for n in self._float_inputs[:6]]
        raise DataError(f"row {row}: the model's {self._output_names[i]!r} is {what} "
                        f"({', '.join(numbers) or 'no numeric input'}): a step of the pipeline computed beyond its "
                        "domain (a log or Box-Cox of 0, a log or square root of a negative number, an overflowing "
                        "exp, an unknown category encoded as NaN), which scikit-learn's predict refuses",
                        hint="keep such rows within the values the pipeline was fitted on")

    def _empty_outputs(self) -> list[np.ndarray]:
        out = {}
        for o in self._session.get_outputs():
            dtype = {"tensor(string)": object, "tensor(int64)": np.int64, "tensor(bool)": bool,
                     "tensor(float)": np.float32}.get(o.type, np.float64)
            width = o.shape[1] if len(o.shape) == 2 and isinstance(o.shape[1], int) else None
            out[o.name] = np.empty((0, width) if width else (0,), dtype=dtype)
        return [out[k] for k in self._output_names]

    def score(self, data: Any) -> pd.DataFrame:
        """Outputs for ``data`` as a DataFrame (index: the input's when it is a pandas DataFrame).

        Columns: ``label``; ``probabilities_<class>`` per class; ``prediction``; for a preprocessing-only
        model, the transformed columns (missing text as None, datetimes back as ``datetime64[ns]``).
        Text columns have dtype ``object``.
        """
        results, finite = self._checked(data)
        if self.media is not None:  # features [N, C, H, W] / [N, F, T]: one column per value, as score_folder
            results = [r.reshape(len(r), -1) if r.ndim > 2 else r for r in results]
        return self.frame(results, finite, _row_index(data))

    def frame(self, results: list[np.ndarray], finite: bool = False, index: Any = None) -> pd.DataFrame:
        """The output DataFrame of :meth:`score` from the model's outputs ``results`` (in output order, first axis
        the rows; more than two axes are not table columns: flatten them first). ``finite``: every answer is
        known to be finite, so no label needs marking missing (missing labels are None / ``pd.NA``, never the
        internal marker)."""
        # labels can be missing only where probabilities are NaN: one vectorized test spares scanning text labels
        unscored = not finite and any(role in ("probabilities", "top_probabilities") and np.isnan(results[i]).any()
                                      for i, role, _, _ in self._post)
        arrays = []
        widths = []  # the template's key: each array's width, 0 for 1-D
        for i, role, kind, tz in self._post:
            value = results[i]
            if role != "probabilities" and value.ndim == 2 and value.shape[1] == 1:
                value = value[:, 0]
            if role == "feature":
                value = _column(value, kind, tz)
            elif unscored and (role == "label" or role == "top_labels"):
                value = _missing_labels(value)
            arrays.append(value)
            widths.append(value.shape[1] if value.ndim == 2 else 0)
        key = tuple(widths)
        template = self._templates.get(key)
        if template is None:
            template = self._templates[key] = self._template(key)
        return template.frame(arrays, index, len(arrays[0]) if arrays else 0)

    def _template(self, widths: tuple[int, ...]) -> FrameTemplate:
        layout = []
        for (_, out), width in zip(self._scored, widths):
            name = out.get("column", out["name"])
            if width:
                labels = out.get("classes") or range(width)
                layout.append(([f"{name}_{label}" for label in labels], True))
            else:
                layout.append(([name], False))
        return FrameTemplate(layout)


def _missing_rows(feeds: dict[str, np.ndarray], n: int) -> np.ndarray:
    """Which of ``n`` rows hold a missing value in any feed (NaN; int64 / datetime's ``NA_INT64``; text's
    ``MISSING_STRING``); every row when a feed is not one row per input row (then no row can be told apart)."""
    missing = np.zeros(n, dtype=bool)
    for feed in feeds.values():
        if len(feed) != n:
            return np.ones(n, dtype=bool)
        rows = feed.reshape(n, -1)
        if rows.dtype.kind == "f":
            missing |= np.isnan(rows).any(axis=1)
        elif rows.dtype == np.int64:
            missing |= (rows == NA_INT64).any(axis=1)
        elif rows.dtype == object:
            missing |= (rows == MISSING_STRING).any(axis=1)
        elif rows.dtype.kind == "S":  # text as bytes (contract.feeds.text_bytes)
            missing |= (rows == _MISSING_BYTES).any(axis=1)
    return missing


_MISSING_BYTES = MISSING_STRING.encode("utf-8")


def _rows_within_budget(values_per_row: int) -> int:
    """Rows whose ``values_per_row`` values, in double, take about :data:`BATCH_BYTES` (at least one)."""
    return max(1, BATCH_BYTES // (8 * max(1, int(values_per_row))))


def _all_finite(value: np.ndarray) -> bool:
    if value.size <= 64:  # single-row scoring: a sum of a list is faster than numpy's reductions on a few values;
        # the sum of finite values is finite unless it overflows, which the exact test then settles
        return math.isfinite(sum(value.ravel().tolist())) or bool(np.isfinite(value).all())
    return bool(np.isfinite(value).all())


#: output roles that are a model's answer (infinite inputs are checked against them)
_ANSWERS = frozenset({"probabilities", "top_probabilities", "prediction", "score"})


def _fix_metadata(key: str) -> str:
    """The hint for a metadata entry ``key`` (``inputs`` / ``outputs``) that does not fit the graph."""
    return ("check it with `onegraph check`; rebuild it, fix the entries with `onegraph meta set`, or remove the "
            f"key (`onegraph meta set MODEL --remove {key} -o OUT`: then they are read from the graph)")


def _column(value: np.ndarray, kind: str | None, tz: str | None = None) -> Any:
    """An output array as a DataFrame column, missing values written the pandas way."""
    if value.dtype == object:
        missing = value == MISSING_STRING
        if missing.any():
            value = value.copy()
            value[missing] = None
        return value
    if kind == "datetime":
        stamps = pd.to_datetime(value, unit="ns")
        return stamps.tz_localize("UTC").tz_convert(tz) if tz else stamps
    if kind == "timedelta":
        return pd.to_timedelta(value, unit="ns")
    if kind == "int" and value.dtype == np.int64 and (value == NA_INT64).any():
        arr = pd.array(value, dtype="Int64")
        arr[value == NA_INT64] = pd.NA
        return arr
    return value


def _missing_labels(value: np.ndarray) -> Any:
    """Labels of rows a model could not score (see ``unscored_labels_missing``) written the pandas way:
    None for text, ``pd.NA`` for integers (1-D; NaN in a float column for 2-D top labels)."""
    if value.dtype == object or value.ndim == 1:
        return _column(value, "int" if value.dtype == np.int64 else None)
    if value.dtype == np.int64 and (value == NA_INT64).any():
        return np.where(value == NA_INT64, np.nan, value)
    return value


def _spec_from_ort(arg: Any) -> ColumnSpec:
    if arg.type not in _ORT_KINDS or len(arg.shape) not in (1, 2):
        raise ModelFileError(f"input {arg.name!r} ({arg.type}, shape {arg.shape}) is not a table column",
                             hint="score models whose inputs are one column each, or use onnxruntime directly")
    kind, onnx_type = _ORT_KINDS[arg.type]
    return ColumnSpec(arg.name, kind, onnx_type, source_dtype=arg.type)


def _failure(exc: Exception, feeds: dict[str, np.ndarray], first_row: int = 0) -> Exception:
    """The error to raise for onnxruntime's ``exc`` on ``feeds`` (rows from ``first_row`` on): text onnxruntime
    cannot encode as UTF-8 (a lone surrogate such as ``"\\ud800"``, which Python strings may hold) as
    :class:`ColumnTypeError` naming the column and row (looked for only after the failure, so scoring pays
    nothing for it); else :class:`RuntimeFailure`."""
    if isinstance(exc, UnicodeError):
        for name, values in feeds.items():
            if values.dtype != object:
                continue
            for row, v in enumerate(values.reshape(-1)):
                try:
                    v.encode("utf-8")
                except UnicodeError:
                    return ColumnTypeError(name, f"value at row {first_row + row} ({v!r}) is not valid Unicode text "
                                           "(a lone surrogate) and cannot be encoded as UTF-8",
                                           hint="decode the source with errors='replace', or fix the text")
                except AttributeError:
                    continue
    return RuntimeFailure(f"onnxruntime failed: {str(exc).strip()[:500]}")


def _row_index(data: Any) -> pd.Index | None:
    """The index of the output frame: a DataFrame's own; for one row given as a Series (``df.loc[5]``), its
    name as the row's label (``[5]``), as ``df.loc[[5]]`` would give; else None (a range)."""
    if isinstance(data, pd.DataFrame):
        return data.index
    if isinstance(data, pd.Series) and data.name is not None:
        return pd.Index([data.name])
    return None
