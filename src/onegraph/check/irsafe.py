"""onnx-ir on models from untrusted files: its exceptions, when they mean "this model is malformed", as
onegraph errors naming the model.

onnx-ir refuses some messages a check lets through (duplicate value names, a value defined twice, a name that
is not UTF-8 when written back) with ``SerdeError``; its inliner refuses inconsistent function calls (an opset
that differs from the model's, more inputs than the function takes, a name it cannot find) with
``ValueError`` / ``RuntimeError``. Every conversion between protobuf and onnx-ir, and every inlining, of a
model that came from a file goes through here, so a bad file is one :class:`~onegraph.errors.ModelFileError`
(or :class:`~onegraph.errors.PassError` for inlining), never a traceback.
"""

from __future__ import annotations

import logging
from typing import Any

from onegraph.errors import ModelFileError, PassError

__all__ = ["from_proto", "to_proto", "inline"]


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    cause = exc.__cause__ or exc.__context__
    if cause is not None and type(exc).__name__ == "SerdeError":  # onnx-ir wraps the real reason
        text = f"{text}: {' '.join(str(cause).split())}"
    return text[:400]


class _Undefined(logging.Handler):
    """Collects onnx-ir's "Input 'x' of node 'n' (...) cannot be found in any scope" warnings: it reads such a
    model anyway (a new value "so that it can be fixed later") and logs a line the command line would print
    beside its own."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.found: list[tuple[str, str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        if "cannot be found in any scope" in str(record.msg) and len(record.args or ()) >= 4:
            value, node, _, op_type = record.args[:4]
            self.found.append((str(value), str(node), str(op_type)))


def from_proto(proto: Any, what: str = "the model") -> Any:
    """``onnx_ir.from_proto(proto)``; :class:`ModelFileError` naming ``what`` when onnx-ir refuses it, or
    when a node reads a value nothing defines (onnx-ir would read it as a new, unset value)."""
    import onnx_ir as ir

    seen: set[tuple[str, str, str]] = set()
    for f in proto.functions:  # onnx-ir keeps the last of two: a silent choice of body
        key = (f.domain, f.name, f.overload)
        if key in seen:
            raise ModelFileError(f"{what} is invalid: it defines the model-local function "
                                 f"{':'.join(k for k in key if k)!r} twice", hint="`onegraph check` lists every finding")
        seen.add(key)
    log = logging.getLogger("onnx_ir")
    handler, propagate = _Undefined(), log.propagate
    log.addHandler(handler)
    log.propagate = False  # its other warnings, about the same value, are this error too
    try:
        model = ir.from_proto(proto)
    except RecursionError:
        raise ModelFileError(f"{what} nests subgraphs too deeply to be read") from None
    except Exception as exc:  # SerdeError, or what its deserializers raise on odd messages
        mapped = _map_typed(proto)
        if mapped is not None:  # a valid model (check finds it clean) that onnx-ir does not read
            raise ModelFileError(f"{what}: {mapped} is a map or a sequence of maps (skl2onnx's ZipMap output), "
                                 "which onegraph's graph passes do not read",
                                 hint="convert the classifier with options={'zipmap': False} (skl2onnx) to get "
                                      "a probabilities tensor") from None
        raise ModelFileError(f"{what} cannot be read as a graph: {_reason(exc)}",
                             hint="check it with `onegraph check`") from None
    finally:
        log.removeHandler(handler)
        log.propagate = propagate
    if handler.found:
        value, node, op_type = handler.found[0]
        raise ModelFileError(f"{what} is invalid: node {node or '(unnamed)'!r} ({op_type}) reads {value!r}, which no "
                             "node, input or initializer defines", hint="`onegraph check` lists every finding")
    return model


def _map_typed(proto: Any) -> str | None:
    """``output 'name'`` of the first graph input / output of map or sequence-of-maps type, else None."""
    for kind, values in (("input", proto.graph.input), ("output", proto.graph.output)):
        for value in values:
            t = value.type
            if t.HasField("map_type") or (t.HasField("sequence_type") and t.sequence_type.elem_type.HasField("map_type")):
                return f"{kind} {value.name!r}"
    return None


def to_proto(model: Any, what: str = "the model") -> Any:
    """``onnx_ir.to_proto(model)``; :class:`ModelFileError` naming ``what`` when onnx-ir cannot write it (a
    name that is not UTF-8 text, say)."""
    import onnx_ir as ir

    try:
        return ir.to_proto(model)
    except RecursionError:
        raise ModelFileError(f"{what} nests subgraphs too deeply to be written") from None
    except Exception as exc:  # SerdeError wrapping protobuf's encoding errors
        raise ModelFileError(f"{what} cannot be written back as ONNX: {_reason(exc)}",
                             hint="check it with `onegraph check`") from None


def inline(model: Any, what: str = "the model", selector: Any = None) -> None:
    """onnx-ir's ``InlinePass`` on ``model`` (in place; ``selector`` picks the functions, None: all);
    :class:`PassError` naming ``what`` and the call the inliner refused."""
    from onnx_ir.passes.common import InlinePass

    try:
        InlinePass(selector)(model) if selector is not None else InlinePass()(model)
    except RecursionError:
        raise PassError(f"{what}: model-local functions call each other too deeply to be inlined") from None
    except Exception as exc:  # ValueError / RuntimeError / PreconditionError for calls it cannot inline
        raise PassError(f"{what}: its functions cannot be inlined: {_reason(exc)}",
                        hint="check the model with `onegraph check`; `onegraph functions list` shows its calls") from None
