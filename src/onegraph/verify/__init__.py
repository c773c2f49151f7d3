"""Verification: parity with the source objects, and checking untrusted models in an isolated process."""

from onegraph import _lazy

__all__ = ["OutputParity", "ParityReport", "parity"]
_lazy.exports(__name__, {
    "OutputParity": "onegraph.verify.parity", "ParityReport": "onegraph.verify.parity",
    "parity": "onegraph.verify.parity",
})
