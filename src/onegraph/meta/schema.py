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
                                              ``prediction``, ``feature``, ``check``), ``classes`` for probabilities
=================================  =========  ===========================================================
"""

from __future__ import annotations

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
}


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
        if name in ("inputs", "outputs", "meta_version"):
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                raise MetadataError(key, f"not valid JSON ({exc})") from None
        ours[name] = validate(name, value)
    return ours, others


def now_rfc3339() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")
