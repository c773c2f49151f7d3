"""Shared by the media tests: real images and speech, and one way to run steps as a built graph."""

from __future__ import annotations

import functools
import pathlib

import numpy as np

from onegraph.media.pipeline import MediaPipeline
from onegraph.runtime.session import Session
from onegraph.verify.portable import portability_problems

SPEECH = pathlib.Path(__file__).parent / "data" / "speech"
ROOT = pathlib.Path(__file__).resolve().parent.parent


def examples(folder: str, module: str):
    """``examples/<folder>/<module>.py`` imported (the examples are scripts, not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"examples_{folder}_{module}",
                                                  ROOT / "examples" / folder / f"{module}.py")
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded


@functools.cache
def photos() -> np.ndarray:
    """uint8 [2, 300, 451, 3]: scikit-image's bundled chelsea (the cat, 300 x 451) and the top-left 300 x 451
    of astronaut (512 x 512): two real photographs of one size, so they form one batch."""
    import skimage.data

    return np.stack([skimage.data.chelsea(), skimage.data.astronaut()[:300, :451]])


@functools.cache
def camera() -> np.ndarray:
    """uint8 [1, 512, 512, 1]: scikit-image's cameraman (gray)."""
    import skimage.data

    return skimage.data.camera()[None, ..., None]


@functools.cache
def speech(rate: int = 22050) -> np.ndarray:
    """float32 [2, T]: the espeak-ng sentence at ``rate`` Hz (tests/data/speech), and the same clip reversed."""
    import soundfile as sf

    y, sr = sf.read(SPEECH / f"sentence_{rate // 1000}k.wav", dtype="float32")
    assert sr == rate
    return np.stack([y, y[::-1].copy()])


def run(pipeline: MediaPipeline, batch: np.ndarray) -> np.ndarray:
    """The pipeline built alone (checked, portable) and run in onnxruntime on ``batch``."""
    proto = pipeline.to_onnx()
    assert not portability_problems(proto)
    session = Session(proto, trusted=True)
    (out,) = session.run_feeds({pipeline.input: batch})
    return out


def assert_close_to_max(got: np.ndarray, expected: np.ndarray, rtol: float) -> None:
    """``|got - expected| <= rtol * max|expected|`` per clip / image (the first axis)."""
    assert got.shape == expected.shape, (got.shape, expected.shape)
    for g, e in zip(got, expected):
        scale = float(np.abs(e).max())
        worst = float(np.abs(g.astype(np.float64) - e.astype(np.float64)).max())
        assert worst <= rtol * scale, f"max difference {worst:.3g} > {rtol:g} x {scale:.3g}"
