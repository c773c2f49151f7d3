"""The onnxruntime session options every onegraph session uses, scoring or checking alike.

Checking a model opens it exactly as scoring will (same options, one thread), so what the check proves about
opening the model holds for the session that follows.
"""

from __future__ import annotations

from typing import Any

__all__ = ["session_options"]


def session_options(*, threads: int | None = None, folder: str | None = None) -> Any:
    """An ``onnxruntime.SessionOptions``.

    Parameters
    ----------
    threads:
        Intra-op (and, when given, inter-op) threads; None: onnxruntime's default (all cores).
    folder:
        Folder external-data locations are relative to (the model file's folder); None for models without
        external data or given as bytes.
    """
    import onnxruntime as ort

    options = ort.SessionOptions()
    # fatal only: a failing kernel also logs its message as an ERROR line on stderr beside the exception that
    # carries it, which onegraph reports in its one line (the command line printed two)
    options.log_severity_level = 4
    # idle worker threads sleep instead of spinning, so sessions kept side by side do not fight
    # over the cores (single-row latency doubled with two spinning sessions on a 2-core machine)
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if threads is not None:
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = threads
    if folder is not None:
        options.add_session_config_entry("session.model_external_initializers_file_folder_path", folder)
    return options
