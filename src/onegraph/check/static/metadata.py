"""onegraph's metadata keys, read as every other command reads them (C601).

``show``, ``score``, ``stats calibrate``, ``compose`` and the converters read the model-level keys under
``org.onegraph.`` with :func:`onegraph.contract.metadata.read` / ``decode``, which refuse a malformed value
with a :class:`~onegraph.errors.MetadataError` naming the key. ``check`` reads them the same way, so a model
it passes is one they can take: each refused key is one finding naming it.
"""

from __future__ import annotations

from collections.abc import Iterator

import onnx

from onegraph.check.findings import Finding

__all__ = ["check_metadata", "SCORING_KEYS", "PREFIX"]

#: :data:`onegraph.contract.metadata.PREFIX`, spelled here so that a model without onegraph keys does not load
#: the schema (pydantic, pandas) in the checking process
PREFIX = "org.onegraph."

#: the fields ``score`` reads (:class:`onegraph.runtime.Session`, ``onegraph.media``): a model whose value of
#: one of them is malformed cannot be scored at all
SCORING_KEYS = frozenset({"inputs", "outputs", "sequence", "media"})


def check_metadata(model: onnx.ModelProto) -> Iterator[Finding]:
    """C601 for each ``org.onegraph.*`` key whose value the metadata schema refuses, or that contradicts the
    graph (:func:`onegraph.contract.metadata.against_graph`: an input it does not have, a type it does not
    take), naming the key."""
    props = list(model.metadata_props)
    if not any(isinstance(p.key, str) and p.key.startswith(PREFIX) for p in props):
        return
    from onegraph.contract import metadata as meta

    where = {p.key: i for i, p in enumerate(props)}
    found = meta.read({p.key: p.value for p in props})
    for error in [*found.errors, *meta.against_graph(model.graph, found.fields)]:
        key = error.key
        name = key.removeprefix(meta.PREFIX)
        effect = ("`score` cannot use the model" if name in SCORING_KEYS else
                  "`show`, `stats calibrate`, `compose` and the converters refuse the model")
        index = where.get(key)
        field = f"metadata_props[{key[:80]}].value" if index is not None else "metadata_props"
        yield Finding("C601", f"{error.message}; {effect} until it is fixed (`onegraph meta set`)", field)
