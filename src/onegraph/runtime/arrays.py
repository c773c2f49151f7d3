"""Feeds of numpy arrays for a model without onegraph's input schema (any ONNX model): checked against the
inputs onnxruntime declares before the run, whose own message for a wrong shape is cut before the shapes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from onegraph.errors import DataError

__all__ = ["check_array_feeds"]


def check_array_feeds(inputs: Sequence[Any], feeds: Mapping[str, Any], what: str, *,
                      missing_hint: str = "give data naming each input",
                      hint: str = "give arrays of the input's shape (in .npz: one array per input)",
                      any_batch: bool = False) -> None:
    """Raise :class:`DataError` naming the input of ``what`` (``inputs``: onnxruntime's ``NodeArg`` list) that
    ``feeds`` lack, or whose array has another rank or another size along a fixed dimension, with both shapes
    (``[10, 5]`` against ``['N', 4]``). ``any_batch``: the first axis is not compared (the caller cuts the
    samples into batches of the model's size)."""
    missing = [i.name for i in inputs if i.name not in feeds]
    if missing:
        raise DataError(f"{what} takes input(s) {missing[:5]} that the data does not give (it gives "
                        f"{sorted(feeds)[:5]})", hint=missing_hint)
    for i in inputs:
        shape = np.shape(feeds[i.name])
        declared = list(i.shape)
        compared = list(zip(declared, shape))[1 if any_batch else 0:]
        fits = len(shape) == len(declared) and all(not isinstance(d, int) or d == s for d, s in compared)
        if declared and not fits:
            shown = [d if isinstance(d, int) else (d or "?") for d in declared]
            raise DataError(f"input {i.name!r} of {what}: the data's shape {list(shape)} does not fit the "
                            f"model's {shown}", hint=hint)
