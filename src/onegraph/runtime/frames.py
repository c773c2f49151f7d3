"""Building the output DataFrame fast.

pandas' public constructors validate and infer per column and cost ~30 us for a 4-column, 1-row frame,
as much as the whole model run; single-row scoring is dominated by it. When every output is a plain
numpy array, the frame is assembled from its blocks directly (~5 us) through pandas' internal
``BlockManager``; any failure of that path (another pandas version, an extension array) falls back to the
public constructor, which gives the same frame.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["FrameTemplate"]

try:  # pandas >= 2.1 internals; absent or changed -> public constructor
    from pandas._libs.internals import BlockPlacement
    from pandas.core.internals import BlockManager
    from pandas.core.internals.blocks import get_block_type

    _FAST = hasattr(pd.DataFrame, "_from_mgr")
except ImportError:  # pragma: no cover - depends on the pandas version
    _FAST = False

#: pandas' block class per numpy dtype (what ``new_block`` looks up on every call)
_BLOCKS: dict[np.dtype, type] = {}


def _own(index: pd.Index) -> pd.Index:
    """A new Index object over the labels of ``index``, with a name of its own, as pandas gives every frame:
    its internal ``_simple_new`` (~0.6-1 us; ``_view`` also registers the view with the labels' copy-on-write
    references, a list every view grows, 1.5x the time beside onnxruntime's call), else a copy."""
    try:
        return type(index)._simple_new(index._data)
    except Exception:  # another pandas version: the public copy (a few us)
        return index.copy()


def _range_index(n: int) -> pd.RangeIndex:
    """A RangeIndex of ``n`` rows through pandas' internal ``_simple_new`` (~0.6 us, the public constructor's
    checks cost ~4 us), else the public one."""
    try:
        return pd.RangeIndex._simple_new(range(n))
    except Exception:  # another pandas version
        return pd.RangeIndex(n)


def _sole_count() -> int:
    """What ``sys.getrefcount`` says of an object popped from a list (as a pair, unpacked) into a local variable
    when nothing else holds it (2 on CPython 3.11; measured rather than assumed: later versions count borrowed
    references otherwise). The same steps as :meth:`_Spare.give`."""
    kept = [(object(), 0)]
    spare, size = kept.pop()
    return sys.getrefcount(spare)


_SOLE = _sole_count()


class _Spare:
    """The axis the last result was given, handed to the next result once nothing holds it (:meth:`give`).

    Making an Index costs pandas an identity object, a copy-on-write references object and a weak reference
    (~1 us; 3-8 us of a single-row call beside onnxruntime's, whose caches it shares): in a loop scoring one
    row after another, each result is dropped before the next, and its axis is given again instead. No two
    live results share one: the axis is kept here (until the next call) and given again only when its
    reference count proves nothing else holds it, no weak reference reaches it and it carries neither a name
    nor an attribute a fresh axis lacks; ``list.pop`` is atomic, so two threads never take the same one."""

    __slots__ = ("_kept", "_fresh")

    def __init__(self) -> None:
        self._kept: list[tuple[Any, int]] = []  # (the axis, the size it was made for)
        self._fresh: tuple | None = None  # a fresh axis' _marks

    def give(self, make: Callable[[Any], Any], arg: Any, size: int = 0) -> Any:
        """An axis for a new result: the kept one when it may be given again and was made for ``size``, else
        ``make(arg)``; kept in turn."""
        try:
            spare, made_for = self._kept.pop()
        except IndexError:
            spare = None
        else:
            if not (made_for == size and sys.getrefcount(spare) == _SOLE and spare._name is None
                    and _marks(spare) == self._fresh):
                spare = None  # let go
        if spare is None:
            spare = make(arg)
            if self._fresh is None:
                self._fresh = _marks(spare)
        self._kept.append((spare, size))
        return spare


def _marks(axis: Any) -> tuple[int, int, int]:
    """What a user may have left on ``axis``: its number of attributes, of weak references, and the reference
    count of its plain weak reference. pandas keeps a plain weak reference to every Index, and
    ``weakref.ref(axis)`` hands out that same object, so a user's own shows only in its count; a
    ``weakref.finalize``, proxy or weak container adds a weak reference of its own."""
    return len(axis.__dict__), weakref.getweakrefcount(axis), sys.getrefcount(weakref.ref(axis))


class FrameTemplate:
    """Column layout of the output frame: a list of (name or names, width) per output array."""

    def __init__(self, layout: list[tuple[list[str], bool]]) -> None:
        self.layout = layout  # per array: its column names, and whether the array is 2-D
        self.columns = pd.Index([n for names, _ in layout for n in names], dtype=object)
        labels = getattr(self.columns, "_data", None)
        if isinstance(labels, np.ndarray):  # every result's columns share these labels: none may write them
            labels.flags.writeable = False
        self._placements = []
        start = 0
        for names, _ in layout:
            place = slice(start, start + len(names))
            self._placements.append(BlockPlacement(place) if _FAST else place)
            start += len(names)
        self._plan = list(zip(self._placements, [two_d for _, two_d in layout]))
        # the axes the last result was given, to give again once it is dropped
        self._spare_columns = _Spare()
        self._spare_rows = _Spare()

    def frame(self, arrays: list[Any], index: pd.Index | None, n_rows: int) -> pd.DataFrame:
        """The DataFrame of ``arrays`` (1-D ``[N]`` or 2-D ``[N, k]``) laid out by this template.

        Its axes are Index objects of its own (over the template's labels; a new RangeIndex without ``index``):
        an axis' ``name`` can be set in place, which must not rename every other result."""
        if index is None:
            index = self._spare_rows.give(_range_index, n_rows, n_rows)
        columns = self._spare_columns.give(_own, self.columns)
        if _FAST:
            try:
                frame = self._fast(arrays, index, columns)
            except Exception:  # any internal-API mismatch: the public path below gives the same frame
                frame = None
            if frame is not None:
                return frame
        data = {}
        for (names, two_d), a in zip(self.layout, arrays):
            if two_d:
                for j, n in enumerate(names):
                    data[n] = a[:, j]
            else:
                data[names[0]] = a
        return pd.DataFrame(data, index=index, columns=columns, copy=False)

    def _fast(self, arrays: list[Any], index: pd.Index, columns: pd.Index) -> pd.DataFrame | None:
        """The frame assembled from one block per array; None when an array is not a numpy array."""
        blocks = []
        for a, (place, two_d) in zip(arrays, self._plan):
            if type(a) is not np.ndarray:
                return None
            # a block holds its columns as rows; a one-row [1, k] array transposed is contiguous already
            values = (a.T if len(a) == 1 else np.ascontiguousarray(a.T)) if two_d else a.reshape(1, -1)
            klass = _BLOCKS.get(values.dtype)
            if klass is None:
                klass = _BLOCKS[values.dtype] = get_block_type(values.dtype)
            blocks.append(klass(values, place, 2))
        mgr = BlockManager(tuple(blocks), [columns, index], verify_integrity=False)
        return pd.DataFrame._from_mgr(mgr, mgr.axes)
