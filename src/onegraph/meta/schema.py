"""The versioned metadata schema onegraph writes into ``ModelProto.metadata_props``.

Keys live under the reverse-DNS prefix :data:`PREFIX`; each has a type and a validator, applied when a
value is written and when it is read. A malformed value is reported (:class:`MetadataError` naming the
key), never silently dropped; keys this schema does not know are kept as they are.

=================================  =========  ===========================================================
key (after ``org.onegraph.``)      type       meaning
=================================  =========  ===========================================================
``meta_version``                   int        version of this schema (``SCHEMA_VERSION``)
``created_at``                     str        RFC 3339 time the model was built, UTC
``producer``                       str        ``onegraph <version>``
``source_library``                 str        library of the source objects, e.g. ``scikit-learn 1.9.1``
``training_algorithm``             str        class of the final model, e.g. ``sklearn.linear_model.LogisticRegression``
``inputs``                         list       the input schema: one :class:`~onegraph.frame.schema.ColumnSpec` dict per column
``outputs``                        list       one dict per output: ``name``, ``role`` (``label``, ``probabilities``,
                                              ``prediction``, ``feature``, ``check``, ``top_labels``,
                                              ``top_probabilities``), ``classes`` for probabilities, ``model``
                                              (the composed model it comes from, or ``ensemble``)
``models``                         list       composed models: one dict per model (``name``, ``source``,
                                              ``consumes``)
``ensemble``                       object     how the models combine: ``method``, ``weights``, ``final_estimator``
``sequence``                       object     rows scored as windows: a :class:`SequenceSpec` dict
=================================  =========  ===========================================================
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
from collections.abc import Callable, Mapping
from typing import Any

from onegraph.errors import OnegraphError

PREFIX = "org.onegraph."
SCHEMA_VERSION = 1


class MetadataError(OnegraphError):
    """A metadata value does not follow the schema."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"metadata key {key!r}: {message}", hint="fix the value, or rebuild the model with onegraph")
        self.key = key


def _rfc3339(value: Any) -> str:
    text = str(value)
    try:
        parsed = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise ValueError(f"not an RFC 3339 date-time ({exc})") from None
    if parsed.tzinfo is None:
        raise ValueError("an RFC 3339 date-time needs a UTC offset")
    return text


def _json_list(value: Any) -> list:
    if isinstance(value, str):
        value = json.loads(value)
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise ValueError("expected a JSON list of objects")
    return value


def _json_object(value: Any) -> dict:
    if isinstance(value, str):
        value = json.loads(value)
    if not isinstance(value, dict):
        raise ValueError("expected a JSON object")
    return value


@dataclasses.dataclass(frozen=True)
class SequenceSpec:
    """How rows become windows for a sequence model (metadata key ``org.onegraph.sequence``).

    Rows of one ``group`` (a card, a sensor) are sorted by ``order`` (a time); each row is scored with the
    window of its group's last ``window`` rows up to and including it, after per-row preprocessing.
    ``padding="pre"``: a window with fewer rows (a group's first rows) is filled with ``pad_value`` rows
    (in the model's feature space) before its first row, as Keras' ``pad_sequences(padding="pre")``. The
    graph takes the windows as the int64 input ``input`` ``[N, window]`` of row positions in the sorted
    rows, -1 for padding (:func:`onegraph.runtime.windows.window_index` computes it).
    """

    group: str
    order: str
    window: int
    padding: str = "pre"
    pad_value: float = 0.0
    input: str = "onegraph.window"

    def __post_init__(self) -> None:
        if not isinstance(self.window, int) or isinstance(self.window, bool) or self.window < 1:
            raise ValueError(f"window must be a positive integer, got {self.window!r}")
        if self.padding != "pre":
            raise ValueError(f"padding {self.padding!r} is not supported (use 'pre')")
        for key in ("group", "order", "input"):
            if not isinstance(getattr(self, key), str) or not getattr(self, key):
                raise ValueError(f"{key} must be a column name")

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SequenceSpec:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown field(s) {sorted(unknown)}")
        return cls(**{k: (float(v) if k == "pad_value" else v) for k, v in d.items()})


def _sequence(value: Any) -> dict:
    if isinstance(value, SequenceSpec):
        return value.to_dict()
    try:
        return SequenceSpec.from_dict(_json_object(value)).to_dict()
    except TypeError as exc:
        raise ValueError(str(exc)) from None


def _int(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError("expected an integer")
    return int(value)


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {type(value).__name__}")
    return value


#: key (without prefix) -> validator returning the typed value or raising ValueError
FIELDS: dict[str, Callable[[Any], Any]] = {
    "meta_version": _int,
    "created_at": _rfc3339,
    "producer": _str,
    "source_library": _str,
    "training_algorithm": _str,
    "inputs": _json_list,
    "outputs": _json_list,
    "models": _json_list,
    "ensemble": _json_object,
    "sequence": _sequence,
}
#: fields stored as JSON text
_JSON_FIELDS = ("inputs", "outputs", "meta_version", "models", "ensemble", "sequence")


def validate(key: str, value: Any) -> Any:
    """The typed value of field ``key`` (without prefix), or :class:`MetadataError`."""
    if key not in FIELDS:
        return value
    try:
        return FIELDS[key](value)
    except (ValueError, TypeError) as exc:
        raise MetadataError(PREFIX + key, str(exc)) from None


def encode(fields: Mapping[str, Any]) -> dict[str, str]:
    """``metadata_props`` entries (prefixed keys, string values) for typed ``fields``, validated."""
    out = {}
    for key, value in fields.items():
        typed = validate(key, value)
        out[PREFIX + key] = typed if isinstance(typed, str) else json.dumps(typed, ensure_ascii=False)
    return out


def decode(props: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """Split ``metadata_props`` into onegraph's typed fields and every other key (kept unchanged).

    Raises :class:`MetadataError` naming the key of a malformed value.
    """
    ours: dict[str, Any] = {}
    others: dict[str, str] = {}
    for key, text in props.items():
        if not key.startswith(PREFIX):
            others[key] = text
            continue
        name = key[len(PREFIX):]
        value: Any = text
        if name in _JSON_FIELDS:
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                raise MetadataError(key, f"not valid JSON ({exc})") from None
        ours[name] = validate(name, value)
    return ours, others


def now_rfc3339() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")
