"""onnx's native functions on models derived from untrusted files: run in the checking process.

A file passes the check (:mod:`onegraph.check.loader`) before onnx code runs on it here. The tools that then
*transform* it — opset conversion (functions converted one by one, nodes rewritten), float16 conversion,
runtime comparison (functions inlined, every tensor exposed), fusion — hand onnx's C++ code graphs nobody
checked: onnx's version converter, shape inference and checker crash on some of them (a segfault found by the
campaign of :mod:`onegraph.campaign`). These wrappers run them in the checking process, under its limits, on
the derived model's bytes; the result comes back as the bytes onnx serialized, parsed here.

* an exception onnx raises there (``InferenceError``, ``ValidationError``, the converter's ``RuntimeError``...)
  is raised here again, as the same type where onnx defines it, so callers keep their ``except`` clauses;
* a crash or an exhausted limit there is :class:`NativeCrash` (a :class:`~onegraph.errors.ModelFileError`)
  naming the function and how the process ended.

``isolated=False`` runs the function in this process (the model is the caller's own: built here, or given as
an in-memory object).
"""

from __future__ import annotations

from typing import Any

from onegraph.check.limits import Limits
from onegraph.errors import ModelFileError

__all__ = ["NativeCrash", "infer_shapes", "check_model", "convert_version"]

#: what onnx's functions may use in the checking process (a converted or inlined copy of a model is a few times
#: its size)
_LIMITS = Limits(memory=8 << 30, cpu=300, wall=600)


class NativeCrash(ModelFileError):
    """onnx's native code died (a crash, a limit) on a model derived from a file; the calling process did not."""


def infer_shapes(model: Any, *, check_type: bool = False, strict_mode: bool = False, data_prop: bool = False,
                 isolated: bool = True) -> Any:
    """``onnx.shape_inference.infer_shapes(model, ...)`` (an ``onnx.ModelProto`` in, one out).

    Raises ``onnx.shape_inference.InferenceError`` as onnx does; :class:`NativeCrash` when it crashes.
    """
    options = {"check_type": check_type, "strict_mode": strict_mode, "data_prop": data_prop}
    if not isolated:
        import onnx.shape_inference

        return onnx.shape_inference.infer_shapes(model, **options)
    return _parsed(_call("infer_shapes", model, options, "onnx's shape inference"))


def check_model(model: Any, *, full_check: bool = False, isolated: bool = True) -> None:
    """``onnx.checker.check_model(model, full_check=...)``.

    Raises ``onnx.checker.ValidationError`` / ``InferenceError`` as onnx does; :class:`NativeCrash` when it crashes.
    """
    if not isolated:
        import onnx.checker

        onnx.checker.check_model(model, full_check=full_check)
        return
    _call("check_model", model, {"full_check": full_check}, "onnx's checker")


def convert_version(model: Any, target: int, *, isolated: bool = True) -> Any:
    """``onnx.version_converter.convert_version(model, target)``.

    Raises what the converter raises (``RuntimeError``, ``IndexError``, ``ValueError``...); :class:`NativeCrash`
    when it crashes.
    """
    if not isolated:
        from onnx import version_converter

        return version_converter.convert_version(model, target)
    return _parsed(_call("convert_version", model, {"target": int(target)}, "onnx's version converter"))


def _parsed(data: bytes) -> Any:
    import onnx

    return onnx.ModelProto.FromString(data)


def _call(name: str, model: Any, options: dict, what: str) -> bytes:
    from onegraph.check.sandbox import Outcome, Unavailable, shared

    data = model if isinstance(model, (bytes, bytearray)) else model.SerializeToString()
    worker, lock = shared()
    with lock:
        try:
            answer = worker.call(name, bytes(data), options, _LIMITS)
        except Unavailable as exc:
            raise ModelFileError(f"{what} could not run: {exc}") from None
    if isinstance(answer, Outcome):
        raise NativeCrash(f"{what} failed on this model in the checking process: {answer.findings[0].message}",
                          hint="the model (or what onegraph derived from it) is malformed; `onegraph check` it")
    if isinstance(answer, tuple):
        raise _exception(*answer)
    return answer


def _exception(kind: str, message: str) -> BaseException:
    """The exception onnx raised in the checking process, as the same type where onnx defines it."""
    import onnx.checker
    import onnx.shape_inference

    types = {"InferenceError": onnx.shape_inference.InferenceError, "ValidationError": onnx.checker.ValidationError,
             "MemoryError": MemoryError, "IndexError": IndexError, "ValueError": ValueError, "TypeError": TypeError,
             "KeyError": KeyError}
    return types.get(kind, RuntimeError)(message)
