"""Registries of emitters: a decorator that files a function under the classes (or class names) it handles.

Used by the graph builder for transformers (:func:`onegraph.emit.register_emitter`), the model adapters
(:func:`onegraph.export.adapters.models.register_model`) and the Spark ML conversion (by class name, so pyspark
is imported only by whoever holds a Spark object).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, MutableMapping
from typing import Any, TypeVar

__all__ = ["registrar"]

F = TypeVar("F", bound=Callable[..., Any])


def registrar(table: MutableMapping[Any, Any]) -> Callable[..., Callable[[F], F]]:
    """``register`` for ``table``: ``@register(key, ...)`` files the decorated function under each key."""

    def register(*keys: Hashable) -> Callable[[F], F]:
        def deco(fn: F) -> F:
            for key in keys:
                table[key] = fn
            return fn

        return deco

    return register
