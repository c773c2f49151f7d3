"""What the LSTM and GRU fusions share: reading a cell's gate weights, the one-step operator, and merging
consecutive one-step operators into one operator over the sequence.

A cell step matched by :mod:`~onegraph.passes.fusion.lstm` or :mod:`~onegraph.passes.fusion.gru` becomes
the standard operator run over a sequence of length 1 (``X = Unsqueeze(x_t)``, the states unsqueezed
in and squeezed out). :func:`merge_sequences` then joins each chain of such steps, where a step's
initial state is the previous step's final state and the weights are the same, into one ``LSTM`` / ``GRU``
over the whole sequence; per-step hidden states still used elsewhere are read from its ``Y`` output.
"""

from __future__ import annotations

import dataclasses
import hashlib

import numpy as np
import onnx_ir as ir
from onnxscript.rewriter._rewrite_rule import RULE_NAME_TAG

from onegraph.passes.fusion._match import (
    Linear,
    all_zero,
    as_linear,
    attr_int,
    constant,
    row_constant,
)


@dataclasses.dataclass
class Gates:
    """The pre-activations of a cell's gates: ``x @ W.T + Wb + h @ R.T + Rb``, rows in the cell's order.

    ``h`` is None when the exporter folded a zero initial state into the constant ``Rb`` (then ``R`` is
    zeros: it multiplies a zero state).
    """

    x: ir.Value
    h: ir.Value | None
    W: np.ndarray
    R: np.ndarray
    Wb: np.ndarray
    Rb: np.ndarray
    nodes: list[ir.Node]


def split_outputs(values: list[ir.Value], parts: int) -> tuple[ir.Node, list[int]] | None:
    """When ``values`` are distinct outputs of one ``Split`` into ``parts`` equal parts along the last
    axis of a 2-D tensor: the node and each value's output index."""
    node = values[0].producer()
    if node is None or node.op_type != "Split" or node.domain not in ("", "ai.onnx") or len(node.outputs) != parts:
        return None
    indices = []
    for v in values:
        if v.producer() is not node:
            return None
        indices.append(v.index())
    if sorted(indices) != list(range(parts)):
        return None
    source = node.inputs[0]
    r = source.shape.rank() if source.shape is not None else None
    axis = attr_int(node, "axis", 0)
    if r != 2 or axis not in (1, -1):
        return None
    if len(node.inputs) > 1 and node.inputs[1] is not None:
        sizes = constant(node.inputs[1])
        if sizes is None or len(set(sizes.reshape(-1).tolist())) != 1:
            return None
    return node, indices


def x_and_h(gates: ir.Value, hidden: int, h_hint: ir.Value | None = None, c: ir.Value | None = None) -> Gates | None:
    """Read ``gates`` (``[B, G * hidden]``) as ``linear(x) + linear(h)``, ``linear(x) + folded constant``
    or ``linear(concat(x, h))``. ``h_hint``: the hidden state when the cell's update names it (GRU);
    ``c``: the cell state that goes with the hidden state (LSTM)."""
    width = None
    node = gates.producer()
    if node is None:
        return None
    if node.op_type == "Add" and node.domain in ("", "ai.onnx"):
        a, b = node.inputs
        la, lb = as_linear(a), as_linear(b)
        width = (la or lb).weight.shape[0] if (la or lb) is not None else None
        if width is None:
            return None
        if la is not None and lb is not None:
            lx, lh = _order(la, lb, hidden, h_hint, c)
            if lx is None or lx.bias.shape != lh.bias.shape or lh.weight.shape[1] != hidden:
                return None
            return Gates(lx.input, lh.input, lx.weight, lh.weight, lx.bias, lh.bias, [node, *la.nodes, *lb.nodes])
        lin, other = (la, b) if la is not None else (lb, a)
        folded = row_constant(other, width)
        if folded is None:
            return None
        zeros = np.zeros((width, hidden), lin.weight.dtype)
        return Gates(lin.input, None, lin.weight, zeros, lin.bias, folded.astype(lin.bias.dtype), [node, *lin.nodes])
    lin = as_linear(gates)
    if lin is None:
        return None
    cat = lin.input.producer()
    if cat is None or cat.op_type != "Concat" or len(cat.inputs) != 2 or attr_int(cat, "axis", 0) not in (1, -1):
        return None
    x, h = cat.inputs
    widths = [v.shape[1] if v is not None and v.shape is not None and v.shape.rank() == 2 else None for v in (x, h)]
    if widths[1] != hidden or widths[0] is None or not isinstance(widths[0], int):
        return None
    split = widths[0]
    zeros = np.zeros_like(lin.bias)
    return Gates(x, h, lin.weight[:, :split], lin.weight[:, split:], lin.bias, zeros, [*lin.nodes, cat])


def _order(la: Linear, lb: Linear, hidden: int, h_hint: ir.Value | None,
           c: ir.Value | None) -> tuple[Linear | None, Linear]:
    """Which linear reads the input and which the hidden state (``(input, state)``)."""
    if h_hint is not None:
        if lb.input is h_hint:
            return la, lb
        if la.input is h_hint:
            return lb, la
        return None, lb
    fits = [lin.weight.shape[1] == hidden for lin in (la, lb)]
    if fits == [False, True]:
        return la, lb
    if fits == [True, False]:
        return lb, la
    # input and state have one width: the state is the h that comes with the cell state c (both from
    # one earlier fused step, both zero, both graph inputs); else the input is the one read from a time
    # slice; else PyTorch's order (state first)
    for test in (_pairs_with(c), _time_sliced):
        marks = [test(lin.input) for lin in (la, lb)]
        if marks == [True, False]:
            return (lb, la) if test is not _time_sliced else (la, lb)
        if marks == [False, True]:
            return (la, lb) if test is not _time_sliced else (lb, la)
    return lb, la


def _pairs_with(c: ir.Value | None):
    """A test: is ``h`` the hidden state that goes with cell state ``c``?"""
    def step_output(v: ir.Value | None) -> tuple[ir.Node, int] | None:
        p = v.producer() if v is not None else None
        if p is None or p.op_type != "Squeeze" or p.inputs[0] is None:
            return None
        q = p.inputs[0].producer()
        return (q, p.inputs[0].index()) if q is not None and q.op_type == "LSTM" else None

    source = step_output(c)

    def test(h: ir.Value) -> bool:
        if c is None:
            return False
        if source is not None:
            found = step_output(h)
            return found is not None and found[0] is source[0] and found[1] == 1
        if all_zero(c):
            return all_zero(h)
        return c.producer() is None and not c.is_initializer() and h.producer() is None and not h.is_initializer()

    return test


def _time_sliced(v: ir.Value) -> bool:
    p = v.producer()
    return p is not None and p.op_type in ("Gather", "Slice", "Squeeze", "Split") and not _from_fused_step(v)


def _from_fused_step(v: ir.Value) -> bool:
    """Whether ``v`` is a state an earlier fused step gives (a Squeeze of an LSTM / GRU output): a Squeeze that
    is not a time slice of the input."""
    p = v.producer()
    if p is None or p.op_type != "Squeeze" or not p.inputs or p.inputs[0] is None:
        return False
    q = p.inputs[0].producer()
    return q is not None and q.op_type in ("LSTM", "GRU")


def reorder(rows: np.ndarray, hidden: int, order: list[int]) -> np.ndarray:
    """Blocks of ``hidden`` rows of ``rows``, taken in ``order``."""
    return np.concatenate([rows[i * hidden:(i + 1) * hidden] for i in order], axis=0)


class WeightCache:
    """One initializer per distinct packed weight tensor, shared by every step of a graph."""

    def __init__(self) -> None:
        self._values: dict[tuple, ir.Value] = {}
        self._names: set[str] = set()
        self.graph: ir.Graph | None = None

    def reset(self, graph: ir.Graph | None = None) -> None:
        self._values.clear()
        self._names.clear()
        self.graph = graph

    def get(self, op, array: np.ndarray, hint: str) -> ir.Value:
        key = (array.dtype.str, array.shape, hashlib.sha1(np.ascontiguousarray(array).tobytes()).hexdigest())
        cached = self._values.get(key)
        if cached is not None and (cached.graph is not None or cached.is_initializer()):
            return cached
        taken = set(self.graph.initializers) if self.graph is not None else set()
        name, k = hint, 0
        while name in taken or name in self._names:
            k += 1
            name = f"{hint}_{k}"
        self._names.add(name)
        value = op.initializer(ir.tensor(np.ascontiguousarray(array)), name=name)
        self._values[key] = value
        return value


def one_step(op, kind: str, x: ir.Value, states: list[ir.Value | None], weights: list[ir.Value], hidden: int,
             **attributes) -> list[ir.Value]:
    """``kind`` (``LSTM`` / ``GRU``) over a sequence of one step; returns the final states, squeezed."""
    zero = op.Constant(value_ints=[0])
    inputs: list[ir.Value | None] = [op.Unsqueeze(x, zero), *weights, None]
    inputs += [None if s is None else op.Unsqueeze(s, zero) for s in states]
    while inputs[-1] is None:
        inputs.pop()
    outputs = getattr(op, kind)(*inputs, hidden_size=hidden, _outputs=1 + len(states), **attributes)
    return [op.Squeeze(v, zero) for v in outputs[1:]]


def state_value(value: ir.Value) -> ir.Value | None:
    """The state to start from: None for an all-zero constant (the operators' default initial state)."""
    return None if all_zero(value) else value


# -- merging steps into sequences -----------------------------------------------------------------
#: Metadata key on a merged operator: how many steps it runs (so a layer above can read its Y whole).
STEPS = "onegraph.fusion.steps"


@dataclasses.dataclass(eq=False)
class _Step:
    node: ir.Node
    states_in: list[ir.Value | None]    # h (and c) before the step, [B, H] (None: zeros)
    states_out: list[ir.Value]          # h (and c) after the step, [B, H]

    @property
    def x(self) -> ir.Value:
        """x_t ([B, I]), read now: merging an earlier chain may have replaced it."""
        return self.node.inputs[0].producer().inputs[0]  # type: ignore[union-attr,return-value]


def merge_sequences(model: ir.Model, kind: str, rule_prefix: str) -> dict[str, int]:
    """Merge chains of one-step ``kind`` nodes made by the rules named ``rule_prefix*`` (see module doc).

    Returns ``{"<kind>_sequence": number of merged operators, "<kind>_steps_merged": steps they hold}``.
    """
    graph = model.graph
    nodes = list(graph)
    pos = {n: i for i, n in enumerate(nodes)}
    n_states = 2 if kind == "LSTM" else 1
    steps = [s for s in (_read_step(n, n_states, rule_prefix) for n in nodes if n.op_type == kind) if s is not None]
    by_state = {s.states_out[0]: s for s in steps}
    successor: dict[_Step, _Step] = {}
    predecessor: dict[_Step, _Step] = {}
    for s in steps:
        prev = by_state.get(s.states_in[0]) if s.states_in[0] is not None else None
        if prev is None or prev in successor or not _links(prev, s, n_states):
            continue
        successor[prev] = s
        predecessor[s] = prev
    key = kind.lower()
    counts = {f"{key}_sequence": 0, f"{key}_steps_merged": 0}
    for head in steps:
        if head in predecessor or head not in successor:
            continue
        chain = [head]
        while chain[-1] in successor:
            chain.append(successor[chain[-1]])
        if _merge(graph, kind, chain, pos):
            counts[f"{key}_sequence"] += 1
            counts[f"{key}_steps_merged"] += len(chain)
            pos = {n: i for i, n in enumerate(graph)}  # the merged nodes went before the chain's head
    return counts


def _read_step(node: ir.Node, n_states: int, rule_prefix: str) -> _Step | None:
    if not node.metadata_props.get(RULE_NAME_TAG, "").startswith(rule_prefix):
        return None
    x_in = node.inputs[0]
    unsq = x_in.producer() if x_in is not None else None
    if unsq is None or unsq.op_type != "Unsqueeze":
        return None
    states_in: list[ir.Value | None] = []
    for i in range(n_states):
        v = node.inputs[5 + i] if len(node.inputs) > 5 + i else None
        if v is None:
            states_in.append(None)
            continue
        p = v.producer()
        if p is None or p.op_type != "Unsqueeze" or len(v.uses()) != 1:
            return None
        states_in.append(p.inputs[0])
    states_out = []
    for out in node.outputs[1:1 + n_states]:
        uses = out.uses()
        if len(uses) != 1 or uses[0].node.op_type != "Squeeze" or out.is_graph_output():
            return None
        states_out.append(uses[0].node.outputs[0])
    if node.outputs[0].uses() or node.outputs[0].is_graph_output():
        return None
    return _Step(node, states_in, states_out)


def _links(prev: _Step, step: _Step, n_states: int) -> bool:
    """``step`` continues ``prev``: it starts from all of ``prev``'s states, with the same weights and
    attributes; a state other than h (LSTM's c) is used by nothing else."""
    for i in range(n_states):
        if step.states_in[i] is not prev.states_out[i]:
            return False
    for v in prev.states_out[1:]:
        if len(v.uses()) != 1 or v.is_graph_output():
            return False
    if prev.node.attributes.keys() != step.node.attributes.keys():
        return False
    for name, attr in prev.node.attributes.items():
        if step.node.attributes[name].value != attr.value:
            return False
    # W and B must match; R must match unless prev starts from a folded zero state (R multiplies zero)
    same_r = prev.states_in[0] is None and len(prev.node.inputs) <= 5
    return (_same(prev.node.inputs[1], step.node.inputs[1]) and _same(prev.node.inputs[3], step.node.inputs[3])
            and (same_r or _same(prev.node.inputs[2], step.node.inputs[2])))


def _same(a: ir.Value | None, b: ir.Value | None) -> bool:
    if a is b:
        return True
    x, y = constant(a), constant(b)
    return x is not None and y is not None and x.shape == y.shape and np.array_equal(x, y)


def _merge(graph: ir.Graph, kind: str, chain: list[_Step], pos: dict[ir.Node, int]) -> bool:
    head, last = chain[0], chain[-1]
    T = len(chain)
    new: list[ir.Node] = []

    def add(op_type: str, inputs: list, num_outputs: int = 1, **attrs) -> list[ir.Value]:
        node = ir.node(op_type, inputs, attributes=attrs, num_outputs=num_outputs)
        new.append(node)
        return list(node.outputs)

    def ints(values: list[int]) -> ir.Value:
        return add("Constant", [], value=ir.tensor(np.asarray(values, np.int64)))[0]

    x_seq = _sequence_input(chain, add, ints, pos)
    if x_seq is None:
        return False
    weights = list(head.node.inputs[1:4])
    if head.states_in[0] is None and len(chain) > 1:
        weights[1] = chain[1].node.inputs[2]  # the head's R multiplied a zero state; any later step's R holds
    states = list(head.node.inputs[5:])
    inputs = [x_seq, *weights, None, *states]
    while inputs[-1] is None:
        inputs.pop()
    op = ir.node(kind, inputs, attributes={k: a for k, a in head.node.attributes.items()},
                 num_outputs=len(head.node.outputs), metadata_props={**head.node.metadata_props, STEPS: str(T)})
    new.append(op)
    y = op.outputs[0]
    replace: list[tuple[ir.Value, ir.Value]] = []
    zero = ints([0])
    for t, step in enumerate(chain[:-1]):
        h = step.states_out[0]
        if any(u.node is not chain[t + 1].node.inputs[5].producer() for u in h.uses()) or h.is_graph_output():
            (row,) = add("Gather", [y, add("Constant", [], value=ir.tensor(np.int64(t)))[0]], axis=0)
            replace.append((h, add("Squeeze", [row, zero])[0]))
    for i, out in enumerate(last.states_out):
        replace.append((out, add("Squeeze", [op.outputs[1 + i], zero])[0]))
    graph.insert_before(head.node, new)
    for old, value in replace:
        value.name, value.type, value.shape = old.name, old.type, old.shape
        old.name = None
        old.replace_all_uses_with(value, replace_graph_outputs=True)
    return True


def _sequence_input(chain: list[_Step], add, ints, pos: dict[ir.Node, int]) -> ir.Value | None:
    """``[T, B, I]`` input of the merged operator: a transpose or slice of the tensor every ``x_t`` was
    taken from at consecutive time steps, else the steps' inputs concatenated (when all exist before the
    first step, so the merged operator can run there)."""
    T = len(chain)
    sequence = _sequence_output(chain)
    if sequence is not None:  # the steps read a merged layer's per-step states: its Y, [T, 1, B, H]
        return add("Squeeze", [sequence, ints([1])])[0]
    sources = [_time_slice(s.x) for s in chain]
    if all(src is not None for src in sources):
        tensor, axis, start = sources[0]  # type: ignore[misc]
        if all(src[0] is tensor and src[1] == axis and src[2] == start + t for t, src in enumerate(sources)):  # type: ignore[index]
            dims = tensor.shape
            length = dims[axis] if dims is not None and dims.rank() > axis else None
            if not (start == 0 and length == T):
                (tensor,) = add("Slice", [tensor, ints([start]), ints([start + T]), ints([axis])])
            if axis == 1:
                return add("Transpose", [tensor], perm=[1, 0, 2])[0]
            return tensor
    first = pos[chain[0].node]
    for s in chain:
        p = s.x.producer()
        if p is not None and pos.get(p, first + 1) >= first:
            return None
    zero = ints([0])
    return add("Concat", [add("Unsqueeze", [s.x, zero])[0] for s in chain], axis=0)[0]


def _sequence_output(chain: list[_Step]) -> ir.Value | None:
    """The ``Y`` of a merged operator of ``len(chain)`` steps when step ``t`` reads its state ``t``."""
    found = None
    for t, s in enumerate(chain):
        read = _merged_state(s.x)
        if read is None or read[1] != t or (found is not None and read[0] is not found):
            return None
        found = read[0]
    if found is None or found.metadata_props.get(STEPS) != str(len(chain)):
        return None
    return found.outputs[0]


def _merged_state(v: ir.Value) -> tuple[ir.Node, int] | None:
    """``(merged operator, t)`` when ``v`` is its hidden state after step ``t``: ``Squeeze(Gather(Y, t))``,
    or ``Squeeze(Y_h)`` for the last step."""
    squeeze = v.producer()
    if squeeze is None or squeeze.op_type != "Squeeze" or squeeze.inputs[0] is None:
        return None
    inner = squeeze.inputs[0]
    p = inner.producer()
    if p is None:
        return None
    if STEPS in p.metadata_props and inner.index() == 1:
        return p, int(p.metadata_props[STEPS]) - 1
    if p.op_type != "Gather" or attr_int(p, "axis", 0) != 0 or p.inputs[0] is None:
        return None
    index = constant(p.inputs[1])
    merged = p.inputs[0].producer()
    if index is None or index.ndim != 0 or merged is None or STEPS not in merged.metadata_props:
        return None
    return (merged, int(index)) if p.inputs[0].index() == 0 else None


def _time_slice(x: ir.Value) -> tuple[ir.Value, int, int] | None:
    """``x_t`` as ``(tensor, axis, t)`` when it is ``Gather(tensor, t, axis)`` of a 3-D tensor, axis 0 or 1."""
    p = x.producer()
    if p is None or p.op_type != "Gather" or p.domain not in ("", "ai.onnx"):
        return None
    src = p.inputs[0]
    if src is None or src.shape is None or src.shape.rank() != 3:
        return None
    index = constant(p.inputs[1])
    axis = attr_int(p, "axis", 0)
    if index is None or index.ndim != 0 or axis not in (0, 1):
        return None
    t = int(index)
    length = src.shape[axis]
    if t < 0:
        if not isinstance(length, int):
            return None
        t += length
    return src, axis, t

