"""What flows between media steps: one graph value and what its axes mean.

A media pipeline passes one :class:`Tensor` from step to step. Images are ``uint8 [N, H, W, C]`` (layout
``"NHWC"``, as decoded by Pillow / OpenCV) or ``float32 [N, C, H, W]`` (``"NCHW"``, as torch takes them);
waveforms ``float32 [N, T]`` (``"NT"``) at a declared sample rate; spectrograms ``float32 [N, F, frames]``
(``"NFT"``, librosa's and Whisper's layout). Spatial sizes, clip lengths and batch sizes are dynamic; the
channel count and the number of frequency rows are fixed when the pipeline is built.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import onnx_ir as ir

from onegraph.emit import FLOAT, GraphBuilder
from onegraph.errors import ConfigError

__all__ = ["UINT8", "DTYPES", "IMAGE_LAYOUTS", "Tensor", "numpy_dtype", "dtype_name", "Step", "ImageStep",
           "ints", "choice", "positive_ints"]

UINT8 = ir.DataType.UINT8
#: element types a media step can take, by their numpy names
DTYPES = {"uint8": UINT8, "float32": FLOAT}
IMAGE_LAYOUTS = ("NHWC", "NCHW")


@dataclasses.dataclass(frozen=True)
class Tensor:
    """One value of a media graph.

    Attributes
    ----------
    value: the graph value.
    layout: ``"NHWC"`` / ``"NCHW"`` (images), ``"NT"`` (waveforms), ``"NFT"`` (spectrograms).
    dtype: ``uint8`` or ``float32`` element type.
    channels: image channels (1 gray, 3 colour), or None.
    rows: spectrogram rows (frequency bins, mel bands, coefficients), or None.
    sample_rate: waveform / spectrogram sample rate in Hz, or None.
    """

    value: ir.Value
    layout: str
    dtype: ir.DataType
    channels: int | None = None
    rows: int | None = None
    sample_rate: int | None = None

    @property
    def is_image(self) -> bool:
        return self.layout in IMAGE_LAYOUTS

    @property
    def spatial_axes(self) -> tuple[int, int]:
        """(height axis, width axis) of an image."""
        return (1, 2) if self.layout == "NHWC" else (2, 3)

    @property
    def channel_axis(self) -> int:
        return 3 if self.layout == "NHWC" else 1

    def with_value(self, value: ir.Value, **changes: Any) -> Tensor:
        return dataclasses.replace(self, value=value, **changes)


def numpy_dtype(dtype: ir.DataType) -> np.dtype:
    return np.dtype(np.uint8) if dtype == UINT8 else np.dtype(np.float32)


def dtype_name(dtype: ir.DataType) -> str:
    return "uint8" if dtype == UINT8 else "float32"


class Step:
    """One media transformer: the graph it emits (:meth:`emit`) and the named library's computation
    (:meth:`reference`) side by side, so a test (and :func:`onegraph.media.build`'s parity check) compares
    the two on the same input.

    Subclasses set ``takes`` (layouts accepted) and implement ``emit(g, t) -> Tensor`` and
    ``reference(x: np.ndarray, layout: str) -> np.ndarray`` (a batch in the step's input layout and dtype).
    """

    takes: tuple[str, ...] = ()
    #: library the step matches, named in errors and the metadata
    match: str = ""

    def emit(self, g: GraphBuilder, t: Tensor) -> Tensor:  # pragma: no cover - interface
        raise NotImplementedError

    def reference(self, x: np.ndarray, layout: str) -> np.ndarray:  # pragma: no cover - interface
        raise NotImplementedError

    def check(self, t: Tensor) -> None:
        """Raise :class:`~onegraph.errors.ConfigError` when ``t`` is not what this step takes."""
        if self.takes and t.layout not in self.takes:
            raise ConfigError(f"{self!r} takes {' or '.join(self.takes)} tensors, the step before gives {t.layout} "
                              f"{dtype_name(t.dtype)}",
                              hint="add ToCHW / ToHWC (images) or the missing audio step before it")

    def describe(self) -> dict:
        """The step's class and parameters, for the model's metadata."""
        return {"step": type(self).__name__, **{k: _plain(v) for k, v in vars(self).items() if not k.startswith("_")}}

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({params})"


class ImageStep(Step):
    """A step taking images in either layout."""

    takes = IMAGE_LAYOUTS


def ints(g: GraphBuilder, values: list[int]) -> ir.Value:
    """An int64 1-D constant (shapes, axes, pads)."""
    return g.const(np.asarray(values, np.int64), "ints")


def _plain(v: Any) -> Any:
    if isinstance(v, (tuple, list)):
        return [_plain(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    return v


def finite_numbers(name: str, value: Any, what: str, *, positive: bool = False) -> list[float]:
    """``value`` (a number or numbers) as floats, each finite (and > 0 with ``positive``), else a
    :class:`ConfigError` naming the parameter: a NaN scale or mean made every output NaN, which the parity
    check reported as the graph diverging."""
    try:
        arr = np.asarray(value, dtype=np.float64).reshape(-1)
        ok = arr.size > 0 and not isinstance(value, (str, bytes, bool)) and bool(np.isfinite(arr).all())
    except (TypeError, ValueError):
        ok = False
    if ok and positive:
        ok = bool((arr > 0).all())
    if not ok:
        raise ConfigError(f"{what}: {name}={value!r} is not {'positive and ' if positive else ''}finite",
                          hint=f"give {name} as {'positive ' if positive else ''}finite numbers")
    return [float(v) for v in arr]


def choice(name: str, value: Any, allowed: tuple, what: str) -> Any:
    """``value`` if it is one of ``allowed``, else a :class:`ConfigError` naming the parameter."""
    if value not in allowed:
        raise ConfigError(f"{what}: {name}={value!r} is not supported",
                          hint=f"use one of {', '.join(map(repr, allowed))}")
    return value


#: the most pixels one image of a size parameter may have (Pillow and onnxruntime index an image with int32)
MAX_PIXELS = 2**31 - 1


def positive_ints(name: str, value: Any, n: int, what: str) -> tuple[int, ...]:
    """``value`` as a tuple of ``n`` positive ints (not bools; their product at most :data:`MAX_PIXELS`), else a
    :class:`ConfigError` naming the parameter."""
    try:
        out = tuple(int(v) for v in value)
        ok = len(out) == n and all(v > 0 and v == w and not isinstance(w, (bool, np.bool_))
                                   for v, w in zip(out, value))
    except (TypeError, ValueError):
        ok = False
    if ok and int(np.prod(out, dtype=object)) > MAX_PIXELS:
        raise ConfigError(f"{what}: {name}={value!r} is {int(np.prod(out, dtype=object)):,} pixels per image, more "
                          f"than the {MAX_PIXELS:,} an image can index", hint=f"give a smaller {name}")
    if not ok:
        raise ConfigError(f"{what}: {name}={value!r} is not {n} positive integers",
                          hint=f"give {name}=({', '.join(['height', 'width'][:n] if n == 2 else ['...'])})")
    return out
