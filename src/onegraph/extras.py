"""Optional extras: what each one installs, and the check commands make before they start work.

``pip install onegraph`` gives building, scoring, checking and conversion; the extras below add what only some
commands need. A command that needs one calls :func:`require` first, so a missing extra is named, with its
install command, before anything is read, fitted or written.
"""

from __future__ import annotations

import importlib.util

from onegraph.errors import OnegraphError

__all__ = ["EXTRAS", "MissingExtraError", "require"]

#: extra -> (the modules it provides, what it is for)
EXTRAS: dict[str, tuple[tuple[str, ...], str]] = {
    "report": (("matplotlib",), "the HTML statistics report"),
    "spark": (("pyspark",), "Apache Spark scoring, statistics and Spark ML conversion"),
    "torch": (("torch",), "PyTorch model adapters"),
    "boosting": (("xgboost", "lightgbm", "onnxmltools"), "XGBoost / LightGBM model adapters"),
}


class MissingExtraError(OnegraphError):
    """An optional extra a command needs is not installed; ``extra`` names it."""

    def __init__(self, extra: str, module: str, purpose: str) -> None:
        super().__init__(f"{purpose} needs the '{extra}' extra ({module} is not installed)",
                         hint=f'install it with: pip install "onegraph[{extra}]"')
        self.extra = extra
        self.module = module


def require(extra: str, *modules: str) -> None:
    """Raise :class:`MissingExtraError` unless the modules of ``extra`` (or the given ``modules`` of it) import.

    Only looks the modules up (``importlib.util.find_spec``); nothing is imported.
    """
    known, purpose = EXTRAS[extra]
    for module in modules or known:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise MissingExtraError(extra, module, purpose)
