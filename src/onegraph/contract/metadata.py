"""The versioned metadata schema onegraph writes into ``ModelProto.metadata_props``.

Keys live under the reverse-DNS prefix :data:`PREFIX` (the ONNX IR asks for one); each has a type, checked
when a value is written (:func:`encode`) and when it is read (:func:`decode`, :func:`read`). A malformed
value is reported (:class:`MetadataError` naming the key), never silently dropped; keys this schema does not
know are kept as they are. Text fields are stored as the text itself, the others as JSON. ``author`` and
``license`` are also written to the two keys the ONNX specification names, ``model_author`` and
``model_license``.

The schema is the pydantic model :class:`ModelMetadata`; ``metadata.schema.json`` next to this file is the
JSON Schema generated from it (``python -m onegraph.contract.jsonschema --write``).

======================  ======  ============================================================================
field                   stored  meaning
======================  ======  ============================================================================
``meta_version``        JSON    version of this schema (:data:`SCHEMA_VERSION`)
``created_at``          text    RFC 3339 date-time the model was built, with a UTC offset
``producer``            text    ``<name> <version>`` of the tool that wrote the model (``onegraph 0.1.0``)
``source_library``      text    ``<name> <version>`` of the library of the source objects
``training_algorithm``  text    qualified class of the model (``sklearn.linear_model.LogisticRegression``)
``hyperparameters``     JSON    the model's parameters (scikit-learn ``get_params(deep=False)``), JSON values
``training_data``       JSON    ``name``, ``rows``, ``columns``, ``content_hash`` (``sha256:<hex>``)
``inputs``              JSON    the input schema: one column per graph input (the DataFrame contract)
``outputs``             JSON    one entry per output: ``name``, ``role``, ``classes`` (labels), ``units``...
``author``              text    who made the model (also ``model_author``)
``license``             text    its licence, an SPDX identifier or text (also ``model_license``)
``intended_use``        text    what the model is for, and what it is not for
``lineage``             JSON    ``parent``: ``sha256:<hex>`` of the model file this one was derived from
``transfer_learning``   JSON    ``base_model``, ``frozen`` and ``trainable`` parameters (initializer names)
``precision``           JSON    ``dtypes`` in use; mixed-precision ``regions`` (dtype + node names)
``models``              JSON    composed models: one entry per model (``name``, ``source``, ``consumes``)
``ensemble``            JSON    how composed models combine: ``method``, ``weights``, ``final_estimator``
``sequence``            JSON    rows scored as windows of their group: a :class:`SequenceSpec`
``federated``           JSON    structural ``fingerprint`` and the federated ``rounds`` that made the model
                                (each: ``round``, ``base_model``, ``method``, ``clients``, ``samples``)
``media``               JSON    an image / audio tensor input instead of DataFrame columns (``onegraph.media``):
                                ``kind``, ``input``, ``layout``, ``dtype``, ``channels``, ``sample_rate``, ``steps``
``row_width``           JSON    values per row of the graph's widest value (a one-hot block of 6,300 categories:
                                6,300): scoring sizes its batches so that this value stays near 64 MiB
======================  ======  ============================================================================
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import difflib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    StringConstraints,
    TypeAdapter,
    ValidationError,
    WithJsonSchema,
    model_validator,
)

from onegraph.contract.columns import ColumnSpec
from onegraph.contract.outputs import ROLES, check_entry
from onegraph.errors import MetadataError

__all__ = ["PREFIX", "SCHEMA_VERSION", "STANDARD_KEYS", "OutputSchema", "TrainingData", "Lineage",
           "TransferLearning", "PrecisionRegion", "Precision", "ComposedModel", "EnsembleSchema",
           "SequenceSchema", "SequenceSpec", "FederatedRound", "Federated", "ModelMetadata", "FIELDS",
           "MAX_DEPTH", "validate", "encode", "decode", "Metadata", "read", "against_graph", "input_problems",
           "output_problems", "output_widths", "internal_inputs", "now_rfc3339"]

PREFIX = "org.onegraph."
SCHEMA_VERSION = 2
#: field -> the metadata key the ONNX specification names for it (written alongside ours)
STANDARD_KEYS = {"author": "model_author", "license": "model_license"}


# -- value types ----------------------------------------------------------------------------------
_RFC3339_PATTERN = r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$"
_RFC3339 = re.compile(_RFC3339_PATTERN)


def _rfc3339(text: str) -> str:
    if not _RFC3339.fullmatch(text):
        raise ValueError("not an RFC 3339 date-time with a UTC offset (e.g. 2024-05-01T12:00:00Z)")
    try:
        _dt.datetime.fromisoformat(text.upper().replace("Z", "+00:00"))
    except ValueError as exc:
        raise ValueError(f"not a valid date-time ({exc})") from None
    return text


DateTime = Annotated[str, AfterValidator(_rfc3339),
                     WithJsonSchema({"type": "string", "format": "date-time", "pattern": _RFC3339_PATTERN})]
NameVersion = Annotated[str, StringConstraints(pattern=r"^\S+ \S+$")]
Text = Annotated[str, StringConstraints(min_length=1)]
Sha256 = Annotated[str, StringConstraints(pattern=r"^sha256:[0-9a-f]{64}$")]
#: ONNX tensor element types, spelled as ``TensorProto.DataType`` names in lower case
DType = Literal["float", "uint8", "int8", "uint16", "int16", "int32", "int64", "string", "bool", "float16", "double",
                "uint32", "uint64", "complex64", "complex128", "bfloat16", "float8e4m3fn", "float8e4m3fnuz",
                "float8e5m2", "float8e5m2fnuz", "uint4", "int4", "float4e2m1", "float8e8m0", "uint2", "int2",
                "float6e2m3", "float6e3m2"]


class _Entry(BaseModel):
    # strict: "3" is not a row count; extra keys are kept (a newer writer may add some)
    model_config = ConfigDict(extra="allow", strict=True, defer_build=True)


class OutputSchema(_Entry):
    """What one graph output means."""

    name: str = Field(description="graph output name")
    column: str | None = Field(None, description="column the output becomes in score()'s DataFrame")
    role: Literal[ROLES]
    model: str | None = Field(None, description="composed model the output comes from ('ensemble' for theirs)")
    classes: list[str | int | float | bool] | None = Field(None, description="labels, in probability order")
    kind: str | None = Field(None, description="for a feature: the column kind")
    check: str | None = Field(None, description="for a check: what it flags")
    units: str | None = Field(None, description="units of the values (e.g. 'degC', 'USD', 'probability')")
    description: str | None = None


class TrainingData(_Entry):
    """The data the model was fitted on."""

    name: str | None = Field(None, description="data set name or file")
    rows: Annotated[int, Field(ge=0)] | None = None
    columns: list[str] | None = None
    content_hash: Sha256 | None = Field(None, description="onegraph.meta.table_hash of the table")


class Lineage(_Entry):
    """Where the model comes from."""

    parent: Sha256 = Field(description="sha256 of the parent model file (onegraph.meta.model_hash)")
    parent_name: str | None = None
    relation: str | None = Field(None, description="e.g. 'fine-tuned', 'quantized', 'pruned'")


class TransferLearning(_Entry):
    """A model trained on top of a base model; a parameter is frozen or trainable, never both."""

    base_model: Text = Field(description="name or sha256 of the base model")
    frozen: list[str] = Field(default_factory=list, description="initializers kept from the base model")
    trainable: list[str] = Field(default_factory=list, description="initializers trained further")

    @model_validator(mode="after")
    def _disjoint(self) -> TransferLearning:
        both = sorted(set(self.frozen) & set(self.trainable))
        if both:
            raise ValueError(f"parameters both frozen and trainable: {_listed(both)}")
        return self


class PrecisionRegion(_Entry):
    """Nodes computed in a precision other than the model's main one."""

    dtype: DType
    nodes: Annotated[list[str], Field(min_length=1)]
    name: str | None = None


class Precision(_Entry):
    """Numeric precision of the model."""

    dtypes: list[DType] = Field(description="element types of the model's tensors")
    regions: list[PrecisionRegion] = Field(default_factory=list, description="mixed-precision regions")


class ComposedModel(_Entry):
    """One model of a composed artifact."""

    name: str
    source: str = Field(description="what the model was made from (qualified class, or the file's producer)")
    consumes: str | None = Field(None, description="the feature matrix it takes (dtype, width)")


class EnsembleSchema(_Entry):
    """How the composed models' outputs combine."""

    method: Literal["mean", "weighted", "vote", "stacking"]
    weights: list[float] | None = None
    final_estimator: str | None = None


class SequenceSchema(_Entry):
    """Rows scored as windows of their group (see :class:`SequenceSpec`)."""

    group: str = Field(min_length=1)
    order: str = Field(min_length=1)
    window: Annotated[int, Field(ge=1)]
    padding: Literal["pre"] = "pre"
    pad_value: float = 0.0
    input: str = Field("onegraph.window", min_length=1)


@dataclasses.dataclass(frozen=True)
class SequenceSpec:
    """How rows become windows for a sequence model (metadata key ``org.onegraph.sequence``).

    Rows of one ``group`` (a card, a sensor) are sorted by ``order`` (a time); each row is scored with the
    window of its group's last ``window`` rows up to and including it, after per-row preprocessing.
    ``padding="pre"``: a window with fewer rows (a group's first rows) is filled with ``pad_value`` rows
    (in the model's feature space) before its first row, as Keras' ``pad_sequences(padding="pre")``. The
    graph takes the windows as the int64 input ``input`` ``[N, window]`` of row positions in the sorted
    rows, -1 for padding (:func:`onegraph.runtime.windows.window_index` computes it). Validated by
    :class:`SequenceSchema`.
    """

    group: str
    order: str
    window: int
    padding: str = "pre"
    pad_value: float = 0.0
    input: str = "onegraph.window"

    def __post_init__(self) -> None:
        try:
            SequenceSchema.model_validate(dataclasses.asdict(self))
        except ValidationError as exc:
            raise ValueError(_reason(exc)) from None

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SequenceSpec:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown field(s) {sorted(unknown)}")
        return cls(**{k: (float(v) if k == "pad_value" else v) for k, v in d.items()})


class FederatedRound(_Entry):
    """One round of federated aggregation (:mod:`onegraph.federated`): the clients' deltas, computed against
    ``base_model``, merged by ``method``."""

    round: Annotated[int, Field(ge=1)] = Field(description="round number the clients' deltas carry")
    base_model: Sha256 = Field(description="sha256 of the model the clients trained from (onegraph.meta.model_hash)")
    method: Literal["fedavg", "median", "trimmed-mean", "apply"] = Field(
        description="fedavg: mean weighted by samples; median / trimmed-mean: coordinate-wise; apply: sum")
    clients: Annotated[int, Field(ge=1)] = Field(description="number of deltas merged")
    samples: Annotated[int, Field(ge=0)] = Field(description="training samples of all clients together")
    trim: Annotated[float, Field(ge=0, lt=0.5)] | None = Field(
        None, description="trimmed-mean: fraction cut at each end, per coordinate")


class Federated(_Entry):
    """A model made by federated rounds: the structure parameters are exchanged for, and the rounds so far."""

    fingerprint: Sha256 = Field(description="structural fingerprint (onegraph.federated.fingerprint)")
    rounds: Annotated[list[FederatedRound], Field(min_length=1)] = Field(description="rounds, oldest first")

    @model_validator(mode="after")
    def _increasing(self) -> Federated:
        numbers = [r.round for r in self.rounds]
        if any(b <= a for a, b in zip(numbers, numbers[1:])):
            raise ValueError(f"round numbers must increase, not {numbers}")
        return self


class MediaSchema(_Entry):
    """A model that takes a batch of images or audio clips (:mod:`onegraph.media`), not DataFrame columns."""

    kind: Literal["image", "audio"]
    input: str = Field(min_length=1, description="graph input name")
    layout: Literal["NHWC", "NCHW", "NT"] = Field(description="axes of the input: images NHWC / NCHW, audio NT")
    dtype: Literal["uint8", "float32"]
    channels: Annotated[int, Field(ge=1)] | None = Field(None, description="image channels (1 gray, 3 RGB)")
    sample_rate: Annotated[int, Field(ge=1)] | None = Field(None, description="audio sample rate, Hz")
    steps: list[dict[str, JsonValue]] = Field(default_factory=list, description="the steps and their parameters")


def _field(description: str, storage: str) -> Any:
    return Field(None, description=description, json_schema_extra={"x-onegraph-storage": storage})


class ModelMetadata(BaseModel):
    """onegraph model metadata: each field is stored in ``ModelProto.metadata_props`` under
    ``org.onegraph.<field>`` (``x-onegraph-storage``: ``text`` stores the string itself, ``json`` its JSON)."""

    model_config = ConfigDict(extra="allow", strict=True, title="onegraph model metadata", defer_build=True)

    meta_version: Annotated[int, Field(ge=1)] | None = _field("version of this schema", "json")
    created_at: DateTime | None = _field("RFC 3339 date-time the model was built", "text")
    producer: NameVersion | None = _field("'<name> <version>' of the tool that wrote the model", "text")
    source_library: NameVersion | None = _field("'<name> <version>' of the library of the source objects", "text")
    training_algorithm: Text | None = _field("qualified class of the model", "text")
    hyperparameters: dict[str, JsonValue] | None = _field("the model's parameters (get_params)", "json")
    training_data: TrainingData | None = _field("the data the model was fitted on", "json")
    inputs: list[ColumnSpec] | None = _field("input schema: one entry per graph input / column", "json")
    outputs: list[OutputSchema] | None = _field("one entry per graph output: role, labels, units", "json")
    author: Text | None = _field("who made the model (also written as model_author)", "text")
    license: Text | None = _field("licence, SPDX identifier or text (also written as model_license)", "text")
    intended_use: Text | None = _field("what the model is for", "text")
    lineage: Lineage | None = _field("the model this one derives from", "json")
    transfer_learning: TransferLearning | None = _field("base model and frozen / trainable parameters", "json")
    precision: Precision | None = _field("dtypes in use and mixed-precision regions", "json")
    models: list[ComposedModel] | None = _field("composed models (name, source, what each consumes)", "json")
    ensemble: EnsembleSchema | None = _field("how the composed models' outputs combine", "json")
    sequence: SequenceSchema | None = _field("rows scored as windows of their group", "json")
    federated: Federated | None = _field("structural fingerprint and federated rounds", "json")
    media: MediaSchema | None = _field("image / audio tensor input (onegraph.media)", "json")
    row_width: Annotated[int, Field(ge=1, le=2**31)] | None = _field(
        "values per row of the graph's widest value, by which scoring sizes its batches", "json")


#: field name -> "text" or "json" (how it is stored)
FIELDS: dict[str, str] = {name: info.json_schema_extra["x-onegraph-storage"]
                          for name, info in ModelMetadata.model_fields.items()}


# -- one value ------------------------------------------------------------------------------------
#: deepest nesting of lists and dicts a JSON field may hold: onegraph's own values nest 5 levels at most;
#: anything deeper would make the code that prints or walks a value (``show``, rich, ``json.dumps``)
#: recurse past Python's limit, so it is refused here, where every reader passes
MAX_DEPTH = 64


def validate(key: str, value: Any) -> Any:
    """The typed value of field ``key`` (without prefix), or :class:`MetadataError` naming the key.

    ``value`` may be the Python value or, for a JSON field, its JSON text. Unknown keys pass unchanged.
    Returns plain JSON values (str, int, list, dict), with what was given and nothing added.

    Raises :class:`MetadataError` and nothing else, whatever ``value`` holds: invalid JSON, integers of
    more digits than Python converts, values nested deeper than :data:`MAX_DEPTH`, wrong types, text that
    is not UTF-8 (``bytes``).
    """
    if key not in FIELDS:
        return value
    try:
        if isinstance(value, (bytes, bytearray)):
            raise MetadataError(PREFIX + key, "the value is not UTF-8 text")
        if FIELDS[key] == "json" and isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError as exc:  # JSONDecodeError, or an integer of too many digits
                raise MetadataError(PREFIX + key, f"not valid JSON ({_short(exc)})") from None
        depth = _depth(value)
        if depth > MAX_DEPTH:
            raise MetadataError(PREFIX + key, f"nested more than {MAX_DEPTH} levels deep")
        adapter = _adapter(key)
        try:
            parsed = adapter.validate_python(value, strict=True)
        except ValidationError as exc:
            raise MetadataError(PREFIX + key, _reason(exc, nested=False)) from None
        return adapter.dump_python(parsed, mode="json", exclude_unset=True)
    except MetadataError:
        raise
    except RecursionError:
        raise MetadataError(PREFIX + key, "nested too deeply to be read") from None
    except (TypeError, ValueError, OverflowError, KeyError, AttributeError) as exc:
        # what a validator or serializer may raise on odd values instead of a ValidationError
        raise MetadataError(PREFIX + key, f"cannot be read ({type(exc).__name__}: {_short(exc)})") from None


def _depth(value: Any) -> int:
    """How deeply lists and dicts nest in ``value`` (0 for a scalar), without recursing; stops counting past
    :data:`MAX_DEPTH`."""
    deepest, todo = 0, [(value, 0)]
    while todo:
        item, level = todo.pop()
        if isinstance(item, (list, tuple, dict)):
            level += 1
            deepest = max(deepest, level)
            if level > MAX_DEPTH:
                return level
            todo.extend((v, level) for v in (item.values() if isinstance(item, dict) else item))
    return deepest


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:200] + ("..." if len(text) > 200 else "")


_ADAPTERS: dict[str, TypeAdapter] = {}


def _adapter(key: str) -> TypeAdapter:
    """The validator of one field, built on first use: reading a model's inputs and outputs (what scoring does)
    builds those two, not the whole schema (pydantic builds a validator in about 10 ms per model class)."""
    adapter = _ADAPTERS.get(key)
    if adapter is None:
        adapter = _ADAPTERS[key] = TypeAdapter(ModelMetadata.model_fields[key].rebuild_annotation())
    return adapter


def _reason(exc: ValidationError, *, nested: bool = True) -> str:
    """The first errors of ``exc`` in words, each at its place (``nested``: the place starts with the field)."""
    parts = []
    for e in exc.errors()[:3]:
        loc = e["loc"][1:] if nested else e["loc"]
        where = ".".join(str(p) for p in loc if not str(p).startswith(("function-after", "constrained")))
        text = e["msg"].removeprefix("Value error, ")
        parts.append(f"{where}: {text}" if where else text)
    return "; ".join(parts)


def _stored(key: str, typed: Any) -> str:
    return typed if FIELDS.get(key) == "text" else json.dumps(typed, ensure_ascii=False)


# -- whole metadata -------------------------------------------------------------------------------
def encode(fields: Mapping[str, Any]) -> dict[str, str]:
    """``metadata_props`` entries for typed ``fields`` (names without prefix), validated.

    ``author`` and ``license`` also give ``model_author`` / ``model_license``.
    Raises :class:`MetadataError` naming the first malformed key.
    """
    out = {}
    for key, value in fields.items():
        typed = validate(key, value)
        out[PREFIX + key] = _stored(key, typed)
        if key in STANDARD_KEYS:
            out[STANDARD_KEYS[key]] = typed
    return out


def decode(props: Mapping[str, str], only: Sequence[str] | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    """Split ``metadata_props`` into onegraph's typed fields and every other key (kept unchanged).

    ``only``: read (and validate) these fields alone; the others are left out of the result (scoring reads
    ``inputs``, ``outputs``, ``sequence``, ``media`` and ``row_width``).

    Raises :class:`MetadataError` naming the key of the first malformed value (:func:`read` collects them all).
    """
    found = read(props, only)
    if found.errors:
        raise found.errors[0]
    return found.fields, found.others


@dataclasses.dataclass
class Metadata:
    """What a model's ``metadata_props`` say, read without raising.

    Attributes
    ----------
    fields:
        onegraph's fields (names without prefix), typed; unknown prefixed keys as their raw text.
    others:
        Every key outside the prefix (``model_author``, other tools' keys), unchanged.
    invalid:
        Prefixed keys whose value is malformed -> the raw text, kept (never dropped).
    errors:
        One :class:`MetadataError` per problem, naming the key.
    notes:
        Things worth knowing that are not errors (a newer schema version wrote the model).
    """

    fields: dict[str, Any]
    others: dict[str, str]
    invalid: dict[str, str]
    errors: list[MetadataError]
    notes: list[str]

    @property
    def ok(self) -> bool:
        return not self.errors

    def props(self) -> dict[str, str]:
        """The ``metadata_props`` these fields, other keys and kept malformed values make."""
        out = {PREFIX + k: _stored(k, v) for k, v in self.fields.items()}
        out.update({PREFIX + k: v for k, v in self.invalid.items()})
        out.update(self.others)
        return out


def read(props: Mapping[str, str], only: Sequence[str] | None = None) -> Metadata:
    """Read ``metadata_props`` (key -> text) without raising: see :class:`Metadata`. ``only``: as :func:`decode`.

    Whatever the keys and values hold (text that is not UTF-8, JSON nested thousands deep, the wrong JSON
    type), each problem is one :class:`MetadataError` in ``errors``; a value that passes is safe for every
    reader (``show``, ``score``)."""
    fields: dict[str, Any] = {}
    others: dict[str, str] = {}
    invalid: dict[str, str] = {}
    errors: list[MetadataError] = []
    for key, text in props.items():
        if isinstance(key, (bytes, bytearray)):  # a key that is not UTF-8, as protobuf hands it back
            shown = bytes(key).decode("utf-8", "backslashreplace")
            if shown.startswith(PREFIX):
                invalid[shown[len(PREFIX):]] = text
                errors.append(MetadataError(shown, "the key is not UTF-8 text"))
            else:
                others[key] = text
            continue
        if not key.startswith(PREFIX):
            others[key] = text
            continue
        name = key[len(PREFIX):]
        if only is not None and name not in only:
            continue
        try:
            fields[name] = validate(name, text)
        except MetadataError as exc:
            invalid[name] = text
            errors.append(exc)
    for name, standard in STANDARD_KEYS.items():
        if name in fields and standard in others and others[standard] != fields[name]:
            errors.append(MetadataError(standard, f"{others[standard]!r} disagrees with {PREFIX + name} "
                                                  f"{fields[name]!r}"))
    notes = []
    version = fields.get("meta_version")
    if isinstance(version, int) and version > SCHEMA_VERSION:
        notes.append(f"written with metadata schema version {version}; this onegraph knows {SCHEMA_VERSION} "
                     "(fields it does not know are kept as text)")
    else:  # a field this version should know: most likely a typo written by hand or by another tool
        for name in (n for n in fields if n not in FIELDS):
            near = difflib.get_close_matches(name, list(FIELDS), n=1, cutoff=0.8)
            notes.append(f"{PREFIX}{name} is not a field of metadata schema version {SCHEMA_VERSION}"
                         + (f" (did you mean {PREFIX}{near[0]}?)" if near else "") + "; kept as text, read by nothing")
    return Metadata(fields, others, invalid, errors, notes)


#: the ``onnx_type`` of an input entry for each ONNX element type (``TensorProto`` numbers: DOUBLE, FLOAT,
#: INT64, BOOL, STRING), and the kinds each can carry (the table of :mod:`onegraph.contract.columns`)
_ONNX_TYPES = {11: "double", 1: "float", 7: "int64", 9: "bool", 8: "string"}
_KINDS_OF = {"double": {"float", "bool"}, "float": {"float"}, "int64": {"int", "datetime", "timedelta"},
             "bool": {"bool"}, "string": {"string"}}


def internal_inputs(fields: Mapping[str, Any]) -> set[str]:
    """Graph inputs described by another field than ``inputs``: a sequence model's window index
    (:class:`SequenceSpec`), a media model's image / audio tensor (``media``)."""
    entries = ((fields.get(key), default) for key, default in (("sequence", "onegraph.window"), ("media", None)))
    names = {entry.get("input", default) for entry, default in entries if isinstance(entry, Mapping)}
    return names - {None}


def input_problems(entries: Sequence[Mapping[str, Any]], graph_inputs: Mapping[str, str | None],
                   internal: Iterable[str] = ()) -> list[str]:
    """What the decoded ``inputs`` entries say that the graph contradicts, given its inputs as name ->
    element type (``double``, ``string``... as ``onnx_type`` spells them; None when not a tensor of those):
    an entry naming an input the graph does not have, an ``onnx_type`` that is not the input's, a ``kind``
    its ``onnx_type`` cannot carry (a ``float`` kind on a string input would feed text as numbers), a graph
    input no entry describes (``inputs=[]`` set by hand: nothing would feed it) other than the ``internal``
    ones (:func:`internal_inputs`)."""
    absent = [e["name"] for e in entries if e["name"] not in graph_inputs]
    if absent:
        return [f"names inputs the graph does not have: {_listed(absent)}"]
    described = {e["name"] for e in entries} | set(internal)
    undescribed = [name for name in graph_inputs if name not in described]
    if undescribed:
        return [f"does not describe the graph's input(s) {_listed(undescribed)} (one entry per input)"]
    for e in entries:
        kind, onnx_type, actual = e.get("kind"), e.get("onnx_type"), graph_inputs[e["name"]]
        if actual is not None and onnx_type != actual:
            return [f"entry {e['name']!r} says onnx_type {onnx_type!r} but the graph input is {actual}"]
        if kind not in _KINDS_OF.get(onnx_type, {kind}):
            return [f"entry {e['name']!r}: kind {kind!r} cannot be fed as onnx_type {onnx_type!r} (it takes "
                    f"{' or '.join(sorted(_KINDS_OF[onnx_type]))})"]
    return []


def _listed(names: Sequence[Any], shown: int = 5) -> str:
    """``['a', 'b'] and 2 more``: the first ``shown`` of ``names``, and how many were left out."""
    more = len(names) - shown
    return f"{list(names[:shown])}" + (f" and {more} more" if more > 0 else "")


def output_problems(entries: Sequence[Mapping[str, Any]], graph_outputs: Sequence[str],
                    widths: Mapping[str, int | None] | None = None) -> list[str]:
    """What the decoded ``outputs`` entries say that the graph (its output names ``graph_outputs``; ``widths``:
    the fixed last dimension of each 2-D output, where the graph gives one) contradicts: an entry naming an
    output the graph does not have, a graph output no entry describes (``outputs=[]`` set by hand would score
    ``probabilities`` without its class names, and a missing entry drops the output from the scores) other than
    the check outputs, which their names describe (:func:`onegraph.contract.outputs.check_entry`), and
    ``probabilities`` whose ``classes`` are not one per column (the scores would drop or misname columns)."""
    have = set(graph_outputs)
    absent = [e["name"] for e in entries if e["name"] not in have]
    if absent:
        return [f"names outputs the graph does not have: {_listed(absent)}"]
    described = {e["name"] for e in entries}
    undescribed = [n for n in graph_outputs if n not in described and check_entry(n) is None]
    if undescribed:
        return [f"does not describe the graph's output(s) {_listed(undescribed)} (one entry per output)"]
    for e in entries:
        width = (widths or {}).get(e["name"])
        classes = e.get("classes")
        if e.get("role") == "probabilities" and isinstance(classes, list) and width and len(classes) != width:
            return [f"entry {e['name']!r} names {len(classes)} classes but the graph's output has {width} columns"]
    return []


def output_widths(shapes: Mapping[str, Sequence[Any]]) -> dict[str, int | None]:
    """The fixed last dimension of each 2-D output of ``shapes`` (name -> dims, an int where fixed), else None."""
    return {name: dims[-1] if len(dims) == 2 and isinstance(dims[-1], int) and dims[-1] > 0 else None
            for name, dims in shapes.items()}


def against_graph(graph: Any, fields: Mapping[str, Any]) -> list[MetadataError]:
    """What the decoded ``fields`` (of :func:`read`) say of ``graph`` (an ``onnx.GraphProto``) that it
    contradicts: ``inputs`` and ``outputs`` (see :func:`input_problems`, :func:`output_problems`),
    ``transfer_learning`` parameters naming no initializer, ``precision`` regions naming no node. One
    :class:`MetadataError` per key at fault, naming it."""
    problems = []

    def missing(key: str, names: Sequence[str], have: set[str], what: str) -> None:
        absent = [n for n in names if n not in have]
        if absent:
            problems.append(MetadataError(PREFIX + key, f"names {what} the graph does not have: {_listed(absent)}"))

    if isinstance(fields.get("inputs"), list):
        constants = {t.name for t in graph.initializer}  # IR < 4 lists initializers among the inputs
        types = {i.name: _ONNX_TYPES.get(i.type.tensor_type.elem_type) if i.type.HasField("tensor_type") else None
                 for i in graph.input if i.name not in constants}
        problems += [MetadataError(PREFIX + "inputs", p)
                     for p in input_problems(fields["inputs"], types, internal_inputs(fields))]
    if isinstance(fields.get("outputs"), list):
        problems += [MetadataError(PREFIX + "outputs", p)
                     for p in output_problems(fields["outputs"], [o.name for o in graph.output], output_widths(
                         {o.name: [d.dim_value if d.HasField("dim_value") else None for d in o.type.tensor_type.shape.dim]
                          for o in graph.output if o.type.HasField("tensor_type")}))]
    initializers = {t.name for t in graph.initializer}
    tl = fields.get("transfer_learning")
    if isinstance(tl, dict):
        missing("transfer_learning", [*tl.get("frozen", []), *tl.get("trainable", [])], initializers, "initializers")
    precision = fields.get("precision")
    if isinstance(precision, dict):
        nodes = {n.name for n in graph.node}
        missing("precision", [n for r in precision.get("regions", []) for n in r["nodes"]], nodes, "nodes")
    return problems


def now_rfc3339() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")
