"""The one exception hierarchy of onegraph.

Every error a user can cause (bad data, a bad model file, an object onegraph cannot export) is an
:class:`OnegraphError`. Each names the thing at fault (a column, a node, a tensor, a file) and says
what to do about it, so the command line can print it as one line and exit non-zero.
"""

from __future__ import annotations


class OnegraphError(Exception):
    """Base class of every error onegraph raises on purpose.

    Parameters
    ----------
    message:
        What went wrong, naming the column / node / tensor / file at fault.
    hint:
        What the user can do about it; appended to the message.
    """

    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        self.message = message
        self.hint = hint
        super().__init__(f"{message}. {hint}" if hint else message)


class ConfigError(OnegraphError, ValueError):
    """An argument or option has a value onegraph cannot work with."""


class UsageError(ConfigError):
    """The command line itself is wrong (an unknown option or command, a missing argument): exit code 2."""

    exit_code = 2


class DataError(OnegraphError):
    """The data given (a DataFrame, a file of rows, a dict of columns) cannot be used."""


class MissingColumnError(DataError):
    """A column the model needs is absent from the data."""

    def __init__(self, column: str | list[str], available: list[str] | None = None) -> None:
        columns = [column] if isinstance(column, str) else list(column)
        shown = ""
        if available is not None and not available:
            shown = " (the data has no columns)"
        elif available is not None:
            shown = f" (columns given: {', '.join(map(repr, available[:20]))}"
            shown += ", ...)" if len(available) > 20 else ")"
        if len(columns) == 1:
            what = f"column {columns[0]!r} is"
        else:
            listed = ", ".join(map(repr, columns[:10])) + (f" and {len(columns) - 10} more" if len(columns) > 10 else "")
            what = f"columns {listed} are"
        super().__init__(
            f"{what} required by the model but missing from the data{shown}",
            hint="add the column (it may hold missing values) or rebuild the model without it",
        )
        self.column = columns[0]
        self.columns = columns


class ColumnTypeError(DataError):
    """A column holds values of a type the model cannot take for it."""

    def __init__(self, column: str, message: str, *, hint: str | None = None) -> None:
        super().__init__(f"column {column!r}: {message}", hint=hint)
        self.column = column
        #: what is wrong, without the column's name
        self.reason = message


class UnknownCategoryError(DataError):
    """A categorical column holds a value never seen in fit, and its encoder was set to refuse it."""

    def __init__(self, column: str, values: list, rows: list[int], hint: str | None = None) -> None:
        shown = ", ".join(repr(v) for v in values[:5]) + (", ..." if len(values) > 5 else "")
        super().__init__(
            f"column {column!r}: {len(rows)} row(s) hold categories not seen in fit ({shown}; first row {rows[0]})",
            hint=hint or "fit on data that includes them, or set the encoder to take unknown categories",
        )
        self.column = column
        self.values = values
        self.rows = rows


class OutOfRangeError(DataError):
    """A column holds values outside the range a step of the model was built for (e.g. dates beyond the
    years its time-zone table covers)."""

    def __init__(self, column: str, values: list, rows: list[int], covers: str = "", hint: str | None = None) -> None:
        shown = ", ".join(repr(v) for v in values[:5]) + (", ..." if len(values) > 5 else "")
        within = f"; the model covers {covers}" if covers else ""
        super().__init__(
            f"column {column!r}: {len(rows)} row(s) hold values outside the range the model was built for"
            f"{within} ({shown}{'; ' if shown else ''}first row {rows[0]})",
            hint=hint or "rebuild the model on data covering these values",
        )
        self.column = column
        self.values = values
        self.rows = rows


class MetadataError(OnegraphError):
    """A metadata value does not follow the schema (:mod:`onegraph.contract.metadata`); ``key`` names it."""

    def __init__(self, key: str, message: str, *, hint: str | None = None) -> None:
        super().__init__(f"metadata key {key!r}: {message}",
                         hint=hint or "fix the value, or rebuild the model with onegraph")
        self.key = key


class ExportError(OnegraphError):
    """A fitted object cannot be turned into ONNX (unsupported estimator, unfitted object, ...)."""


class ParityError(OnegraphError):
    """The exported graph does not compute what the source pipeline computes."""

    def __init__(self, message: str, report=None, hint: str | None = None) -> None:
        super().__init__(
            message,
            hint=hint or "the model was not written; report this with the parity table, or pass check_parity=False "
                         "to inspect it",
        )
        self.report = report


class ModelFileError(OnegraphError):
    """A model file cannot be read, parsed or opened."""


class RuntimeFailure(OnegraphError):
    """onnxruntime failed while running a model."""


class PassError(OnegraphError):
    """A graph transformation (grouping, inlining, fusion, kernel mapping) cannot be applied as asked."""


class GroupingError(PassError):
    """A set of nodes cannot become one function call (not convex, overlapping another group, unknown node)."""


class ConversionError(OnegraphError):
    """A model conversion (opset, float16) was refused or changed the model's values.

    ``report`` holds the per-operator report and the verification table.
    """

    def __init__(self, message: str, report=None, *, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.report = report


class FederatedError(OnegraphError):
    """Parameters or a delta cannot be exchanged: another architecture or base model, a shape or dtype that
    differs, NaN or infinity, a truncated file, clients that disagree on a parameter exchanged exactly.

    ``parameter`` and ``file`` name what is at fault (None when the problem is not about one of them).
    """

    def __init__(self, message: str, *, parameter: str | None = None, file: str | None = None,
                 hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.parameter = parameter
        self.file = file


def whole_number(name: str, value: object, minimum: int | None = 1, *, hint: str | None = None) -> int:
    """``value`` as an ``int`` when it is a whole number (a Python or numpy integer, not a bool) of at least
    ``minimum`` (None: any); else :class:`ConfigError` naming the argument ``name`` and the value (``1.5``,
    ``"a"``, ``None`` and ``True`` are not counts, even where ``int()`` would take them)."""
    import numbers

    if (isinstance(value, bool) or not isinstance(value, numbers.Integral)
            or (minimum is not None and int(value) < minimum)):
        least = "" if minimum is None else f" >= {minimum}"
        raise ConfigError(f"{name}={value!r} is not a whole number{least}",
                          hint=hint or f"give {name} as an integer" + (f" of at least {minimum}" if least else ""))
    return int(value)


__all__ = [
    "whole_number",
    "OnegraphError",
    "ConfigError",
    "UsageError",
    "DataError",
    "MissingColumnError",
    "ColumnTypeError",
    "UnknownCategoryError",
    "OutOfRangeError",
    "MetadataError",
    "ExportError",
    "ParityError",
    "ModelFileError",
    "RuntimeFailure",
    "PassError",
    "GroupingError",
    "ConversionError",
    "FederatedError",
]
