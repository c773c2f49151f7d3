"""Box post-processing against torchvision.ops' definitions, on boxes found in a real photograph.

scikit-image's coins (303 x 384, gray): Otsu threshold, connected regions, their bounding boxes as a
detector would give them on a 256 x 256 resized input, each with three jittered duplicates of lower score.
Scaling and clipping are float32 products and min / max (exact up to float32 rounding, 1e-5 relative);
NonMaxSuppression must keep exactly the boxes greedy NMS keeps, in the same order.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir
import pytest

from onegraph.emit import FLOAT, GraphBuilder
from onegraph.errors import ConfigError
from onegraph.media.boxes import BoxPostprocess
from onegraph.media.tensor import UINT8, Tensor
from onegraph.verify.portable import portability_problems

FRAME = (256, 256)


def detections(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    import skimage.data
    import skimage.filters
    import skimage.measure

    coins = skimage.data.coins()
    h, w = coins.shape
    mask = coins > skimage.filters.threshold_otsu(coins)
    rng = np.random.default_rng(seed)
    boxes, scores = [], []
    for r in skimage.measure.regionprops(skimage.measure.label(mask)):
        if r.area <= 100:
            continue
        y0, x0, y1, x1 = r.bbox
        box = np.array([x0 * FRAME[1] / w, y0 * FRAME[0] / h, x1 * FRAME[1] / w, y1 * FRAME[0] / h], np.float32)
        score = min(0.99, r.area / 3000)
        boxes.append(box)
        scores.append(score)
        for _ in range(3):
            boxes.append(box + rng.normal(0, 3, 4).astype(np.float32))
            scores.append(score * rng.uniform(0.3, 0.95))
    boxes.append(np.array([-20, -5, 300, 270], np.float32))  # runs off the frame: clipped
    scores.append(0.04)  # and below the score threshold
    return coins[None, ..., None], np.stack(boxes)[None], np.asarray(scores, np.float32)[None]


def graph(post: BoxPostprocess):
    g = GraphBuilder("boxes")
    values = {}
    for name, dtype, shape in (("image", UINT8, ["N", "H", "W", 1]), ("boxes", FLOAT, ["N", "B", 4]),
                               ("scores", FLOAT, ["N", "B"])):
        values[name] = ir.Value(name=name, shape=ir.Shape(shape), type=ir.TensorType(dtype))
        g.graph.inputs.append(values[name])
    boxes, selected = post.emit(g, values["boxes"], values["scores"], Tensor(values["image"], "NHWC", UINT8, channels=1))
    g.output(boxes, "out_boxes", FLOAT, ["N", "B", 4])
    g.output(selected, "selected", None, [None, 3])
    proto = ir.to_proto(g.to_model())
    assert not portability_problems(proto)
    import onnxruntime as ort  # no onegraph metadata on this bare graph: onnxruntime directly

    return ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])


@pytest.mark.parametrize("iou,floor,limit", [(0.5, 0.05, 100), (0.3, 0.0, 100), (0.7, 0.2, 10)])
def test_scale_clip_nms(iou, floor, limit):
    image, boxes, scores = detections()
    post = BoxPostprocess(FRAME, iou_threshold=iou, score_threshold=floor, max_boxes=limit)
    got_boxes, selected = graph(post).run(["out_boxes", "selected"], {"image": image, "boxes": boxes, "scores": scores})
    want_boxes, kept = post.reference(boxes, scores, image.shape[1:3])
    np.testing.assert_allclose(got_boxes, want_boxes, rtol=1e-5, atol=1e-4)
    assert selected[:, 0].tolist() == [0] * len(kept[0])
    assert selected[:, 2].tolist() == kept[0]
    assert 0 < len(kept[0]) <= limit


def test_bad_parameters():
    with pytest.raises(ConfigError, match="iou_threshold=1.5"):
        BoxPostprocess(FRAME, iou_threshold=1.5)
    with pytest.raises(ConfigError, match="from_size"):
        BoxPostprocess(256)
