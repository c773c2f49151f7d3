"""Verification: parity with the source objects, and checking untrusted models in an isolated process.

``onegraph.verify.check(model)`` checks a model that may be malformed or malicious (see
:mod:`onegraph.verify.check`); ``check_many`` checks many with reused checking processes.
"""

from onegraph import _lazy

__all__ = ["OutputParity", "ParityReport", "parity", "check", "check_many", "CheckReport", "Finding", "Limits"]
_lazy.exports(__name__, {
    "OutputParity": "onegraph.verify.parity", "ParityReport": "onegraph.verify.parity",
    "parity": "onegraph.verify.parity", "check": "onegraph.verify.check", "check_many": "onegraph.verify.check",
    "CheckReport": "onegraph.verify.findings", "Finding": "onegraph.verify.findings",
    "Limits": "onegraph.verify.limits",
})
