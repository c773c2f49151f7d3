"""The one entry for models: every public function and command that takes a model reads it here.

What may run in this process is decided once, by what the model is:

* an in-memory ``onnx.ModelProto`` or ``onnx_ir.Model`` is the caller's own object: used as given;
* a file or bytes may be malformed or malicious: before any onnx or onnxruntime native code touches them
  here, the isolated checking process (:mod:`onegraph.check.guard`) checks them fully for what the caller is
  about to do: ``load`` (parse, onegraph's static checks incl. external data, ``onnx.checker`` with full shape
  inference) before the caller parses the bytes and runs onnx code on them (shape inference, the version
  converter, onnx-ir); ``run`` (the same, then an onnxruntime session) before it opens a session. Which
  findings keep a model from each is :func:`onegraph.check.findings.blocks`.
  ``trusted=True`` skips the check for files the user made or trusts.

Library exceptions that mean "bad file" (protobuf decode errors, onnx-ir's ``SerdeError``) become
:class:`~onegraph.errors.ModelFileError` naming the file.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from onegraph.check.purposes import PURPOSES
from onegraph.check.source import Source, is_in_memory_model, label_of, source_of
from onegraph.errors import ModelFileError

__all__ = ["PURPOSES", "read_model", "load_model", "load_ir", "trusting"]

#: set inside :func:`trusting`: every file and bytes read in the block is trusted
_TRUSTING: ContextVar[bool] = ContextVar("onegraph_trusting", default=False)


@contextmanager
def trusting() -> Iterator[None]:
    """Trust every model file and bytes read inside the block, as ``trusted=True`` would: for files you made or
    trust, read by functions that take no ``trusted`` parameter (``compare_runtimes``, ``convert_opset``,
    ``calibrate``...). The CLI's ``--trusted`` option of every command that reads a model is this block.

    The flag is a :class:`contextvars.ContextVar`: it holds in this thread and in asyncio tasks started in the
    block, not in threads started from it.

    Example::

        with onegraph.check.trusting():
            report = onegraph.verify.compare_runtimes("mine.onnx")
    """
    token = _TRUSTING.set(True)
    try:
        yield
    finally:
        _TRUSTING.reset(token)


def read_model(model: Any, *, trusted: bool = False, purpose: str = "load") -> Source:
    """The model's bytes, checked for ``purpose`` unless they are the caller's own object or ``trusted``.

    Parameters
    ----------
    model:
        Path to a ``.onnx`` file, its bytes, an ``onnx.ModelProto`` or an ``onnx_ir.Model``.
    trusted:
        Skip the check (for files you made or trust): the bytes go straight to the caller. Inside a
        :func:`trusting` block every read is trusted.
    purpose:
        ``load`` (the caller parses the bytes and may run onnx code on them) or ``run`` (it opens an
        onnxruntime session): see the module docstring.

    Returns
    -------
    Source
        ``data`` (the bytes), ``folder`` (the file's folder, for external data; None otherwise), ``label``.

    Raises
    ------
    ModelFileError
        for a missing or unreadable file (:class:`~onegraph.check.source.ModelTooLargeError` over 2 GiB);
        :class:`~onegraph.check.guard.UnsafeModelError` (a ``ModelFileError``) naming the first error finding.
    """
    if purpose not in PURPOSES:
        raise ValueError(f"purpose {purpose!r}: use one of {sorted(PURPOSES)}")
    source = source_of(model)
    if not (trusted or _TRUSTING.get()) and not is_in_memory_model(model):
        from onegraph.check.guard import ensure_safe

        ensure_safe(source, purpose=purpose)
    return source


def load_model(model: Any, *, trusted: bool = False, purpose: str = "load") -> Any:
    """``model`` as an ``onnx.ModelProto``: an in-memory one as given, a file or bytes checked first
    (:func:`read_model`) and parsed.

    Raises
    ------
    ModelFileError
        naming the file for one that is missing, unreadable, fails the check, or does not parse (trusted).
    """
    import onnx

    if isinstance(model, onnx.ModelProto):
        return model
    if type(model).__module__.startswith("onnx_ir"):
        import onnx_ir as ir

        return ir.to_proto(model)
    return _parse(read_model(model, trusted=trusted, purpose=purpose))


def _parse(source: Source) -> Any:
    import onnx

    proto = onnx.ModelProto()
    try:
        proto.ParseFromString(source.data)
    except Exception as exc:  # protobuf's DecodeError, or RuntimeError from upb
        raise ModelFileError(f"{source.label} is not a valid ONNX model ({type(exc).__name__})",
                             hint="check that the file is a complete .onnx file") from None
    if not proto.HasField("graph"):
        raise ModelFileError(f"{source.label} holds no graph; it is not an ONNX model",
                             hint="check that the file is a complete .onnx file")
    if source.folder is None:  # bytes: no folder to read external data from (as before: left as it is)
        return proto
    from onegraph.check.static.walk import external_locations, has_external_data

    if has_external_data(proto):
        from onegraph.kept import keep

        for location in external_locations(proto):  # the check confined them to the model's folder
            keep(os.path.join(source.folder, location), f"the external data of the input {source.label}")
        # the tensors read into the model (the check has verified the files): what a caller does with it
        # (convert, compare, meta set, stats...) then holds wherever the result goes; relative locations
        # copied into a model written to another folder pointed at nothing, and onnxruntime's optimizer
        # refuses external data in a model given as bytes
        from onnx.external_data_helper import load_external_data_for_model

        load_external_data_for_model(proto, source.folder)
    return proto


def load_ir(model: Any, *, trusted: bool = False) -> Any:
    """``model`` as an ``onnx_ir.Model`` (an in-memory one as given; anything else through :func:`load_model`).

    Raises
    ------
    ModelFileError
        as :func:`load_model`, and for a model onnx-ir refuses to deserialize (``SerdeError``), naming the file
        and onnx-ir's reason.
    """
    import onnx_ir as ir

    from onegraph.check import irsafe

    if isinstance(model, ir.Model):
        return model
    if is_in_memory_model(model):
        return irsafe.from_proto(load_model(model), label_of(model))
    source = read_model(model, trusted=trusted)
    loaded = irsafe.from_proto(_parse(source), source.label)
    if source.folder is not None:
        # onnx-ir reads external tensors lazily, relative to the base folder: the model's, not the working one
        ir.external_data.set_base_dir(loaded.graph, source.folder)
    return loaded
