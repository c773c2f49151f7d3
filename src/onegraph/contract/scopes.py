"""Where a node came from: the node metadata keys the graph builder writes and the passes read.

:class:`onegraph.emit.GraphBuilder` records, on every node it adds inside ``g.scope(path, obj)``, the object
path and class that emitted it; :mod:`onegraph.passes` groups nodes into named model-local functions by
these keys (domain = the source's namespace, name = its class, overload = its path).
"""

__all__ = ["NAMESPACE_KEY", "CLASS_KEY", "SCOPES_KEY"]

#: Node metadata key holding the object path that emitted the node (``pipeline.columntransformer.num``).
NAMESPACE_KEY = "namespace"
#: Node metadata key holding the qualified class of the object that emitted the node.
CLASS_KEY = "onegraph.class"
#: Node metadata key holding every enclosing scope, outermost first, as a JSON list of ``[path, class]``
#: pairs (a pipeline, its column transformer, the step), so a pass can group nested objects.
SCOPES_KEY = "onegraph.scopes"
