"""What every pass takes: an :class:`onnx_ir.Model`, rewritten in place."""

from __future__ import annotations

from typing import Any

import onnx_ir as ir

from onegraph.errors import PassError

__all__ = ["require_ir"]


def require_ir(model: Any, function: str) -> ir.Model:
    """``model`` when it is an :class:`onnx_ir.Model`.

    Raises
    ------
    PassError
        for anything else (a path, bytes, an ``onnx.ModelProto``): a pass rewrites the model in place, so a copy
        loaded from a path would be changed and lost; the hint says how to load and save one.
    """
    if isinstance(model, ir.Model):
        return model
    raise PassError(f"{function} rewrites an onnx_ir.Model in place, not a {type(model).__name__}",
                    hint="load it with onegraph.check.load_ir(path) (or onnx_ir.from_proto(proto)), pass that, then "
                         "save it with onnx_ir.save(model, path)")
