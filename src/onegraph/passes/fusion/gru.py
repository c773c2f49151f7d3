"""GRU cell steps unrolled over time -> ONNX ``GRU`` (``linear_before_reset=1``).

One step (Cho et al., 2014, as PyTorch's ``GRUCell`` computes it)::

    r, z, n pre-activations of x: split(x_t @ W_ih.T + b_ih, 3);   of h: split(h @ W_hh.T + b_hh, 3)
    r  = sigmoid(x_r + h_r);  z = sigmoid(x_z + h_z)
    n  = tanh(x_n + r * h_n)                      # reset applied after the state's linear layer
    h' = n + z * (h - n)   or   (1 - z) * n + z * h

as PyTorch exports a ``GRUCell`` loop and hand-written cells write it. A step becomes ``GRU`` over one
time step with ``linear_before_reset=1`` (the reset gate multiplies ``h @ R_n.T + Rb_n``, as above) and
the weights repacked into ONNX's ``zrh`` order; consecutive steps merge into one ``GRU``.

Declines on the original formulation that resets the state before its linear layer
(``tanh(x_n + (r * h) @ W_hn.T)``: another operator mode, not this pattern), other activations, splits
that are not three equal chunks of the last axis, non-constant weights, types other than float.
"""

from __future__ import annotations

import numpy as np
from onnxscript.rewriter import pattern

from onegraph.passes.fusion import _recurrent
from onegraph.passes.fusion._match import (
    all_zero,
    as_linear,
    either,
    is_number,
    row_constant,
)

__all__ = ["RULE", "GruCell", "rules", "merge_sequences"]

RULE = "GruCell"

# how h' is written: n + z * (h - n), or (1 - z) * n + z * h
_UPDATES = ("interpolate", "complement")


class GruCell(pattern.RewriteRuleClassBase):
    """One GRU step -> ``GRU`` over a sequence of length 1 (output ``h'``)."""

    def __init__(self, update: str, swap: bool) -> None:
        super().__init__(name=f"{RULE}[{update}{'/swapped' if swap else ''}]")
        self.update, self.swap = update, swap
        self.weights = _recurrent.WeightCache()
        self._nodes: list = []

    def setup(self) -> None:
        self.weights.reset()

    def pattern(self, op, x_r, x_z, x_n, h_r, h_z, h_n, h, one):
        r = op.Sigmoid(either(op.Add, x_r, h_r))
        z = op.Sigmoid(either(op.Add, x_z, h_z))
        n = op.Tanh(either(op.Add, x_n, either(op.Mul, r, h_n)))
        if self.update == "interpolate":
            a, b = n, either(op.Mul, op.Sub(h, n), z)
        else:
            a, b = either(op.Mul, op.Sub(one, z), n), either(op.Mul, z, h)
        return op.Add(b, a) if self.swap else op.Add(a, b)

    def check(self, context, x_r, x_z, x_n, h_r, h_z, h_n, h, one=None, **_):
        result = pattern.MatchResult()
        self.weights.graph = context.graph_or_function
        if one is not None and not is_number(one, 1.0, rel_tol=0.0):
            return result.fail("the update is not 1 - z")
        # the sums x_r + h_r, x_z + h_z match either way round: the state's chunk is the one from h_n's split
        pairs = [_by_split(a, b, h_n.producer()) for a, b in ((x_r, h_r), (x_z, h_z))]
        if None in pairs:
            return result.fail("the reset and update gates do not each add one chunk of each split")
        (x_r, h_r), (x_z, h_z) = pairs  # type: ignore[misc]
        xs = _recurrent.split_outputs([x_r, x_z, x_n], 3)
        hs = _recurrent.split_outputs([h_r, h_z, h_n], 3)
        if xs is None or hs is None:
            return result.fail("the pre-activations are not chunks of two three-way splits")
        (x_split, x_order), (h_split, h_order) = xs, hs
        lin_x = as_linear(x_split.inputs[0])
        if lin_x is None or lin_x.weight.dtype != np.float32:  # onnxruntime's GRU kernel takes float only
            return result.fail("the input's gates are not a linear layer with constant weights")
        width = lin_x.weight.shape[0]
        hidden = width // 3
        if width % 3 or (h.shape is not None and (h.shape.rank() != 2 or h.shape[1] != hidden)):
            return result.fail("the state is not [batch, hidden]", h)
        lin_h = as_linear(h_split.inputs[0])
        same_state = lin_h is not None and (lin_h.input is h or (all_zero(lin_h.input) and all_zero(h)))
        if same_state and lin_h.weight.shape == (width, hidden):
            R, Rb, nodes = lin_h.weight, lin_h.bias, lin_h.nodes
        else:
            folded = row_constant(h_split.inputs[0], width)
            if folded is None or not all_zero(h):
                return result.fail("the state's gates are not a linear layer of the state")
            R, Rb, nodes = np.zeros((width, hidden), lin_x.weight.dtype), folded, []
        self._hidden = hidden
        self._gates = _recurrent.Gates(lin_x.input, h, lin_x.weight, R, lin_x.bias, Rb.astype(lin_x.bias.dtype), [])
        self._orders = (x_order, h_order)
        self._nodes = [x_split, h_split, *lin_x.nodes, *nodes]
        return result

    def wrapped_nodes(self) -> list:
        """The matched step's other nodes (splits, linear layers), for ``as_functions``."""
        return self._nodes

    def rewrite(self, op, **_):
        read, hidden = self._gates, self._hidden
        x_order, h_order = self._orders
        zrh = lambda order: [order[k] for k in (1, 0, 2)]  # noqa: E731  # split positions of z, r, n
        W = _recurrent.reorder(read.W, hidden, zrh(x_order))
        R = _recurrent.reorder(read.R, hidden, zrh(h_order))
        B = np.concatenate([_recurrent.reorder(read.Wb, hidden, zrh(x_order)),
                            _recurrent.reorder(read.Rb, hidden, zrh(h_order))])
        weights = [self.weights.get(op, W[None], "gru_W"), self.weights.get(op, R[None], "gru_R"),
                   self.weights.get(op, B[None], "gru_B")]
        (h_new,) = _recurrent.one_step(op, "GRU", read.x, [_recurrent.state_value(read.h)], weights, hidden,
                                       linear_before_reset=1)
        return h_new


def _by_split(a, b, state_split):
    """``(input chunk, state chunk)`` of a gate's sum, the state chunk being the one ``state_split`` made."""
    if b.producer() is state_split and a.producer() is not state_split:
        return a, b
    if a.producer() is state_split and b.producer() is not state_split:
        return b, a
    return None


def rules() -> dict[str, list]:
    """The GRU step rules (count key ``gru_cell``)."""
    from onegraph.passes.fusion import make_rule

    return {"gru_cell": [make_rule(GruCell(u, swap)) for u in _UPDATES for swap in (False, True)]}


def merge_sequences(model) -> dict[str, int]:
    """Merge chains of fused steps into one ``GRU`` each (count keys ``gru_sequence``, ``gru_steps_merged``)."""
    return _recurrent.merge_sequences(model, "GRU", RULE)
