"""A model's bytes as the caller holds them, read without parsing: the :class:`Source` every check takes.

Nothing here imports onnx or runs native code on the bytes: a file is read (refused first when it is larger
than any single-file ONNX model can be), bytes are taken as given, an in-memory ``onnx.ModelProto`` or
``onnx_ir.Model`` is serialized (those are the caller's own objects).
"""

from __future__ import annotations

import dataclasses
import os
import stat
from pathlib import Path
from typing import Any

from onegraph.errors import ModelFileError

__all__ = ["Source", "MAX_FILE_BYTES", "ModelTooLargeError", "source_of", "is_in_memory_model", "label_of"]

#: protobuf refuses messages of 2 GiB or more: a larger single file cannot be an ONNX model (big weights
#: live in external data files beside it)
MAX_FILE_BYTES = (2 << 30) - 1


@dataclasses.dataclass(frozen=True)
class Source:
    """A model's bytes, the folder its external data is relative to (None for bytes), and how reports name
    it (``model file m.onnx``)."""

    data: bytes
    folder: str | None
    label: str


class ModelTooLargeError(ModelFileError):
    """A model larger than a limit (``size`` and ``limit`` in bytes); a file over it was not read."""

    def __init__(self, label: str, size: int, limit: int) -> None:
        why = ("more than protobuf's 2 GiB limit for one file (a model this big keeps its weights in external "
               "data files)") if limit == MAX_FILE_BYTES else f"more than the limit of {limit:,} bytes"
        super().__init__(f"{label} holds {size:,} bytes, {why}",
                         hint="check the path; save the weights as external data (onnx.save_model(..., "
                              "save_as_external_data=True))" if limit == MAX_FILE_BYTES else
                              "check the path, or raise the limit (onegraph check --limits memory=...)")
        self.size, self.limit = size, limit


def is_in_memory_model(model: Any) -> bool:
    """Whether ``model`` is an ``onnx.ModelProto`` or an ``onnx_ir.Model`` (told without importing onnx)."""
    module = type(model).__module__
    return (module.startswith("onnx") and hasattr(model, "SerializeToString")) or module.startswith("onnx_ir")


def label_of(model: Any) -> str:
    return f"model file {model}" if isinstance(model, (str, os.PathLike)) else "the model bytes"


def source_of(model: Any, *, folder: str | os.PathLike | None = None, limit: int | None = None) -> Source:
    """The :class:`Source` of ``model``: a path, bytes, an ``onnx.ModelProto`` or an ``onnx_ir.Model``.

    ``folder`` overrides the folder external data is looked up in (default: the file's own folder). ``limit``
    caps the size in bytes (a file over it is not read; :data:`MAX_FILE_BYTES` always applies to files).

    Raises
    ------
    ModelFileError
        for a missing, unreadable or folder path, or an object that is not a model;
        :class:`ModelTooLargeError` for a model over the limit.
    """
    cap = MAX_FILE_BYTES if limit is None else min(limit, MAX_FILE_BYTES)
    if isinstance(model, (str, os.PathLike)):
        path = Path(model)
        if "\x00" in os.fspath(path):  # no file system holds such a name (os.stat raises ValueError)
            raise ModelFileError(f"model file {model!r} does not exist: its path holds a NUL character",
                                 hint="check the path")
        try:
            info = path.stat()
            if stat.S_ISDIR(info.st_mode):
                raise IsADirectoryError
            if not stat.S_ISREG(info.st_mode):  # a device or FIFO: no size to check, a read without end or a hang
                raise ModelFileError(f"model file {path} is not a regular file (a device, FIFO or socket)",
                                     hint="give the path of a .onnx file")
            if info.st_size > cap:
                raise ModelTooLargeError(label_of(model), info.st_size, cap)
            with open(path, "rb") as f:
                data = f.read(cap + 1)  # a file grown since its stat is still read no further than the cap
            if len(data) > cap:
                raise ModelTooLargeError(label_of(model), len(data), cap)
        except FileNotFoundError:
            raise ModelFileError(f"model file {path} does not exist", hint="check the path") from None
        except IsADirectoryError:
            raise ModelFileError(f"{path} is a folder, not a model file", hint="give the path of a .onnx file") from None
        except OSError as exc:
            raise ModelFileError(f"cannot read model file {path}: {exc.strerror or exc}") from None
        base = folder if folder is not None else path.resolve().parent
        return Source(data, os.fspath(base), label_of(model))
    if isinstance(model, (bytes, bytearray, memoryview)):
        data = bytes(model)
    elif is_in_memory_model(model):
        if type(model).__module__.startswith("onnx_ir"):
            import onnx_ir as ir

            model = ir.to_proto(model)
        data = model.SerializeToString()
    else:
        raise ModelFileError(f"cannot use a {type(model).__name__} as a model",
                             hint="give a path to a .onnx file, its bytes, an onnx.ModelProto or an onnx_ir.Model")
    if len(data) > cap:
        raise ModelTooLargeError(label_of(model), len(data), cap)
    return Source(data, os.fspath(folder) if folder is not None else None, label_of(model))
