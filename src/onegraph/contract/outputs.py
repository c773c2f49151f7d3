"""What a graph output means: its role, and the check outputs every scorer must read.

Each output a onegraph model declares has an entry in the metadata key ``org.onegraph.outputs``
(:class:`onegraph.contract.metadata.OutputSchema`) with a *role* from :data:`ROLES`. Outputs of role
``check`` are boolean ``[N]`` flags of rows a step refuses (a category never seen in fit, a date outside the
built range); their names carry the kind and the column (:data:`CHECK_PREFIXES`), so a scorer finds them even
when the metadata entry was lost (:func:`check_entries`).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["ROLES", "CHECK_PREFIXES", "check_entry", "check_entries"]

#: What an output can be: a classifier's ``label`` / ``probabilities`` (``top_*`` after a TopK step), a
#: regressor's ``prediction``, an outlier detector's ``score`` (its ``decision_function``, negative for
#: outliers, beside a ``label`` of 1 / -1), a transformed column (``feature``), a refused-rows flag
#: (``check``), or anything else (``output``).
ROLES = ("label", "probabilities", "prediction", "feature", "check", "output", "top_labels", "top_probabilities",
         "score")
#: Name prefix of the boolean graph outputs flagging rows a step refuses, per kind of check.
CHECK_PREFIXES = {"unknown_category": "onegraph.check:unknown:", "out_of_range": "onegraph.check:out_of_range:"}


def check_entry(name: str) -> dict | None:
    """The metadata entry of a check output told by its name alone (None for any other output).

    Used where the metadata entry is missing or lost its role (a model written by an older compose, or by a
    tool that kept the graph but not onegraph's metadata): the name carries the kind and the column.
    """
    for kind, prefix in CHECK_PREFIXES.items():
        if name.startswith(prefix):
            column = name[len(prefix):]
            base, sep, n = column.rpartition("#")  # GraphBuilder.flag numbers repeated names "<column>#2"
            return {"name": name, "column": base if sep and n.isdigit() else column, "role": "check",
                    "check": kind}
    return None


def check_entries(described: Sequence[dict], names: Sequence[str]) -> list[dict]:
    """Every check output among the graph outputs ``names``: the entries of the metadata ``described`` whose
    role is ``check``, then any output whose name has a check prefix (:func:`check_entry`) whatever its
    entry says, so that no check a model computes goes unread."""
    by_name = {d.get("name"): d for d in described}
    out = []
    for name in names:
        entry = by_name.get(name)
        if entry is not None and entry.get("role") == "check":
            out.append(dict(entry))
        elif (guessed := check_entry(name)) is not None:
            out.append({**{k: v for k, v in (entry or {}).items() if k in ("covers", "hint")}, **guessed})
    return out


