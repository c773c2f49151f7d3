"""Box post-processing: boxes predicted on the resized image mapped back to the original, clipped, and
non-maximum suppression, as ``torchvision.ops`` defines them.

Boxes are ``float32 [N, B, 4]`` corners ``(x1, y1, x2, y2)`` in pixels (torchvision's ``xyxy``), scores
``float32 [N, B]``. The original image size is read from the image input at run time, so one graph serves
images of any size. NMS is ONNX's ``NonMaxSuppression`` (opset 11+, ``center_point_box=0``), which keeps a box
unless a higher-scoring kept box overlaps it with IoU ``> iou_threshold``, as ``torchvision.ops.nms`` does;
:meth:`BoxPostprocess.reference` is that greedy algorithm in NumPy (torchvision itself is not installable
beside torch 2.13).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx_ir as ir

from onegraph.emit import FLOAT, INT64, GraphBuilder
from onegraph.errors import ConfigError
from onegraph.media.tensor import Tensor, ints, positive_ints

__all__ = ["BoxPostprocess", "box_iou"]



class BoxPostprocess:
    """Scale boxes from the model's input frame ``from_size = (height, width)`` to each original image, clip
    them to it (``torchvision.ops.clip_boxes_to_image``) and select boxes by non-maximum suppression.

    Parameters
    ----------
    from_size: (height, width) of the image the model saw (the pipeline's Resize size), pixels.
    iou_threshold: a box is dropped when it overlaps a higher-scoring kept box with IoU above this.
    score_threshold: boxes scoring at or below it are dropped first (ONNX: ``score > threshold``).
    max_boxes: at most this many boxes kept per image.

    Raises :class:`~onegraph.errors.ConfigError` for thresholds outside [0, 1] or a non-positive max_boxes.
    """

    def __init__(self, from_size: Any, *, iou_threshold: float = 0.5, score_threshold: float = 0.0,
                 max_boxes: int = 100) -> None:
        self.from_size = positive_ints("from_size", from_size, 2, "BoxPostprocess")
        if not (0 <= iou_threshold <= 1 and 0 <= score_threshold <= 1) or int(max_boxes) < 1:
            raise ConfigError(f"BoxPostprocess: iou_threshold={iou_threshold}, score_threshold={score_threshold} "
                              f"must be in [0, 1] and max_boxes={max_boxes} >= 1")
        self.iou_threshold, self.score_threshold, self.max_boxes = float(iou_threshold), float(score_threshold), int(
            max_boxes)

    def emit(self, g: GraphBuilder, boxes: ir.Value, scores: ir.Value, image: Tensor) -> tuple[ir.Value, ir.Value]:
        """``(boxes [N, B, 4] in original pixels, selected [K, 3] int64 rows (image, 0, box))``."""
        h_axis, w_axis = image.spatial_axes
        size = g.op("Concat", *[g.op("Shape", image.value, start=a, end=a + 1, dtype=INT64) for a in (w_axis, h_axis)],
                    axis=0, dtype=INT64)  # (W, H) of the originals
        size = g.op("Cast", size, to=FLOAT, dtype=FLOAT)
        factor = g.op("Div", size, g.const(np.asarray(self.from_size[::-1], np.float32), "from_wh"), dtype=FLOAT)
        factor4 = g.op("Tile", factor, ints(g, [2]), dtype=FLOAT)  # (W/w, H/h, W/w, H/h)
        scaled = g.op("Mul", boxes, factor4, dtype=FLOAT)
        upper = g.op("Tile", size, ints(g, [2]), dtype=FLOAT)
        clipped = g.op("Min", g.op("Max", scaled, g.const(np.float32(0), "zero"), dtype=FLOAT), upper, dtype=FLOAT)
        per_class = g.op("Unsqueeze", scores, ints(g, [1]), dtype=FLOAT)  # [N, 1, B]: one class
        selected = g.op("NonMaxSuppression", clipped, per_class, ints(g, [self.max_boxes]),
                        g.const(np.array([self.iou_threshold], np.float32), "iou"),
                        g.const(np.array([self.score_threshold], np.float32), "score"), center_point_box=0,
                        dtype=INT64)
        return clipped, selected

    def reference(self, boxes: np.ndarray, scores: np.ndarray, image_shape: tuple[int, int]) -> tuple[np.ndarray, list]:
        """NumPy: the scaled, clipped boxes and, per image, the kept box indices in decreasing score order
        (``torchvision.ops.nms`` after dropping scores ``<= score_threshold``)."""
        h, w = image_shape
        fh, fw = self.from_size
        factor = np.asarray([w / fw, h / fh, w / fw, h / fh], np.float32)
        out = np.clip(boxes * factor, 0, np.asarray([w, h, w, h], np.float32))
        kept = [_nms(b, s, self.iou_threshold, self.score_threshold, self.max_boxes) for b, s in zip(out, scores)]
        return out, kept


def box_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``torchvision.ops.box_iou``: ``[len(a), len(b)]`` intersection over union of xyxy boxes."""
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    lt = np.maximum(a[:, None, :2], b[None, :, :2])
    rb = np.minimum(a[:, None, 2:], b[None, :, 2:])
    wh = np.clip(rb - lt, 0, None)
    inter = wh[..., 0] * wh[..., 1]
    return inter / (area_a[:, None] + area_b[None, :] - inter)


def _nms(boxes: np.ndarray, scores: np.ndarray, iou: float, floor: float, limit: int) -> list[int]:
    order = [i for i in np.argsort(-scores, kind="stable") if scores[i] > floor]
    kept: list[int] = []
    for i in order:
        if len(kept) == limit:
            break
        if not kept or box_iou(boxes[[i]], boxes[kept]).max() <= iou:
            kept.append(int(i))
    return kept
