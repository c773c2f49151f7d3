"""Declared parameter constraints: scikit-learn's objects, and the few checks of our own they cannot state.

Every transformer lists, in ``_parameter_constraints``, what each ``__init__`` parameter accepts, as
scikit-learn's estimators do (``{"case": [StrOptions({"lower", "upper", "casefold"})]}``: a value is
valid when it satisfies one entry of its list). :meth:`FrameTransformer.fit
<onegraph.frame.transformers.base.FrameTransformer.fit>` checks them once, before reading the data, and
raises :class:`~onegraph.errors.ConfigError` naming the class and the parameter.

The entries are scikit-learn's (``sklearn.utils._param_validation``): ``Interval``, ``StrOptions``,
``Options``, ``HasMethods``, ``None``, a type, ``"boolean"``, ``callable``... For a check they cannot
state (a list of names among options, a pair of percentiles in order) use :class:`Satisfies`; where
scikit-learn has the estimator, :func:`sklearn_constraints` takes its declarations as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import pandas as pd
from sklearn.utils._param_validation import Options, make_constraint

__all__ = ["Satisfies", "names", "sklearn_constraints", "describe"]


class Satisfies(Options):
    """A value for which ``predicate(value)`` is true, described as ``description`` in errors.

    A predicate that raises (a value of an unexpected type) means "not satisfied". It subclasses
    ``Options`` only because scikit-learn's ``make_constraint`` accepts its own constraint classes and no
    other: a set of valid values, here given by a predicate rather than listed, is what ``Options`` means.
    """

    def __init__(self, description: str, predicate: Callable[[Any], bool]) -> None:
        super().__init__(object, set())
        self.description = description
        self.predicate = predicate

    def is_satisfied_by(self, val: Any) -> bool:
        try:
            return bool(self.predicate(val))
        except Exception:  # the predicate met a value it was not written for: not a valid value
            return False

    def __str__(self) -> str:
        return self.description


def _sequence(val: Any) -> bool:
    """A list-like of values known in advance (never a str, nor an iterator that checking would consume)."""
    return isinstance(val, (list, tuple, np.ndarray, pd.Index)) and np.ndim(val) == 1


def names(among: Iterable[str] | None = None, *, empty: bool = True) -> Satisfies:
    """A list (or tuple, array, Index) of str, each one of ``among`` when given; ``empty=False``: at least one."""
    allowed = None if among is None else tuple(among)

    def ok(val: Any) -> bool:
        return (_sequence(val) and (empty or len(val) > 0)
                and all(isinstance(v, str) and (allowed is None or v in allowed) for v in val))

    what = "a list of str" if empty else "a non-empty list of str"
    if allowed is not None:
        what += " among {" + ", ".join(map(repr, allowed)) + "}"
    return Satisfies(what, ok)


def sklearn_constraints(estimator: type, *params: str) -> dict[str, list]:
    """scikit-learn's declared constraints of ``estimator`` for ``params`` (a class taking the same
    parameters with the same meaning declares them so, rather than restating them)."""
    return {p: estimator._parameter_constraints[p] for p in params}


def describe(constraints: list) -> str:
    """What a parameter accepts, in words: its visible constraints joined as scikit-learn joins them."""
    shown = [c for c in map(make_constraint, constraints) if not c.hidden]
    if len(shown) == 1:
        return str(shown[0])
    return f"{', '.join(map(str, shown[:-1]))} or {shown[-1]}"
