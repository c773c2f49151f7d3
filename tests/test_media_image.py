"""Image steps: the graph in onnxruntime against the library each names, on real photographs.

Bounds, and why (see also onegraph.media.image's table):
* uint8 results are compared exactly: the graph computes the libraries' own integer arithmetic (Pillow's
  22-bit fixed-point weights and uint8 rounding between passes; torch's int16 weights with their computed
  precision; integer luma formulas) and copies for nearest / crop / pad / transpose.
* float32 results within 1e-5 of the image's largest value: each pass is a sum of at most a few dozen
  products of float32 values, whose rounding is bounded by (taps x 2^-24) of the largest term, ~2e-6 here,
  and the libraries round in another order (or in double, Pillow's mode "F").
"""

from __future__ import annotations

import numpy as np
import pytest

from media_helpers import assert_close_to_max, camera, photos, run
from onegraph.errors import ConfigError, DataError
from onegraph.media import image as im
from onegraph.media.pipeline import ImagePipeline, build

SIZES = [(224, 224), (97, 301), (613, 700)]  # down, mixed, up; odd factors
FLOAT_RTOL = 1e-5


def float_photos() -> np.ndarray:
    return (photos().transpose(0, 3, 1, 2) / np.float32(255)).astype(np.float32)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("mode", ["nearest", "bilinear", "bicubic", "area"])
def test_pil_uint8_exact(mode, size):
    step = im.Resize(size, mode, match="pil")
    got = run(ImagePipeline([step]), photos())
    np.testing.assert_array_equal(got, step.reference(photos(), "NHWC"))


@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "area"])
def test_pil_passes_in_pillows_order(mode):
    """Pillow 13 passes vertically first when the height shrinks by more than twice what the width does (its
    ImagingResampleInner), and the rounding between the passes depends on the order: portrait photos (the two
    photographs turned) take the height-first branch of the graph's If, landscape ones the other; uint8
    exactly and float32 within the bound above (was up to 13 levels off for portrait images)."""
    step = im.Resize((97, 224), mode, match="pil")
    portrait = np.ascontiguousarray(photos().transpose(0, 2, 1, 3))  # 451 x 300: 354 rows less, 76 columns less
    for batch in (portrait, photos(), portrait[:, :120]):  # height first; width first; 120 x 300: width first
        np.testing.assert_array_equal(run(ImagePipeline([step]), batch), step.reference(batch, "NHWC"))
    x = (portrait.transpose(0, 3, 1, 2) / np.float32(255)).astype(np.float32)
    assert_close_to_max(run(ImagePipeline([step], dtype="float32"), x), step.reference(x, "NCHW"), FLOAT_RTOL)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "area", "nearest"])
def test_pil_gray_and_float(mode):
    step = im.Resize((200, 333), mode, match="pil")
    np.testing.assert_array_equal(run(ImagePipeline([step], channels=1), camera()), step.reference(camera(), "NHWC"))
    x = float_photos()
    assert_close_to_max(run(ImagePipeline([step], dtype="float32"), x), step.reference(x, "NCHW"), FLOAT_RTOL)


TORCH_MODES = [("nearest", None), ("nearest-exact", None), ("bilinear", True), ("bilinear", False),
               ("bicubic", True), ("bicubic", False), ("area", None)]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("mode,antialias", TORCH_MODES)
def test_torchvision(mode, antialias, size):
    step = im.Resize(size, mode, antialias=antialias, match="torchvision")
    x = float_photos()
    assert_close_to_max(run(ImagePipeline([step], dtype="float32"), x), step.reference(x, "NCHW"), FLOAT_RTOL)
    np.testing.assert_array_equal(run(ImagePipeline([step]), photos()), step.reference(photos(), "NHWC"))


@pytest.mark.parametrize("size", SIZES + [(150, 225)])
def test_opencv(size):
    nearest = im.Resize(size, "nearest", match="opencv")
    np.testing.assert_array_equal(run(ImagePipeline([nearest]), photos()), nearest.reference(photos(), "NHWC"))
    x = float_photos()
    np.testing.assert_array_equal(run(ImagePipeline([nearest], dtype="float32"), x), nearest.reference(x, "NCHW"))
    linear = im.Resize(size, "bilinear", match="opencv")
    got = run(ImagePipeline([linear]), photos()).astype(int)
    diff = np.abs(got - linear.reference(photos(), "NHWC").astype(int))
    if size[0] <= 300 and size[1] <= 451:  # downscales: OpenCV's SIMD height pass, bit for bit
        assert diff.max() == 0
    else:  # upscales: OpenCV rounds some pixels on another path (it is not bit-exact, see INTER_LINEAR_EXACT)
        assert diff.max() <= 1 and diff.mean() < 1e-3


@pytest.mark.parametrize("size", [(200, 300), (301, 460), (120, 451)])
def test_center_crop(size):
    step = im.CenterCrop(size)  # smaller, larger (zero padded), and mixed
    np.testing.assert_array_equal(run(ImagePipeline([step]), photos()), step.reference(photos(), "NHWC"))
    x = float_photos()
    np.testing.assert_array_equal(run(ImagePipeline([step], dtype="float32"), x), step.reference(x, "NCHW"))


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
def test_pad(mode):
    step = im.Pad((3, 10, 0, 7), fill=17, mode=mode)
    np.testing.assert_array_equal(run(ImagePipeline([step]), photos()), step.reference(photos(), "NHWC"))
    x = float_photos()
    np.testing.assert_array_equal(run(ImagePipeline([step], dtype="float32"), x), step.reference(x, "NCHW"))


def test_values_and_layout():
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]  # ImageNet's, as torchvision's examples
    steps = [im.ToFloat(), im.ToCHW(), im.Normalize(mean, std)]
    x = photos()
    expected = x
    for step, layout in zip(steps, ["NHWC", "NHWC", "NCHW"]):
        expected = step.reference(expected, layout)
    got = run(ImagePipeline(steps), x)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)  # the same float32 operations
    back = [im.ToFloat(), im.ToCHW(), im.ToHWC()]
    for rounding in ("round", "torchvision"):
        to8 = im.ToUInt8(rounding=rounding)
        floats = run(ImagePipeline(back), x)
        np.testing.assert_array_equal(run(ImagePipeline([*back, to8]), x), to8.reference(floats, "NHWC"))
        if rounding == "round":
            np.testing.assert_array_equal(run(ImagePipeline([*back, to8]), x), x)  # x / 255 * 255 rounds back


@pytest.mark.parametrize("conversion,match", [("rgb2gray", "pil"), ("rgb2gray", "opencv"), ("bgr2gray", "opencv"),
                                              ("rgb2bgr", "opencv")])
def test_color_convert(conversion, match):
    step = im.ColorConvert(conversion, match=match)
    np.testing.assert_array_equal(run(ImagePipeline([step]), photos()), step.reference(photos(), "NHWC"))


def test_steps_compose_pil_order():
    """Resize then crop then gray equals the libraries applied in turn, exactly."""
    pipe = ImagePipeline([im.Resize((256, 384), "bicubic"), im.CenterCrop((224, 224)), im.ColorConvert("rgb2gray")])
    np.testing.assert_array_equal(run(pipe, photos()), pipe.reference(photos()))


@pytest.mark.parametrize("make,words", [
    (lambda: im.Resize((10, 10), "lanczos"), "interpolation='lanczos'"),
    (lambda: im.Resize((10, 10), "bilinear", antialias=False), "always antialiases"),
    (lambda: im.Resize((10, 10), "nearest", antialias=True, match="torchvision"), "no antialias"),
    (lambda: im.Resize((10, 10), match="opencv2"), "match='opencv2'"),
    (lambda: im.Resize((10, 10), "bicubic", match="opencv"), "interpolation='bicubic'"),
    (lambda: im.Resize((10, 10), antialias=True, match="opencv"), "does not antialias"),
    (lambda: im.Resize(10), "size=10"),
    (lambda: im.Resize((0, 5)), "positive"),
    (lambda: im.Pad((1, 2)), "four"),
    (lambda: im.Normalize([0.5], [0.0]), "zero"),
    (lambda: im.ColorConvert("bgr2gray", match="pil"), "BGR"),
])
def test_bad_parameters_name_them(make, words):
    with pytest.raises(ConfigError, match=words.replace("(", r"\(").replace(")", r"\)")):
        make()


def test_steps_that_do_not_fit():
    with pytest.raises(ConfigError, match="takes uint8 images"):
        ImagePipeline([im.Resize((8, 8), match="opencv")], dtype="float32").to_onnx()
    with pytest.raises(ConfigError, match="add ToFloat"):
        ImagePipeline([im.ToCHW(), im.Normalize([0.5] * 3, [0.5] * 3)]).to_onnx()
    with pytest.raises(ConfigError, match="takes NCHW"):
        ImagePipeline([im.ToFloat(), im.Normalize([0.5] * 3, [0.5] * 3)]).to_onnx()
    with pytest.raises(ConfigError, match="2 values for 3 channels"):
        ImagePipeline([im.ToFloat(), im.ToCHW(), im.Normalize([0.5, 0.5], [0.5, 0.5])]).to_onnx()


def test_bad_sample_names_dtype_and_shape():
    pipe = ImagePipeline([im.Resize((32, 32))])
    with pytest.raises(DataError, match="takes uint8"):
        build(pipe, None, photos().astype(np.float32))
    with pytest.raises(DataError, match="has shape"):
        build(pipe, None, photos()[0])
    with pytest.raises(DataError, match="axis 3"):
        build(pipe, None, camera())
