"""Image transformers: resize (:mod:`.resize`), crop, pad, normalize, dtype and layout changes, colour.

Each class emits its ONNX nodes (:meth:`emit`) and computes the same thing with the library it names
(:meth:`reference`: Pillow 13, torch 2.13's ``torch.nn.functional`` — what torchvision's tensor transforms
call —, or OpenCV 5), side by side. Images are ``uint8 [N, H, W, C]`` or ``float32 [N, C, H, W]``
(:mod:`onegraph.media.tensor`); heights and widths are dynamic, so one graph takes images of any size.

How close each mode comes to its library (tests/test_media_image.py checks each on real images):

=========================  =====  ===========================================================================
step, match, dtype         bound  why
=========================  =====  ===========================================================================
Resize pil, uint8          exact  Pillow's own integer arithmetic: 22-bit fixed-point weights, int32 sums,
                                  horizontal pass rounded to uint8 before the vertical one
Resize pil, float32        1e-5   Pillow's mode "F": double sums stored as float32 after each pass; the graph's
                                  sums run in another order (float32 rounding of the stored values)
Resize torchvision, float  1e-5   torch's float32 kernels; the graph computes its tables in float32 as its
                                  C++ does (one FMA included), sums in float32: a few ulps per pass remain
Resize torchvision, uint8  exact  torch's uint8 kernels: double weights to int16 with the precision torch
                                  computes, uint8 between passes; area through float32 (sum / kh / kw), rounded
Resize opencv bilinear,     1     OpenCV's INTER_LINEAR is not bit-exact across its own code paths (hence its
uint8                             INTER_LINEAR_EXACT): the graph follows its SIMD height pass (11-bit weights,
                                  shifts by 4, 16, 2), equal on the downscales tested, within 1 on upscales
Resize nearest, any        exact  a copy of input pixels: the indices are computed as each library does
CenterCrop, Pad, ToCHW,    exact  copies
ToHWC, ColorConvert BGR
ColorConvert gray uint8    exact  Pillow's / OpenCV's integer formulas
Normalize, ToFloat         1e-6   the same float32 operations in the same order (exact in practice)
ToUInt8                    exact  clip + round half to even (NumPy / scikit-image), or torchvision's
                                  ``x * 255.999`` truncation
=========================  =====  ===========================================================================
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onegraph.emit import FLOAT, INT64, GraphBuilder
from onegraph.errors import ConfigError
from onegraph.frame.tensors import Val
from onegraph.media import resample as rs
from onegraph.media.resize import INTERPOLATIONS, Resize  # noqa: F401  (re-exported: the image steps in one place)
from onegraph.media.tensor import UINT8, ImageStep, Tensor, choice, finite_numbers, ints, positive_ints

__all__ = ["CenterCrop", "Pad", "Normalize", "ToFloat", "ToUInt8", "ToCHW", "ToHWC", "GRAY_WEIGHTS",
           "ColorConvert"]


# -- crop and pad ---------------------------------------------------------------------------------------
class CenterCrop(ImageStep):
    """The central ``size = (height, width)`` of each image, as ``torchvision.transforms.v2.functional
    .center_crop``: top = ``int(round((H - h) / 2.0))`` (Python's round, half to even), left likewise; an
    image smaller than ``size`` is zero-padded first (``(h - H) // 2`` on top, the rest below).

    Raises :class:`~onegraph.errors.ConfigError` for a size that is not two positive ints.
    """

    match = "torchvision"

    def __init__(self, size: Any) -> None:
        self.size = positive_ints("size", size, 2, "CenterCrop")

    def emit(self, g: GraphBuilder, t: Tensor) -> Tensor:
        self.check(t)
        x = t.value
        zero = Val(g, g.const(np.int64(0), "zero"), INT64)
        begins, pads_lo, pads_hi = [], [], []
        for axis, want in zip(t.spatial_axes, self.size):
            n = rs.size_of(g, x, axis)
            short = rs.maximum(zero - (n - want), 0)  # pixels missing
            pads_lo.append(short // 2)
            pads_hi.append(short - short // 2)
            extra = rs.maximum(n - want, 0).cast(rs.DOUBLE)
            begins.append((extra / 2.0).unary("Round").cast(INT64))  # ONNX Round: half to even, as Python's
        pads = [zero] * 4 + [zero] * 4
        for (axis, lo, hi) in zip(t.spatial_axes, pads_lo, pads_hi):
            pads[axis], pads[4 + axis] = lo, hi
        pads_v = g.op("Concat", *[g.op("Unsqueeze", p.value, ints(g, [0]), dtype=INT64) for p in pads], axis=0,
                      dtype=INT64)
        x = g.op("Pad", x, pads_v, mode="constant", dtype=t.dtype)
        starts = g.op("Concat", *[g.op("Unsqueeze", b.value, ints(g, [0]), dtype=INT64) for b in begins], axis=0,
                      dtype=INT64)
        ends = g.op("Add", starts, ints(g, list(self.size)), dtype=INT64)
        x = g.op("Slice", x, starts, ends, ints(g, list(t.spatial_axes)), dtype=t.dtype)
        return t.with_value(x)

    def reference(self, x: np.ndarray, layout: str) -> np.ndarray:
        # torchvision's _center_crop_compute_padding / _center_crop_compute_crop_anchor, on numpy
        h_axis, w_axis = (1, 2) if layout == "NHWC" else (2, 3)
        pad = [(0, 0)] * 4
        for axis, want in zip((h_axis, w_axis), self.size):
            short = max(want - x.shape[axis], 0)
            pad[axis] = (short // 2, (short + 1) // 2)
        x = np.pad(x, pad)
        index = [slice(None)] * 4
        for axis, want in zip((h_axis, w_axis), self.size):
            top = int(round((x.shape[axis] - want) / 2.0))
            index[axis] = slice(top, top + want)
        return x[tuple(index)]


class Pad(ImageStep):
    """Pad each image by ``padding = (left, top, right, bottom)`` pixels, as
    ``torchvision.transforms.v2.functional.pad`` (``torch.nn.functional.pad``): ``mode="constant"`` with
    ``fill``, ``"edge"`` (torch's "replicate") or ``"reflect"`` (without repeating the edge, NumPy's reflect).

    Raises :class:`~onegraph.errors.ConfigError` for negative padding or another mode.
    """

    match = "torchvision"

    def __init__(self, padding: Any, *, fill: float = 0, mode: str = "constant") -> None:
        try:
            self.padding = tuple(int(p) for p in padding)
        except (TypeError, ValueError):
            self.padding = ()
        if len(self.padding) != 4 or min(self.padding) < 0:
            raise ConfigError(f"Pad: padding={padding!r} is not four non-negative ints",
                              hint="give padding=(left, top, right, bottom)")
        (self.fill,) = finite_numbers("fill", fill, "Pad")
        self.mode = choice("mode", mode, ("constant", "edge", "reflect"), "Pad")

    def _refuse_reflect_beyond(self, height: Any, width: Any) -> None:
        """A reflect pad as long as the image or longer has nothing to reflect: torch and onnxruntime refuse it."""
        left, top, right, bottom = self.padding
        for side, length, pads in (("height", height, (top, bottom)), ("width", width, (left, right))):
            if self.mode == "reflect" and isinstance(length, int) and max(pads) >= length:
                raise ConfigError(f"Pad(mode='reflect'): padding {pads} along the {side} must be less than the "
                                  f"image's {length} pixels", hint="pad less, or use mode='edge' or 'constant'")

    def _pads(self, h_axis: int, w_axis: int) -> list[int]:
        left, top, right, bottom = self.padding
        pads = [0] * 8
        pads[h_axis], pads[w_axis], pads[4 + h_axis], pads[4 + w_axis] = top, left, bottom, right
        return pads

    def emit(self, g: GraphBuilder, t: Tensor) -> Tensor:
        self.check(t)
        if t.dtype == UINT8 and self.mode == "constant" and not (0 <= self.fill <= 255 and self.fill.is_integer()):
            raise ConfigError(f"Pad: fill={self.fill!r} is not a uint8 pixel value",
                              hint="give a whole number from 0 to 255 for uint8 images")
        dims = list(t.value.shape) if t.value.shape is not None else [None] * 4
        self._refuse_reflect_beyond(*(dims[a] for a in t.spatial_axes))
        fill = g.const(np.asarray(self.fill, dtype=np.uint8 if t.dtype == UINT8 else np.float32), "fill")
        x = g.op("Pad", t.value, ints(g, self._pads(*t.spatial_axes)), fill if self.mode == "constant" else None,
                 mode=self.mode, dtype=t.dtype)
        return t.with_value(x)

    def reference(self, x: np.ndarray, layout: str) -> np.ndarray:
        import torch
        import torch.nn.functional as F

        nhwc = layout == "NHWC"
        self._refuse_reflect_beyond(*(x.shape[1:3] if nhwc else x.shape[2:4]))
        tx = torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2) if nhwc else x))
        left, top, right, bottom = self.padding
        mode = {"edge": "replicate"}.get(self.mode, self.mode)
        if x.dtype == np.uint8 and mode != "constant":  # torch pads uint8 only with constants: as float, exactly
            tx = tx.float()
        y = F.pad(tx, (left, right, top, bottom), mode=mode, **({"value": self.fill} if mode == "constant" else {}))
        y = y.numpy().astype(x.dtype)
        return y.transpose(0, 2, 3, 1) if nhwc else y


# -- values -----------------------------------------------------------------------------------------------
def _per_channel(values: Any, channels: int, name: str, what: str) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float32).reshape(-1)
    if arr.size == 1:
        arr = np.repeat(arr, channels)
    if arr.size != channels:
        raise ConfigError(f"{what}: {name} has {arr.size} values for {channels} channels",
                          hint=f"give one value, or one per channel ({channels})")
    return arr


class Normalize(ImageStep):
    """``(x - mean) / std`` per channel on float32 ``[N, C, H, W]`` (``torchvision.transforms.v2.functional
    .normalize``: ``image.sub(mean).div(std)`` in float32).

    Raises :class:`~onegraph.errors.ConfigError` for a zero std, a count of values that is not the channel
    count, or a uint8 / NHWC input (convert with ToFloat and ToCHW first).
    """

    takes = ("NCHW",)
    match = "torchvision"

    def __init__(self, mean: Any, std: Any) -> None:
        self.mean = finite_numbers("mean", mean, "Normalize")
        self.std = finite_numbers("std", std, "Normalize")
        if any(s == 0 for s in self.std):
            raise ConfigError(f"Normalize: std={std!r} holds a zero", hint="give positive standard deviations")

    def emit(self, g: GraphBuilder, t: Tensor) -> Tensor:
        self.check(t)
        if t.dtype != FLOAT:
            raise ConfigError("Normalize takes float32 images, the step before gives uint8",
                              hint="add ToFloat() before Normalize")
        shape = (1, t.channels, 1, 1)
        mean = g.const(_per_channel(self.mean, t.channels, "mean", "Normalize").reshape(shape), "mean")
        std = g.const(_per_channel(self.std, t.channels, "std", "Normalize").reshape(shape), "std")
        return t.with_value(g.op("Div", g.op("Sub", t.value, mean, dtype=FLOAT), std, dtype=FLOAT))

    def reference(self, x: np.ndarray, layout: str) -> np.ndarray:
        import torch

        c = x.shape[1]
        mean = torch.tensor(_per_channel(self.mean, c, "mean", "Normalize")).view(1, c, 1, 1)
        std = torch.tensor(_per_channel(self.std, c, "std", "Normalize")).view(1, c, 1, 1)
        return torch.from_numpy(x).sub(mean).div(std).numpy()


class ToFloat(ImageStep):
    """uint8 -> float32 divided by ``scale`` (default 255: ``torchvision.transforms.ToTensor``'s
    ``img.float().div(255)``); layout kept. Raises :class:`~onegraph.errors.ConfigError` on float input."""

    match = "torchvision"

    def __init__(self, scale: float = 255.0) -> None:
        (self.scale,) = finite_numbers("scale", scale, "ToFloat", positive=True)

    def emit(self, g: GraphBuilder, t: Tensor) -> Tensor:
        self.check(t)
        if t.dtype != UINT8:
            raise ConfigError("ToFloat takes uint8 images, the step before gives float32", hint="remove ToFloat")
        x = g.op("Cast", t.value, to=FLOAT, dtype=FLOAT)
        return t.with_value(g.op("Div", x, g.const(np.float32(self.scale), "scale"), dtype=FLOAT), dtype=FLOAT)

    def reference(self, x: np.ndarray, layout: str) -> np.ndarray:
        import torch

        return torch.from_numpy(x).float().div(self.scale).numpy()


class ToUInt8(ImageStep):
    """float32 -> uint8 times ``scale`` (255), layout kept.

    ``rounding="round"``: ``clip(rint(x * scale), 0, 255)`` (round half to even: scikit-image's
    ``img_as_ubyte`` on [0, 1] data, NumPy's ``rint``); ``rounding="torchvision"``: ``(x * (scale + 1 - 1e-3))``
    truncated (``torchvision.transforms.v2.functional.to_dtype(..., torch.uint8, scale=True)``), then clipped.

    Raises :class:`~onegraph.errors.ConfigError` on uint8 input or another rounding.
    """

    def __init__(self, scale: float = 255.0, *, rounding: str = "round") -> None:
        (self.scale,) = finite_numbers("scale", scale, "ToUInt8", positive=True)
        self.rounding = choice("rounding", rounding, ("round", "torchvision"), "ToUInt8")
        self.match = "skimage" if rounding == "round" else "torchvision"

    def emit(self, g: GraphBuilder, t: Tensor) -> Tensor:
        self.check(t)
        if t.dtype != FLOAT:
            raise ConfigError("ToUInt8 takes float32 images, the step before gives uint8", hint="remove ToUInt8")
        factor = self.scale if self.rounding == "round" else self.scale + 1.0 - 1e-3
        x = g.op("Mul", t.value, g.const(np.float32(factor), "scale"), dtype=FLOAT)
        x = g.op("Round" if self.rounding == "round" else "Floor", x, dtype=FLOAT)
        x = g.op("Clip", x, g.const(np.float32(0), "lo"), g.const(np.float32(255), "hi"), dtype=FLOAT)
        return t.with_value(g.op("Cast", x, to=UINT8, dtype=UINT8), dtype=UINT8)

    def reference(self, x: np.ndarray, layout: str) -> np.ndarray:
        if self.rounding == "round":
            from skimage.util import img_as_ubyte

            return img_as_ubyte(np.clip(x * np.float32(self.scale / 255.0), 0, 1))
        import torch  # torchvision's float -> uint8 conversion, on torch (torchvision is not installable here)

        y = torch.from_numpy(x).mul(self.scale + 1.0 - 1e-3)
        return y.clamp(0, 255).to(torch.uint8).numpy()


# -- layout and colour ----------------------------------------------------------------------------------------
class ToCHW(ImageStep):
    """``[N, H, W, C]`` -> ``[N, C, H, W]`` (``numpy.transpose(0, 3, 1, 2)``)."""

    takes = ("NHWC",)
    match = "numpy"

    def emit(self, g: GraphBuilder, t: Tensor) -> Tensor:
        self.check(t)
        return t.with_value(g.op("Transpose", t.value, perm=[0, 3, 1, 2], dtype=t.dtype), layout="NCHW")

    def reference(self, x: np.ndarray, layout: str) -> np.ndarray:
        return np.ascontiguousarray(x.transpose(0, 3, 1, 2))


class ToHWC(ImageStep):
    """``[N, C, H, W]`` -> ``[N, H, W, C]``."""

    takes = ("NCHW",)
    match = "numpy"

    def emit(self, g: GraphBuilder, t: Tensor) -> Tensor:
        self.check(t)
        return t.with_value(g.op("Transpose", t.value, perm=[0, 2, 3, 1], dtype=t.dtype), layout="NHWC")

    def reference(self, x: np.ndarray, layout: str) -> np.ndarray:
        return np.ascontiguousarray(x.transpose(0, 2, 3, 1))


#: (R, G, B) integer weights and shift of each library's uint8 RGB -> gray conversion
GRAY_WEIGHTS = {
    # Pillow src/libImaging/Convert.c: L24 = R*19595 + G*38470 + B*7471 + 0x8000, >> 16 (ITU-R 601-2 luma)
    "pil": ((19595, 38470, 7471), 16),
    # OpenCV 5.0 cvtColor(COLOR_RGB2GRAY / BGR2GRAY) on 8U: 15-bit weights 9798, 19235, 3735, rounded (OpenCV
    # 4's 14-bit 4899, 9617, 1868 differ on ~1 pixel in 2,000); tests/test_media_image.py checks every pixel
    "opencv": ((9798, 19235, 3735), 15),
}


class ColorConvert(ImageStep):
    """Colour conversion of uint8 ``[N, H, W, C]`` images.

    ``conversion``: ``"rgb2bgr"`` / ``"bgr2rgb"`` (channel order reversed), ``"rgb2gray"`` / ``"bgr2gray"``
    (one channel, with the library's integer luma weights: ``match="pil"``: ``Image.convert("L")``,
    ``match="opencv"``: ``cv2.cvtColor(..., COLOR_RGB2GRAY)``).

    Raises :class:`~onegraph.errors.ConfigError` for another conversion or library, or an input that is not
    uint8 NHWC with 3 channels.
    """

    takes = ("NHWC",)

    def __init__(self, conversion: str, *, match: str = "pil") -> None:
        self.conversion = choice("conversion", conversion, ("rgb2bgr", "bgr2rgb", "rgb2gray", "bgr2gray"),
                                 "ColorConvert")
        self.match = choice("match", match, tuple(GRAY_WEIGHTS), "ColorConvert")
        if conversion == "bgr2gray" and match == "pil":
            raise ConfigError("ColorConvert: Pillow has no BGR images (conversion='bgr2gray', match='pil')",
                              hint="use match='opencv', or convert with 'bgr2rgb' first")

    def emit(self, g: GraphBuilder, t: Tensor) -> Tensor:
        self.check(t)
        if t.dtype != UINT8 or t.channels != 3:
            raise ConfigError(f"ColorConvert({self.conversion!r}) takes uint8 images with 3 channels, the step "
                              f"before gives {t.channels} channel(s)", hint="convert before ToFloat / ToCHW")
        if self.conversion in ("rgb2bgr", "bgr2rgb"):
            flipped = g.op("Gather", t.value, ints(g, [2, 1, 0]), axis=3, dtype=UINT8)
            return t.with_value(flipped)
        (r, gw, b), shift = GRAY_WEIGHTS[self.match]
        weights = [r, gw, b] if self.conversion == "rgb2gray" else [b, gw, r]
        x = g.op("Cast", t.value, to=rs.INT32, dtype=rs.INT32)
        x = g.op("MatMul", x, g.const(np.asarray(weights, np.int32).reshape(3, 1), "luma"), dtype=rs.INT32)
        x = g.op("Add", x, g.const(np.int32(1 << (shift - 1)), "half"), dtype=rs.INT32)
        x = g.op("Div", x, g.const(np.int32(1 << shift), "unit"), dtype=rs.INT32)
        return t.with_value(g.op("Cast", x, to=UINT8, dtype=UINT8), channels=1)

    def reference(self, x: np.ndarray, layout: str) -> np.ndarray:
        if self.conversion in ("rgb2bgr", "bgr2rgb"):
            import cv2

            return np.stack([cv2.cvtColor(img, cv2.COLOR_RGB2BGR) for img in x])
        if self.match == "pil":
            from PIL import Image

            return np.stack([np.asarray(Image.fromarray(img).convert("L"))[..., None] for img in x])
        import cv2

        code = cv2.COLOR_RGB2GRAY if self.conversion == "rgb2gray" else cv2.COLOR_BGR2GRAY
        return np.stack([cv2.cvtColor(img, code)[..., None] for img in x])
