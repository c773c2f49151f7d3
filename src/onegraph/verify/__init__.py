"""Verification: parity with the source objects (and, later, checking, conversion, runtime comparison)."""

from onegraph.verify.parity import OutputParity, ParityReport, parity

__all__ = ["OutputParity", "ParityReport", "parity"]
