"""A media pipeline (steps from a declared image / audio input) and :func:`build`: the pipeline and a model
in one ONNX file, checked against the libraries on a sample.

``DataFrame`` pipelines (:func:`onegraph.build`, :func:`onegraph.compose`) take one graph input per column;
a media model takes one tensor (``uint8 [N, H, W, C]`` images, ``float32 [N, T]`` waveforms), so it is built
here with the same builder, adapters and metadata: the model (a PyTorch module through
:class:`~onegraph.export.TorchModule`, or an ONNX model) is spliced after the last step, and the input is
recorded under the metadata key ``org.onegraph.media`` (:class:`onegraph.contract.metadata.MediaSchema`), which
``onegraph score MODEL FOLDER`` reads to decode files for it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
import onnx_ir as ir

from onegraph.emit import FLOAT, GraphBuilder
from onegraph.errors import ConfigError, ExportError
from onegraph.media.tensor import DTYPES, IMAGE_LAYOUTS, Step, Tensor, numpy_dtype

__all__ = ["FEATURE_TOLERANCE", "MediaPipeline", "ImagePipeline", "AudioPipeline", "check_batch", "build",
           "parity"]

#: (rtol, atol) of the parity check on features: float outputs within ``atol + rtol * max|expected|``
FEATURE_TOLERANCE = (1e-5, 1e-4)


class MediaPipeline:
    """Steps applied in order to one image or audio input.

    Parameters
    ----------
    steps: :class:`~onegraph.media.tensor.Step` objects (``onegraph.media.image`` / ``.audio`` / ``.boxes``).
    kind: ``"image"`` or ``"audio"``.
    dtype: the input's element type: ``"uint8"`` or ``"float32"`` (audio: float32).
    layout: images ``"NHWC"`` (default for uint8) or ``"NCHW"`` (default for float32); audio ``"NT"``.
    channels: image channels (3 RGB, 1 gray).
    sample_rate: audio sample rate, Hz (required for audio).
    input: the graph input's name (default ``"image"`` / ``"audio"``).

    Raises
    ------
    ConfigError
        for an unknown kind / dtype / layout, a missing sample rate, an empty step list or a step that does not
        take what the step before it gives (when the graph is emitted).
    """

    def __init__(self, steps: Sequence[Step], *, kind: str = "image", dtype: str | None = None,
                 layout: str | None = None, channels: int | None = 3, sample_rate: int | None = None,
                 input: str | None = None) -> None:
        if kind not in ("image", "audio"):
            raise ConfigError(f"MediaPipeline: kind={kind!r} is not supported", hint="use 'image' or 'audio'")
        self.kind = kind
        self.steps = list(steps)
        bad = [s for s in self.steps if not isinstance(s, Step)]
        if not self.steps or bad:
            raise ConfigError(f"MediaPipeline: steps must be onegraph.media steps, got {bad[:1] or 'none'}",
                              hint="give e.g. [Resize((224, 224)), ToFloat(), ToCHW(), Normalize(mean, std)]")
        self.dtype = dtype or ("uint8" if kind == "image" else "float32")
        if self.dtype not in DTYPES or (kind == "audio" and self.dtype != "float32"):
            raise ConfigError(f"MediaPipeline: dtype={self.dtype!r} is not supported for {kind}",
                              hint="images: 'uint8' or 'float32'; audio: 'float32'")
        layouts = IMAGE_LAYOUTS if kind == "image" else ("NT",)
        self.layout = layout or (("NHWC" if self.dtype == "uint8" else "NCHW") if kind == "image" else "NT")
        if self.layout not in layouts:
            raise ConfigError(f"MediaPipeline: layout={self.layout!r} is not a {kind} layout",
                              hint=f"use one of {', '.join(layouts)}")
        self.channels = int(channels) if kind == "image" and channels is not None else None
        if kind == "image" and (self.channels is None or self.channels < 1):
            raise ConfigError(f"MediaPipeline: channels={channels!r} must be a positive integer")
        self.sample_rate = sample_rate
        if kind == "audio" and not (isinstance(sample_rate, int) and sample_rate > 0):
            raise ConfigError(f"MediaPipeline: sample_rate={sample_rate!r} must be given for audio, in Hz")
        self.input = input or kind
        if not isinstance(self.input, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.\-]*", self.input):
            raise ConfigError(f"MediaPipeline: input={self.input!r} is not a usable graph input name",
                              hint="give a name of letters, digits, '_', '.' or '-', e.g. input='image'")
        if self.input in ("features", "label", "probabilities", "prediction"):  # the graph's own outputs
            raise ConfigError(f"MediaPipeline: input={self.input!r} is the name of one of the graph's outputs",
                              hint=f"give the input another name, e.g. input={kind!r}")

    # -- graph ---------------------------------------------------------------------------------------------
    def input_shape(self) -> list:
        if self.kind == "audio":
            return ["N", "T"]
        return ["N", "H", "W", self.channels] if self.layout == "NHWC" else ["N", self.channels, "H", "W"]

    def emit(self, g: GraphBuilder) -> tuple[ir.Value, Tensor]:
        """Declare the input and emit every step; return the input and the last step's :class:`Tensor`."""
        value = ir.Value(name=self.input, shape=ir.Shape(self.input_shape()), type=ir.TensorType(DTYPES[self.dtype]))
        g.graph.inputs.append(value)
        t = Tensor(value, self.layout, DTYPES[self.dtype], channels=self.channels, sample_rate=self.sample_rate)
        for i, step in enumerate(self.steps):
            with g.scope(f"media.{i}.{type(step).__name__.lower()}", step):
                t = step.emit(g, t)
        return value, t

    def to_onnx(self, *, name: str = "onegraph-media") -> onnx.ModelProto:
        """The preprocessing alone: input -> output ``features``."""
        return build(self, None, None, check_parity=False, name=name)

    # -- the libraries' side ---------------------------------------------------------------------------------
    def layouts(self) -> list[str]:
        """The layout each step takes (traced through a scratch graph)."""
        g = GraphBuilder("trace")
        value = ir.Value(name=self.input, shape=ir.Shape(self.input_shape()), type=ir.TensorType(DTYPES[self.dtype]))
        t = Tensor(value, self.layout, DTYPES[self.dtype], channels=self.channels, sample_rate=self.sample_rate)
        out = []
        for step in self.steps:
            out.append(t.layout)
            t = step.emit(g, t)
        return out

    def reference(self, batch: np.ndarray) -> np.ndarray:
        """The steps computed by the libraries they name, on ``batch`` (the input's dtype and layout)."""
        x = check_batch(self, batch, "the sample")
        for step, layout in zip(self.steps, self.layouts()):
            x = step.reference(x, layout)
        return np.asarray(x)

    def describe(self) -> dict:
        """The ``org.onegraph.media`` metadata entry."""
        return {"kind": self.kind, "input": self.input, "layout": self.layout, "dtype": self.dtype,
                "channels": self.channels, "sample_rate": self.sample_rate,
                "steps": [s.describe() for s in self.steps]}


def ImagePipeline(steps: Sequence[Step], *, channels: int = 3, dtype: str = "uint8", layout: str | None = None,
                  input: str = "image") -> MediaPipeline:
    """A :class:`MediaPipeline` of images (default ``uint8 [N, H, W, 3]``)."""
    return MediaPipeline(steps, kind="image", dtype=dtype, layout=layout, channels=channels, input=input)


def AudioPipeline(steps: Sequence[Step], *, sample_rate: int, input: str = "audio") -> MediaPipeline:
    """A :class:`MediaPipeline` of float32 waveforms ``[N, T]`` at ``sample_rate`` Hz."""
    return MediaPipeline(steps, kind="audio", sample_rate=sample_rate, channels=None, input=input)


def check_batch(pipeline: MediaPipeline, batch: Any, what: str) -> np.ndarray:
    """``batch`` as the array the input takes, or a :class:`~onegraph.errors.DataError` naming the problem."""
    from onegraph.errors import DataError

    x = np.asarray(batch)
    want = numpy_dtype(DTYPES[pipeline.dtype])
    shape = pipeline.input_shape()
    if x.ndim != len(shape):
        raise DataError(f"{what} has shape {x.shape}; input {pipeline.input!r} takes {pipeline.dtype} {shape}",
                        hint="stack the images / clips into one batch (one size per batch)")
    for axis, dim in enumerate(shape):
        if isinstance(dim, int) and x.shape[axis] != dim:
            raise DataError(f"{what} has {x.shape[axis]} at axis {axis} where input {pipeline.input!r} takes {dim} "
                            f"({pipeline.layout})", hint="convert the images to the declared channels / layout")
    if x.dtype != want:
        raise DataError(f"{what} is {x.dtype}; input {pipeline.input!r} takes {pipeline.dtype}",
                        hint=f"convert it with .astype(np.{want.name}) (images: uint8 0..255 as decoded)")
    if 0 in x.shape:  # no image, or an image of no pixels: nothing for the libraries or the graph to run on
        empty = "an axis of length 0" if len(x) else f"no {'images' if pipeline.kind == 'image' else 'clips'}"
        raise DataError(f"{what} has shape {list(x.shape)}: {empty}",
                        hint="give at least one image / clip of at least one pixel / sample")
    if x.dtype.kind == "f" and not np.isfinite(x).all():  # the libraries refuse it (librosa: "not finite")
        at = np.unravel_index(int(np.flatnonzero(~np.isfinite(x))[0]), x.shape)
        raise DataError(f"{what} holds {x[at]} at {list(map(int, at))}: the input takes finite values",
                        hint="replace NaN / ±inf samples before building")
    return np.ascontiguousarray(x)


# -- build ---------------------------------------------------------------------------------------------------
def _adapter(model: Any, classes: Any, output: str | None, features: np.ndarray | None) -> Any:
    from onegraph.export import TorchModule
    from onegraph.export.adapters.contract import Adapter

    if isinstance(model, Adapter):
        return model
    if type(model).__module__.split(".")[0] == "torch":
        if features is None:
            raise ExportError("a PyTorch module needs sample= to know the shape of its input",
                              hint="pass a batch of images / clips as sample")
        return TorchModule(model, classes=classes, output=output, input_shape=features.shape[1:])
    if isinstance(model, (str, os.PathLike, bytes, onnx.ModelProto)):
        return _MediaOnnxModel(model, classes)
    raise ExportError(f"a {type(model).__name__} cannot follow a media pipeline",
                      hint="give a PyTorch module (with classes=) or an ONNX model taking the features")


class _MediaOnnxModel:
    """An ONNX model taking the pipeline's features (any rank): spliced as it is; its first output is the
    logits / probabilities (``classes`` given) or the prediction."""

    tolerance = (1e-5, 1e-5)

    def __init__(self, model: Any, classes: Any) -> None:
        from onegraph.check.loader import load_model
        from onegraph.export.adapters.contract import Consumes

        self.proto = load_model(model)
        self.model = model
        self.source = f"onnx:{model}" if isinstance(model, (str, os.PathLike)) else "onnx"
        self.classes = None if classes is None else list(classes)
        self.task = "classifier" if classes is not None else "regressor"
        inits = {i.name for i in self.proto.graph.initializer}
        inputs = [i.name for i in self.proto.graph.input if i.name not in inits]
        if len(inputs) != 1:
            raise ExportError(f"ONNX model {self.source} takes {len(inputs)} inputs; after a media pipeline it "
                              "takes one (the features)")
        self.input_name = inputs[0]
        self.consumes = Consumes("float", None)

    def emit(self, g: GraphBuilder, x: ir.Value) -> Any:
        from onegraph.export.adapters.models import ModelOutputs, label_from_index
        from onegraph.export.adapters.onnx_graph import splice

        outs = splice(g, self.proto, {self.input_name: x}, prefix=g.unique("model") + "/", what=self.source)
        y = g.op("Cast", next(iter(outs.values())), to=ir.DataType.DOUBLE, dtype=ir.DataType.DOUBLE)
        if self.classes is None:
            return ModelOutputs.regressor(y)
        proba = g.op("Softmax", y, axis=1, dtype=ir.DataType.DOUBLE)
        proba.shape = ir.Shape(["N", len(self.classes)])
        index = g.op("ArgMax", proba, axis=1, keepdims=0, dtype=ir.DataType.INT64)
        return ModelOutputs.classifier(label_from_index(g, self.classes, index), proba, self.classes)

    def expected(self, x: np.ndarray) -> dict[str, np.ndarray]:
        import onnxruntime as ort

        session = ort.InferenceSession(self.proto.SerializeToString(), providers=["CPUExecutionProvider"])
        y = session.run(None, {self.input_name: x.astype(np.float32)})[0].astype(np.float64)
        if self.classes is None:
            return {"prediction": y}
        e = np.exp(y - y.max(axis=1, keepdims=True))
        proba = e / e.sum(axis=1, keepdims=True)
        return {"label": np.asarray(self.classes)[proba.argmax(axis=1)], "probabilities": proba}


def build(pipeline: MediaPipeline, model: Any = None, sample: Any = None, *, classes: Any = None,
          output: str | None = None, path: str | os.PathLike | None = None, check_parity: bool = True,
          rtol: float | None = None, atol: float | None = None, name: str = "onegraph-media") -> onnx.ModelProto:
    """One ONNX model: ``pipeline`` then ``model``, checked against the libraries on ``sample``.

    Parameters
    ----------
    pipeline: the :class:`MediaPipeline`.
    model: None (the model outputs the features, ``float32`` / ``uint8`` ``features``), a PyTorch ``nn.Module``
        taking the features (``classes`` given: its output is logits, ``output="probabilities"`` if it already
        gives probabilities), a :class:`~onegraph.export.TorchModule`, or an ONNX model (path / bytes /
        ``ModelProto``) whose one input takes the features and whose first output is logits (with ``classes``)
        or the prediction.
    sample: a batch in the input's dtype and layout (``uint8 [N, H, W, C]`` images of one size, ``float32
        [N, T]`` clips); needed for a PyTorch module (its input shape) and for the parity check.
    path: where to write the model (atomically) once it passes the check.
    check_parity, rtol, atol: compare the graph in onnxruntime with the libraries on ``sample``: features
        within ``atol + rtol * max|expected|`` (default :data:`FEATURE_TOLERANCE`, exact for uint8), labels
        identical, probabilities within the model's tolerance (1e-5).

    Returns
    -------
    onnx.ModelProto
        Input ``pipeline.input``; outputs ``label`` (int64 / string) and ``probabilities`` ``[N, classes]``
        (double) for a classifier, ``prediction`` for a regressor, or ``features``. Metadata:
        ``org.onegraph.media`` (the input and steps), ``outputs`` (roles, classes), ``models``.

    Raises
    ------
    ConfigError
        for steps that do not fit one another (naming both).
    ExportError
        for a model that cannot follow the pipeline.
    DataError
        for a sample of the wrong dtype / shape.
    ParityError
        when the graph differs from the libraries on ``sample``.
    """
    from onegraph.export import assemble

    from onegraph.verify.parity import check_tolerances

    check_tolerances(rtol=rtol, atol=atol)
    x_sample = None if sample is None else check_batch(pipeline, sample, "the sample")
    expected_features = None
    if x_sample is not None and (model is not None and type(model).__module__.split(".")[0] == "torch"
                                 or check_parity):
        expected_features = pipeline.reference(x_sample)
    adapter = None if model is None else _adapter(model, classes, output, expected_features)
    g = GraphBuilder(name)
    _, feats = pipeline.emit(g)
    if adapter is None:
        shape = ["N"] + [None] * (_rank(feats) - 1)
        g.output(feats.value, "features", feats.dtype, shape)
        entries = [{"name": "features", "column": "features", "role": "feature"}]
    else:
        value = feats.value if feats.dtype == FLOAT else g.op("Cast", feats.value, to=FLOAT, dtype=FLOAT)
        with g.scope("model", adapter.model):
            result = adapter.emit(g, value)
        entries = assemble.declare_outputs(g, result, set(), model="model")
    fields: dict[str, Any] = {"media": pipeline.describe()}
    if adapter is not None:
        fields["models"] = [{"name": "model", "source": adapter.source,
                             "consumes": f"float32 features {list(expected_features.shape[1:]) if expected_features is not None else '?'}"}]
        fields["training_algorithm"] = adapter.source

    def verify(proto: onnx.ModelProto) -> Any:
        return parity(proto, pipeline, adapter, x_sample, expected_features, rtol, atol)

    return assemble.finish(g, [], entries, {}, given=fields,
                           verify=verify if check_parity and x_sample is not None else None,
                           what="the media graph diverges from the libraries", path=path)


def _rank(t: Tensor) -> int:
    return 4 if t.is_image else 3 if t.layout == "NFT" else 2


def parity(proto: onnx.ModelProto, pipeline: MediaPipeline, adapter: Any, x: np.ndarray,
           expected_features: np.ndarray | None = None, rtol: float | None = None, atol: float | None = None):
    """:class:`~onegraph.verify.parity.ParityReport` of ``proto`` in onnxruntime against the libraries on ``x``."""
    from onegraph.runtime.session import Session
    from onegraph.verify.parity import ParityReport, compare

    features = pipeline.reference(x) if expected_features is None else expected_features
    session = Session(proto, trusted=True)
    got = dict(zip([o["name"] for o in session.outputs], session.run_feeds({pipeline.input: x})))
    results = []
    if adapter is None:
        exact = features.dtype == np.uint8
        f_rtol, f_atol = FEATURE_TOLERANCE if not exact else (0.0, 0.0)
        f_rtol, f_atol = (rtol if rtol is not None else f_rtol), (atol if atol is not None else f_atol)
        scale = float(np.abs(features).max()) if features.size else 0.0
        results.append(compare("features", got["features"], features, rtol=0.0, atol=f_atol + f_rtol * scale,
                               exact=exact))
        return ParityReport(results, len(x), f_rtol, f_atol)
    m_rtol, m_atol = adapter.tolerance
    m_rtol, m_atol = (rtol if rtol is not None else m_rtol), (atol if atol is not None else m_atol)
    for role, value in adapter.expected(features.astype(np.float32)).items():
        results.append(compare(role, got[role], value, rtol=m_rtol, atol=m_atol, exact=role == "label"))
    return ParityReport(results, len(x), m_rtol, m_atol)
