"""What a caller is about to do with a model, and the stages of the check that must run first.

Kept apart from :mod:`onegraph.check.findings` (the report's types): reading a model whose check is remembered
(:mod:`onegraph.check.guard`) needs these names only, not the report's dataclasses, whose definition costs a
fresh process ~1.5 ms.
"""

from __future__ import annotations

__all__ = ["PURPOSES"]

#: ``load`` (the caller parses the bytes and may run onnx code on them) or ``run`` (it opens an onnxruntime
#: session) -> the stages of the checking process (:mod:`onegraph.check.stages`) that must pass first
PURPOSES = {"load": ("parse", "static", "checker"), "run": ("parse", "static", "checker", "runtime")}
