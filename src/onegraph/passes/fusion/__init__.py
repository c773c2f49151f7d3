"""Re-fusion: decomposed operations back into the standard ONNX operators, or into named functions.

Rule families (one module per pattern, each an onnxscript rewriter rule set):

=============  ==============================================  =============================================
family         matches                                         becomes
=============  ==============================================  =============================================
``layer_norm``  mean / variance / normalize [* scale] [+ bias]  ``LayerNormalization`` (opset 17)
``gelu``        ``0.5 x (1 + erf(x / sqrt 2))``, tanh form       ``Gelu`` (opset 20)
``lstm``        one LSTM cell step (gates, state update)        ``LSTM``; consecutive steps merge into one
``gru``         one GRU cell step                               ``GRU`` (``linear_before_reset=1``); merged
=============  ==============================================  =============================================

With ``as_functions=True`` nothing is rewritten: each match (the same matches) is grouped into a call of
a model-local function ``onegraph.fusion::<Operator>`` (``LSTMCell`` / ``GRUCell`` for one recurrent step)
wrapping the original nodes, so a backend can map the name to its kernel
(:class:`onegraph.passes.kernels.KernelMap`) or run the body.

Every rule checks that the fused operator computes what the matched nodes compute (shapes that
broadcast, attribute defaults, activations, constants, element types, opset) and declines otherwise.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable

import onnx_ir as ir
from onnx_ir.passes.common import RemoveUnusedNodesPass
from onnxscript.rewriter import pattern

from onegraph.errors import PassError
from onegraph.passes._gc import paused

#: Domain of the functions ``as_functions=True`` makes.
FUSION_DOMAIN = "onegraph.fusion"


@dataclasses.dataclass
class Family:
    """One pattern: its rules (by count key, tried in order), the function name for ``as_functions``,
    and an optional pass run after the rules (merging recurrent steps into sequences)."""

    name: str
    function: str
    make: Callable[[], dict[str, list[tuple[pattern.RewriteRule, object]]]]
    after: Callable[[ir.Model], dict[str, int]] | None = None


def families() -> dict[str, Family]:
    """The rule families, by name (the CLI's ``--rules``)."""
    from onegraph.passes.fusion import gelu, gru, layer_norm, lstm

    return {
        "layer_norm": Family("layer_norm", "LayerNormalization", layer_norm.rules),
        "gelu": Family("gelu", "Gelu", gelu.rules),
        "lstm": Family("lstm", "LSTMCell", lstm.rules, lstm.merge_sequences),
        "gru": Family("gru", "GRUCell", gru.rules, gru.merge_sequences),
    }


def fuse(model: ir.Model, rules: Iterable[str] | None = None, *, as_functions: bool = False) -> dict[str, int]:
    """Fuse decomposed operations of ``model`` in place.

    Parameters
    ----------
    model:
        An :class:`onnx_ir.Model`; its main graph is rewritten.
    rules:
        Family names (``layer_norm``, ``gelu``, ``lstm``, ``gru``); None for all.
    as_functions:
        Wrap each match into a call of ``onegraph.fusion::<Operator>`` instead of rewriting it.

    Returns
    -------
    dict
        Matches per rule key (``layer_norm``, ``gelu_erf``, ``gelu_tanh``, ``lstm_cell``,
        ``lstm_sequence``, ``gru_cell``, ``gru_sequence``), zero included.

    Raises
    ------
    PassError
        for an unknown rule name, or an empty ``rules`` (a name given twice counts once).
    """
    from onegraph.passes._model import require_ir

    require_ir(model, "fuse")
    if isinstance(rules, str):  # one family by name, not its letters
        rules = [rules]
    known = families()
    # a family named twice would run twice, its second (empty) pass overwriting the counts of the first
    names = list(known) if rules is None else list(dict.fromkeys(rules))
    if not names:
        raise PassError("no fusion rule given", hint=f"name one or more of {', '.join(known)}, or leave the "
                        "rules out for all")
    for name in names:
        if name not in known:
            raise PassError(f"unknown fusion rule {name!r}", hint=f"use one of {', '.join(known)}")
    with paused():
        return _fuse(model, [known[n] for n in names], as_functions)


def _fuse(model: ir.Model, chosen: list[Family], as_functions: bool) -> dict[str, int]:
    counts: dict[str, int] = {}
    _infer_types(model)
    if as_functions:
        counts.update(_wrap(model, chosen))
        return counts
    for family in chosen:
        for key, entries in family.make().items():
            try:
                counts[key] = pattern.RewriteRuleSet([rule for rule, _ in entries]).apply_to_model(model)
            except (TypeError, ValueError, AttributeError, KeyError, IndexError) as exc:
                # the rewriter (its constant propagation first) misreads malformed nodes: a Constant whose
                # value attribute has another type, say (the caller writes nothing)
                raise PassError(f"the {family.name} rules cannot run on this model: {type(exc).__name__}: "
                                f"{' '.join(str(exc).split())[:200]}",
                                hint="check the model with `onegraph check`") from None
        if family.after is not None:
            counts.update(family.after(model))
    RemoveUnusedNodesPass()(model)
    return counts


class FusePass(ir.passes.InPlacePass):
    """:func:`fuse` as a pass; ``counts`` holds the last run's matches per rule key."""

    def __init__(self, rules: Iterable[str] | None = None, *, as_functions: bool = False) -> None:
        super().__init__()
        self.rules = None if rules is None else list(rules)
        self.as_functions = as_functions
        self.counts: dict[str, int] = {}

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        self.counts = fuse(model, self.rules, as_functions=self.as_functions)
        return ir.passes.PassResult(model, modified=any(self.counts.values()))


def _infer_types(model: ir.Model) -> None:
    """Fill in element types and shapes the exporter did not record (the rules check them).

    ONNX shape inference, run in the checking process (the model may come from any file: onnx's C++ inference
    crashes on some graphs, :mod:`onegraph.check.native`), merged back by value name; a model it cannot infer
    (custom operators) is left as it is, and rules needing a missing type simply do not fire.
    """
    from onegraph.check.native import infer_shapes

    if all(v.type is not None and v.shape is not None for node in model.graph for v in node.outputs):
        return  # the exporter recorded them all (PyTorch's dynamo exporter does)
    try:
        inferred = ir.from_proto(infer_shapes(ir.to_proto(model), check_type=True, data_prop=True))
    except Exception:  # onnx's inference raises several types for models it cannot handle, or crashed there
        return
    for graph, typed in zip(model.graphs(), inferred.graphs()):
        known = ir.convenience.create_value_mapping(typed)
        for name, value in ir.convenience.create_value_mapping(graph).items():
            other = known.get(name)
            if other is None:
                continue
            if value.shape is None and other.shape is not None:
                value.shape = other.shape
            if value.type is None and other.type is not None:
                value.type = other.type


def _wrap(model: ir.Model, chosen: list[Family]) -> dict[str, int]:
    """Group each match (without rewriting it) into a call of ``onegraph.fusion::<Operator>``."""
    from onegraph.passes.functions import group
    from onegraph.passes.grouping import Group
    from onegraph.passes.scopes import metadata_chain

    graph = model.graph
    taken: set[ir.Node] = set()
    groups: list[Group] = []
    counts: dict[str, int] = {}
    order = {n: i for i, n in enumerate(graph)}
    for family in chosen:
        for key, entries in family.make().items():
            counts[key] = 0
            for _, instance in entries:
                instance.setup()  # type: ignore[attr-defined]
            for node in list(graph):
                if node in taken:
                    continue
                for rule, instance in entries:
                    delta = rule.try_rewrite(model, graph, node)
                    if delta is None:
                        continue
                    extra = list(getattr(instance, "wrapped_nodes", lambda: [])())
                    nodes = [n for n in dict.fromkeys([*delta.match.nodes, *extra]) if n.graph is graph]
                    if taken.intersection(nodes) or _leaks(nodes, delta.match.outputs):
                        break
                    taken.update(nodes)
                    nodes.sort(key=order.__getitem__)
                    groups.append(Group(FUSION_DOMAIN, family.function, _common_path(nodes, metadata_chain), nodes,
                                        constants_inside=True))
                    counts[key] += 1
                    break
    group(model, groups)
    return counts


def _leaks(nodes: list[ir.Node], outputs) -> bool:
    """True when a value of ``nodes`` other than the match's outputs is used outside them: the function
    would need more outputs than the operation it stands for has."""
    inside = set(nodes)
    results = set(outputs)
    for n in nodes:
        for v in n.outputs:
            if v in results:
                continue
            if v.is_graph_output() or any(u.node not in inside for u in v.uses()):
                return True
    return False


def _common_path(nodes: list[ir.Node], chain_of) -> str:
    """The innermost source object all nodes share (their instance path), or ''."""
    common = None
    for n in nodes:
        chain = chain_of(n)
        if chain is None:
            continue
        paths = [s.path for s in chain]
        common = paths if common is None else [a for a, b in zip(common, paths) if a == b]
    return common[-1] if common else ""


class _Rule(pattern.RewriteRule):
    """A rewrite rule that skips, before any matching work, nodes whose operator is not its pattern's root.

    The rewriter tries every rule at every node; on graphs of 100,000 nodes the setup of each failing
    attempt costs more than the matching itself.
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        roots = self._target_pattern.output_nodes
        ident = roots[0].op_identifier() if len(roots) == 1 else None
        self._root = (ident[0] if ident[0] != "ai.onnx" else "", ident[1]) if ident is not None else None

    def try_rewrite(self, model, graph_or_function, node, **kwargs):
        if self._root is not None and (node.op_type != self._root[1] or
                                       (node.domain if node.domain != "ai.onnx" else "") != self._root[0]):
            return None
        return super().try_rewrite(model, graph_or_function, node, **kwargs)


def make_rule(instance: pattern.RewriteRuleClassBase) -> tuple[pattern.RewriteRule, object]:
    """The rewrite rule of a rule-class instance, with the instance (its ``check`` keeps what it found)."""
    # remove_nodes=False: a matched intermediate also used elsewhere (two GELUs sharing ``0.5 * x``) stays
    # for its other users instead of blocking the match; what nothing uses any more is removed afterwards
    rule = _Rule(instance.pattern, instance.rewrite, instance.check, name=instance.name, remove_nodes=False,
                 graph_pre_visitor=instance.setup, graph_post_visitor=instance.cleanup)
    return rule, instance


__all__ = ["FUSION_DOMAIN", "Family", "FusePass", "families", "fuse", "make_rule"]
