"""Untrusted model files: the one loader every model goes through, and the isolated, resource-limited check.

``onegraph.check.load_model(path)`` / ``read_model(path, purpose=...)`` (:mod:`onegraph.check.loader`) is how
every command and public function reads a model; ``onegraph.check.check(model)`` is the full check
(:mod:`onegraph.check.run`) whose findings ``onegraph check`` prints; ``check_many`` checks many with reused
checking processes. Modules: ``source`` (bytes without parsing), ``guard`` (the check-before-use cache),
``sandbox`` / ``_worker`` / ``stages`` (the checking process), ``static/`` (checks onnx.checker does not make),
``findings`` / ``limits``, ``options`` (the onnxruntime session options checking and scoring share),
``fuzz`` (mutants of valid models).
"""

from onegraph import _lazy

__all__ = ["check", "check_many", "CheckReport", "Finding", "Limits", "Source", "read_model", "load_model",
           "load_ir", "trusting", "UnsafeModelError"]
_lazy.exports(__name__, {
    "check": "onegraph.check.run", "check_many": "onegraph.check.run", "CheckReport": "onegraph.check.findings",
    "Finding": "onegraph.check.findings", "Limits": "onegraph.check.limits", "Source": "onegraph.check.source",
    "read_model": "onegraph.check.loader", "load_model": "onegraph.check.loader", "load_ir": "onegraph.check.loader",
    "trusting": "onegraph.check.loader",
    "UnsafeModelError": "onegraph.check.guard",
})
