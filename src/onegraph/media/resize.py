"""``Resize``: the resize of Pillow, torchvision (torch's ``interpolate``) or OpenCV, as the graph computes it.

Two separable passes, width then height (:mod:`onegraph.media.resample` computes each library's tap tables
in the graph from the runtime size); uint8 modes keep the library's integer arithmetic. Bounds per mode are in
:mod:`onegraph.media.image`'s table.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import onnx_ir as ir

from onegraph.emit import FLOAT, INT64, GraphBuilder
from onegraph.errors import ConfigError
from onegraph.frame.tensors import Val
from onegraph.media import resample as rs
from onegraph.media.tensor import UINT8, ImageStep, Tensor, choice, ints, positive_ints

__all__ = ["INTERPOLATIONS", "Resize"]

INTERPOLATIONS = {
    "pil": ("nearest", "bilinear", "bicubic", "area"),
    "torchvision": ("nearest", "nearest-exact", "bilinear", "bicubic", "area"),
    "opencv": ("nearest", "bilinear"),
}
_PIL_FILTERS = {"bilinear": "bilinear", "bicubic": "bicubic", "area": "box"}


# -- resize ---------------------------------------------------------------------------------------------
class Resize(ImageStep):
    """Resize every image to ``size = (height, width)`` as the library ``match`` does.

    Parameters
    ----------
    size: (height, width) of the output, pixels.
    interpolation: ``"nearest"``, ``"bilinear"``, ``"bicubic"``, ``"area"`` (Pillow's BOX filter, torch's
        ``mode="area"``), or torch's ``"nearest-exact"``.
    antialias: torchvision: filter when downscaling (default True for bilinear / bicubic, as torchvision 0.17+;
        False gives ``interpolate(..., antialias=False)``). Pillow always filters: only None / True.
    match: ``"pil"`` (``Image.resize(size[::-1], resample=...)``, per channel, mode "L" / "RGB" for uint8,
        "F" for float32), ``"opencv"`` (``cv2.resize(img, size[::-1], interpolation=INTER_NEAREST / INTER_LINEAR)``,
        OpenCV 5; bilinear on uint8 only) or ``"torchvision"`` (``torchvision.transforms.v2.functional.resize`` on tensors,
        i.e. ``torch.nn.functional.interpolate(x, size, mode, align_corners=False, antialias=...)``; tested
        against interpolate, torchvision itself is not installable beside torch 2.13).

    Takes ``uint8`` / ``float32`` in either layout; gives the same dtype and layout.

    Raises
    ------
    ConfigError
        for a size that is not two positive ints, an interpolation the library does not have, or antialias
        the library cannot turn off / does not apply to the mode.
    """

    def __init__(self, size: Any, interpolation: str = "bilinear", *, antialias: bool | None = None,
                 match: str = "pil") -> None:
        what = f"Resize(match={match!r})"
        self.match = choice("match", match, tuple(INTERPOLATIONS), "Resize")
        self.size = positive_ints("size", size, 2, what)
        self.interpolation = choice("interpolation", interpolation, INTERPOLATIONS[match], what)
        filtered = interpolation in ("bilinear", "bicubic")
        if match == "opencv" and antialias:
            raise ConfigError(f"{what}: cv2.resize does not antialias (antialias=True)",
                              hint="leave antialias unset, or use match='pil' / 'torchvision'")
        if match == "pil" and antialias is False and interpolation != "nearest":
            raise ConfigError(f"{what}: Pillow always antialiases {interpolation} (antialias=False)",
                              hint="leave antialias unset, or use match='torchvision' for antialias=False")
        if antialias and not filtered:
            raise ConfigError(f"{what}: interpolation={interpolation!r} has no antialias filter (antialias=True)",
                              hint="leave antialias unset for nearest and area")
        self.antialias = (antialias is not False) if filtered and match != "opencv" else False

    # the tables of one axis, for this library and mode
    def _table(self, n_in: Val, n_out: int) -> rs.Table:
        mode = self.interpolation
        if self.match == "opencv":
            return rs.opencv_nearest_table(n_in, n_out) if mode == "nearest" else rs.opencv_linear_table(n_in, n_out)
        if self.match == "pil":
            if mode == "nearest":
                return rs.pil_nearest_table(n_in, n_out)
            return rs.antialias_table(n_in, n_out, _PIL_FILTERS[mode])
        if mode in ("nearest", "nearest-exact"):
            return rs.torch_nearest_table(n_in, n_out, exact=mode == "nearest-exact")
        if mode == "area":
            return rs.torch_area_table(n_in, n_out)
        if self.antialias:
            return rs.torch_antialias_table(n_in, n_out, mode)
        return rs.torch_linear_table(n_in, n_out) if mode == "bilinear" else rs.torch_cubic_table(n_in, n_out)

    def emit(self, g: GraphBuilder, t: Tensor) -> Tensor:
        self.check(t)
        h_axis, w_axis = t.spatial_axes
        x = t.value
        nearest = self.interpolation.startswith("nearest")
        if self.match == "opencv" and not nearest:
            if t.dtype != UINT8:  # its float SIMD path differs from the scalar formula by up to ~1e-5 of the range
                raise ConfigError("Resize(match='opencv', interpolation='bilinear') takes uint8 images",
                                  hint="resize before ToFloat, or use match='pil' / 'torchvision' for float32 images")
            return t.with_value(_opencv_linear_uint8(g, x, t, self.size))
        # torchvision sends uint8 to torch's own uint8 kernels for bilinear / bicubic, area through float32
        native = nearest or self.match == "pil" or (t.dtype == UINT8 and self.interpolation != "area")
        work = t.dtype if native else FLOAT
        if work != t.dtype:
            x = g.op("Cast", x, to=work, dtype=work)
        if nearest:
            for axis, n_out in ((w_axis, self.size[1]), (h_axis, self.size[0])):
                index = g.op("Squeeze", self._table(rs.size_of(g, x, axis), n_out).index.value, ints(g, [1]),
                             dtype=INT64)
                x = g.op("Gather", x, index, axis=axis, dtype=work)
        elif self.match == "pil":
            # Pillow 13's ImagingResampleInner passes vertically first when the height shrinks by more than
            # twice what the width does (the uint8 / float32 rounding between the passes depends on the
            # order): decided here from the runtime size, as Pillow decides it
            height, width = rs.size_of(g, x, h_axis), rs.size_of(g, x, w_axis)
            shrink_h = height - rs.const_int(g, self.size[0])
            shrink_w = width - rs.const_int(g, self.size[1])
            first = (shrink_h > 0) & (shrink_h > shrink_w * 2)
            x = g.branch(first.value, lambda: self._passes(g, x, t.layout, work, "HW"),
                         lambda: self._passes(g, x, t.layout, work, "WH"), work)
        else:
            x = self._passes(g, x, t.layout, work, "WH")  # width first, as torch does
        if work != t.dtype:  # torchvision's float path for uint8: clamp (bicubic overshoots), round, cast
            x = g.op("Clip", x, g.const(np.float32(0), "lo"), g.const(np.float32(255), "hi"), dtype=FLOAT)
            x = g.op("Cast", g.op("Round", x, dtype=FLOAT), to=UINT8, dtype=UINT8)
        return t.with_value(x)

    def _passes(self, g: GraphBuilder, x: Any, layout: str, work: ir.DataType, order: str) -> Any:
        """The two filtered passes over ``x`` (``layout``, dtype ``work``), the axes of ``order`` (``"WH"``:
        width first) in turn. Each pass gathers along axis 0, so a tap is one contiguous block and its weight
        one scalar per block (onnxruntime broadcasts that fast; along an inner axis it walks spans of 3
        channels), and moving one axis to the front is a fast path of its Transpose."""
        axes = list(layout)
        counts = {}
        for letter in order:
            perm = [axes.index(letter)] + [i for i, a in enumerate(axes) if a != letter]
            x = g.op("Transpose", x, perm=perm, dtype=x.dtype)
            axes = [axes[i] for i in perm]
            n_out = self.size[0] if letter == "H" else self.size[1]
            n_in = rs.size_of(g, x, 0)
            if work == UINT8:
                if self.match == "pil":
                    table = self._table(n_in, n_out)
                    table, bits = rs.Table(table.index, rs.fixed_point(table.weight), table.taps), rs.const_int(g, 22)
                else:
                    table, bits = rs.torch_uint8_table(n_in, n_out, self.interpolation, self.antialias)
                x = _uint8_pass(g, x, 0, table, n_out, bits)
                continue
            table = self._table(n_in, n_out)
            if self.match == "pil":  # mode "F": double sums, stored as float32 after each pass
                x = g.op("Cast", rs.apply(g, x, 0, 4, table, n_out, rs.DOUBLE), to=FLOAT, dtype=FLOAT)
            else:
                x = rs.apply(g, x, 0, 4, table, n_out, FLOAT)
            if table.count is not None:
                counts[letter] = table.count.cast(FLOAT)
        for letter in ("H", "W"):  # adaptive_avg_pool2d: sum / kh / kw, in that order (float32 rounding)
            if letter in counts:
                shape = [1] * 4
                shape[axes.index(letter)] = self.size[0] if letter == "H" else self.size[1]
                x = g.op("Div", x, g.op("Reshape", counts[letter].value, ints(g, shape), dtype=FLOAT), dtype=FLOAT)
        return g.op("Transpose", x, perm=[axes.index(a) for a in layout], dtype=x.dtype)

    def reference(self, x: np.ndarray, layout: str) -> np.ndarray:
        if self.match == "pil":
            return _pil_resize(x, self.size, self.interpolation, layout)
        if self.match == "opencv":
            import cv2

            flag = cv2.INTER_NEAREST if self.interpolation == "nearest" else cv2.INTER_LINEAR
            nhwc = x.transpose(0, 2, 3, 1) if layout == "NCHW" else x
            y = np.stack([cv2.resize(np.ascontiguousarray(img), self.size[::-1], interpolation=flag) for img in nhwc])
            y = y.reshape(y.shape[:3] + (nhwc.shape[3],))  # cv2 drops a single channel
            return y.transpose(0, 3, 1, 2) if layout == "NCHW" else y
        import torch
        import torch.nn.functional as F

        nhwc = layout == "NHWC"
        tx = torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2) if nhwc else x))
        mode = "bilinear" if self.interpolation == "bilinear" else self.interpolation
        kwargs = {"antialias": self.antialias} if mode in ("bilinear", "bicubic") else {}
        if mode in ("bilinear", "bicubic"):
            kwargs["align_corners"] = False
        # torchvision's resize_image: uint8 goes to torch's own uint8 kernels for nearest, bilinear, bicubic;
        # otherwise through float32, clamped (bicubic), rounded and cast back
        native = x.dtype != np.uint8 or mode in ("nearest", "nearest-exact", "bilinear", "bicubic")
        y = F.interpolate(tx if native else tx.float(), size=self.size, mode=mode, **kwargs)
        if not native:
            y = (y.clamp(0, 255) if mode == "bicubic" else y).round().to(torch.uint8)
        y = y.numpy()
        return y.transpose(0, 2, 3, 1) if nhwc else y


def _uint8_pass(g: GraphBuilder, x: Any, axis: int, table: rs.Table, n_out: int, bits: Val) -> Any:
    """One uint8 pass of Pillow's ``ImagingResampleHorizontal_8bpc`` / ``Vertical_8bpc`` (``bits`` = 22) or
    torch's uint8 kernels (``bits`` = its weights precision): the int32 sum of pixel times fixed-point weight,
    plus ``1 << (bits - 1)``, shifted right by ``bits`` and clamped to 0..255 (``clip8``)."""
    unit = Val(g, g.op("Pow", g.const(np.float64(2.0), "two"), bits.cast(rs.DOUBLE).value, dtype=rs.DOUBLE),
               rs.DOUBLE)
    unit = unit.cast(rs.INT32)
    half = Val(g, g.op("Div", unit.value, g.const(np.int32(2), "two32"), dtype=rs.INT32), rs.INT32)
    total = rs.apply(g, x, axis, 4, table, n_out, rs.INT32)
    total = g.op("Add", total, half.value, dtype=rs.INT32)
    top = g.op("Mul", unit.value, g.const(np.int32(255), "max8"), dtype=rs.INT32)
    total = g.op("Clip", total, g.const(np.int32(0), "lo"), top, dtype=rs.INT32)
    total = g.op("Div", total, unit.value, dtype=rs.INT32)
    return g.op("Cast", total, to=UINT8, dtype=UINT8)


def _opencv_linear_uint8(g: GraphBuilder, x: Any, t: Tensor, size: tuple[int, int]) -> Any:
    """``cv2.resize(INTER_LINEAR)`` on uint8: coefficients ``saturate_cast<short>(w * 2048)`` (rounded half to
    even); the width pass keeps int sums ``S = p0 * a0 + p1 * a1``; the height pass is OpenCV's SIMD one
    (``VResizeLinearVec_32s8u``): ``(((S0 >> 4) * b0 >> 16) + ((S1 >> 4) * b1 >> 16) + 2) >> 2``, saturated."""
    h_axis, w_axis = t.spatial_axes

    def fixed(table: rs.Table) -> rs.Table:
        coef = (table.weight * 2048.0).unary("Round").cast(INT64)
        return rs.Table(table.index, coef, table.taps)

    sums = rs.apply(g, x, w_axis, 4, fixed(rs.opencv_linear_table(rs.size_of(g, x, w_axis), size[1])), size[1],
                    rs.INT32)
    table = fixed(rs.opencv_linear_table(rs.size_of(g, sums, h_axis), size[0]))
    shape = ints(g, [size[0]] + [1] * (3 - h_axis))
    parts = []
    for k in (0, 1):
        pick = g.const(np.int64(k), "tap")
        rows = g.op("Gather", sums, g.op("Gather", table.index.value, pick, axis=1, dtype=INT64), axis=h_axis,
                    dtype=rs.INT32)
        beta = g.op("Reshape", g.op("Cast", g.op("Gather", table.weight.value, pick, axis=1, dtype=INT64), to=rs.INT32,
                                    dtype=rs.INT32), shape, dtype=rs.INT32)
        high = g.op("Mul", g.op("Div", rows, g.const(np.int32(16), "s4"), dtype=rs.INT32), beta, dtype=rs.INT32)
        parts.append(g.op("Div", high, g.const(np.int32(1 << 16), "s16"), dtype=rs.INT32))
    total = g.op("Add", g.op("Add", parts[0], parts[1], dtype=rs.INT32), g.const(np.int32(2), "two32"), dtype=rs.INT32)
    total = g.op("Div", total, g.const(np.int32(4), "s2"), dtype=rs.INT32)
    total = g.op("Clip", total, g.const(np.int32(0), "lo"), g.const(np.int32(255), "hi"), dtype=rs.INT32)
    return g.op("Cast", total, to=UINT8, dtype=UINT8)


def _pil_resize(x: np.ndarray, size: tuple[int, int], interpolation: str, layout: str) -> np.ndarray:
    from PIL import Image

    resample = {"nearest": Image.Resampling.NEAREST, "bilinear": Image.Resampling.BILINEAR,
                "bicubic": Image.Resampling.BICUBIC, "area": Image.Resampling.BOX}[interpolation]
    h, w = size
    nchw = x.transpose(0, 3, 1, 2) if layout == "NHWC" else x
    out = []
    for img in nchw:
        if x.dtype == np.uint8 and len(img) == 3:  # mode RGB
            out.append(np.asarray(Image.fromarray(np.ascontiguousarray(img.transpose(1, 2, 0)))
                                  .resize((w, h), resample=resample)).transpose(2, 0, 1))
        else:  # mode L (uint8) or F (float32), one image per channel
            out.append(np.stack([np.asarray(Image.fromarray(np.ascontiguousarray(ch)).resize((w, h), resample=resample))
                                 for ch in img]))
    y = np.stack(out)
    return y.transpose(0, 2, 3, 1) if layout == "NHWC" else y


