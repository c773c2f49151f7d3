"""How many files onegraph has written in this process (floor 1: :func:`onegraph.io.atomic_path` counts each
rename into place, :func:`onegraph.score` reads the count).

``onegraph.score(path, rows)`` looks at the model file again (``os.stat``) at most once every 10 ms while it
is called for the same path; a write by onegraph itself in between makes it look at once, so a model this
process rewrote is never scored with its previous session.
"""

from __future__ import annotations

__all__ = ["count", "note_write"]

_COUNT = [0]


def note_write() -> None:
    """Count one file written (called after the rename that puts it in place)."""
    _COUNT[0] += 1


def count() -> int:
    """The number of files written so far in this process."""
    return _COUNT[0]
