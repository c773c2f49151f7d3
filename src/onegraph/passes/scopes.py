"""Where a node came from: the chain of source objects its exporter recorded, and how that names a function.

Three records are read, each giving, for a node, the chain of enclosing source objects below the model's
root, outermost first, as :class:`Scope` ``(path, class)`` pairs:

* **onegraph** (:mod:`onegraph.emit`): node metadata ``onegraph.scopes`` (JSON ``[[path, class], ...]``), or
  ``namespace`` + ``onegraph.class`` for the innermost object only.
* **PyTorch** (``torch.onnx.export``, dynamo exporter): node metadata ``pkg.torch.onnx.name_scopes``
  (``['', 'encoder', 'encoder.lstm1', 'lstm']``) and ``pkg.torch.onnx.class_hierarchy``
  (``['__main__.Model', 'torch.nn.modules.rnn.LSTM', ..., 'aten.lstm.input']``); the first entry is the root
  module and the last the aten operator, both dropped. Without those two keys, the ``namespace`` string
  (``": __main__.Model/encoder: __main__.Encoder/encoder.lstm1: torch.nn.modules.rnn.LSTM/lstm: aten..."``)
  is parsed instead.
* **node names** (the TorchScript exporter, tf2onnx): ``/encoder/lstm1/LSTM`` is op ``LSTM`` in scopes
  ``encoder`` and ``encoder.lstm1``; a name without ``/`` carries no scope. Classes are unknown.

A node with no record (an exporter's optimizer adds some) is *unattributed*: :func:`metadata_chain` and
:func:`name_chain` return None for it, and an empty list for a node attributed to the root.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re

import onnx_ir as ir

from onegraph.contract.scopes import CLASS_KEY, NAMESPACE_KEY, SCOPES_KEY

__all__ = ["TORCH_NAME_SCOPES", "TORCH_CLASS_HIERARCHY", "SCOPE_DOMAIN", "PUBLIC_NAMESPACES", "Scope",
           "metadata_chain", "name_chain", "call_metadata", "call_name", "function_name"]

TORCH_NAME_SCOPES = "pkg.torch.onnx.name_scopes"
TORCH_CLASS_HIERARCHY = "pkg.torch.onnx.class_hierarchy"

#: Domain of functions grouped from node-name scopes, which do not say what class made the nodes.
SCOPE_DOMAIN = "onegraph.scope"

#: Packages that re-export the classes of their private or implementation modules under a shorter public
#: namespace (``torch.nn.modules.rnn.LSTM`` is ``torch.nn.LSTM``); the first matching prefix wins.
PUBLIC_NAMESPACES: tuple[tuple[str, str], ...] = (
    ("torch.nn.modules.", "torch.nn"),
    ("onegraph.frame.transformers.", "onegraph.frame"),
    ("keras.src.layers.", "keras.layers"),
)


@dataclasses.dataclass(frozen=True)
class Scope:
    """One enclosing source object: its instance path (dotted, ``encoder.lstm1``) and qualified class
    (``torch.nn.modules.rnn.LSTM``; empty when the record does not say)."""

    path: str
    cls: str = ""


def metadata_chain(node: ir.Node) -> list[Scope] | None:
    """The enclosing source objects recorded in ``node.metadata_props`` (outermost first), or None."""
    meta = node.metadata_props
    if SCOPES_KEY in meta:
        try:
            return [Scope(str(p), str(c)) for p, c in json.loads(meta[SCOPES_KEY])]
        except (ValueError, TypeError, RecursionError):  # a record of another shape is no record
            return None
    if TORCH_NAME_SCOPES in meta and TORCH_CLASS_HIERARCHY in meta:
        try:
            names = _string_list(meta[TORCH_NAME_SCOPES])
            classes = _string_list(meta[TORCH_CLASS_HIERARCHY])
        except (ValueError, SyntaxError, RecursionError, MemoryError):
            return None
        if not isinstance(names, list) or not isinstance(classes, list) or len(names) != len(classes) or not names:
            return None
        return [Scope(str(p), str(c)) for p, c in zip(names[1:-1], classes[1:-1])]
    namespace = meta.get(NAMESPACE_KEY)
    if namespace is None:
        return None
    if ": " in namespace:  # the torch exporter's "path: class/path: class/.../node: target"
        entries = [e.partition(": ") for e in namespace.split("/")]
        return [Scope(p, c) for p, _, c in entries[1:-1]]
    return [Scope(namespace, meta.get(CLASS_KEY, ""))] if namespace else []


def _string_list(text: str) -> object:
    """A Python list of strings as ``repr`` writes it (the torch exporter's records), read fast."""
    if '"' not in text and "\\" not in text:  # plain quoting: JSON once the quotes are swapped (~10x faster)
        return json.loads(text.replace("'", '"'))
    return ast.literal_eval(text)


def name_chain(node: ir.Node) -> list[Scope] | None:
    """The scopes in ``node.name`` (``/encoder/lstm1/LSTM`` -> ``encoder``, ``encoder.lstm1``), or None."""
    name = node.name or ""
    if "/" not in name:
        return None
    parts = [p for p in name.split("/")[:-1] if p]
    return [Scope(".".join(parts[: i + 1])) for i in range(len(parts))]


def call_metadata(node: ir.Node, depth: int, op: str) -> dict[str, str]:
    """Metadata for the call node standing for the object at ``depth`` (1 = below the root) of ``node``.

    The call node *is* that object, so it is recorded in the object's enclosing scopes (``depth - 1`` of
    them) with ``op`` (``torch.nn::LSTM``) as its operation, in the same format as ``node``'s record: a
    later grouping of an outer level picks the call up, and grouping the same level again leaves it alone.
    """
    meta = node.metadata_props
    if SCOPES_KEY in meta:
        outer = (metadata_chain(node) or [])[: depth - 1]
        out = {SCOPES_KEY: json.dumps([[s.path, s.cls] for s in outer], separators=(",", ":"))}
        if outer:
            out[NAMESPACE_KEY] = outer[-1].path
            if outer[-1].cls:
                out[CLASS_KEY] = outer[-1].cls
        return out
    if TORCH_NAME_SCOPES in meta and TORCH_CLASS_HIERARCHY in meta:
        names = list(_string_list(meta[TORCH_NAME_SCOPES]))[:depth]  # type: ignore[call-overload]
        classes = list(_string_list(meta[TORCH_CLASS_HIERARCHY]))[:depth]  # type: ignore[call-overload]
        own = (metadata_chain(node) or [Scope("")] * depth)[depth - 1].path
        names, classes = [*names, own], [*classes, op]
        namespace = "/".join(f"{p}: {c}" for p, c in zip(names, classes))
        return {NAMESPACE_KEY: namespace, TORCH_NAME_SCOPES: repr(names), TORCH_CLASS_HIERARCHY: repr(classes)}
    namespace = meta.get(NAMESPACE_KEY, "")
    if ": " in namespace:
        entries = namespace.split("/")
        own = entries[depth].partition(": ")[0] if len(entries) > depth else ""
        return {NAMESPACE_KEY: "/".join([*entries[:depth], f"{own}: {op}"])}
    return {}


def call_name(scope: Scope, by_name: bool) -> str:
    """Name of the call node for ``scope``: its path, or for node-name scopes ``/encoder/lstm1`` (the
    object's own name last, where an operation's name goes, so the call sits in the enclosing scope)."""
    if not by_name:
        return scope.path
    return "/" + "/".join(scope.path.split("."))


def function_name(scope: Scope, default_domain: str = SCOPE_DOMAIN) -> tuple[str, str]:
    """``(domain, name)`` of the function standing for ``scope``, per the naming contract of DESIGN.md.

    The domain is the class's public namespace: its module path with private parts (``_data``) dropped,
    shortened for the packages of :data:`PUBLIC_NAMESPACES` (``torch.nn.modules.rnn.LSTM`` ->
    ``("torch.nn", "LSTM")``, ``sklearn.preprocessing._data.StandardScaler`` ->
    ``("sklearn.preprocessing", "StandardScaler")``). Without a class, the domain is ``default_domain`` and
    the name the last part of the path without an exporter's call suffix (``cell_1`` -> ``cell``: the
    TorchScript exporter numbers repeated calls of one module so).
    """
    if not scope.cls:
        last = scope.path.rsplit(".", 1)[-1] or "root"
        return default_domain, re.sub(r"_\d+$", "", last) or last
    module, _, name = scope.cls.rpartition(".")
    public = ".".join(p for p in module.split(".") if p and not p.startswith("_") and not p.startswith("<"))
    for prefix, alias in PUBLIC_NAMESPACES:
        if (public + ".").startswith(prefix):
            public = alias
            break
    return public or module or "__main__", name
