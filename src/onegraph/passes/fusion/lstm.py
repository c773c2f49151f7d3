"""LSTM cell steps unrolled over time -> ONNX ``LSTM``.

One step (Hochreiter & Schmidhuber, 1997, with a forget gate; PyTorch's ``LSTMCell``)::

    gates      = x_t @ W_ih.T + b_ih + h @ W_hh.T + b_hh        # [B, 4H], split in four
    i, f, g, o = sigmoid(.), sigmoid(.), tanh(.), sigmoid(.)
    c'         = f * c + i * g
    h'         = o * tanh(c')

as PyTorch exports an ``LSTMCell`` called in a loop (``Gemm`` + ``Gemm`` + ``Add`` + ``Split``) and as
hand-written cells write it (``nn.Linear`` layers, ``chunk``, one linear over ``cat([x, h])``; the gates in
any order of the split, found from which activation each chunk goes through). A step becomes ``LSTM``
over one time step, with the weights repacked into ONNX's ``iofc`` gate order
(``W = [W_i; W_o; W_f; W_c]``, ``B = [Wb; Rb]``); a zero initial state the exporter folded into a
constant becomes the operator's default zero state. Consecutive steps then merge into one ``LSTM`` over
the sequence (:func:`merge_sequences`).

Declines (the pattern or the check fails) on anything the operator computes differently: peephole
connections (a gate reads ``c``), clipped cells, other activations, coupled input-forget gates, a split
that is not four equal chunks of the last axis, weights that are not constants, types other than float
(ONNX's LSTM takes double too, but onnxruntime's kernel does not).
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir
from onnxscript.rewriter import pattern

from onegraph.passes.fusion import _recurrent
from onegraph.passes.fusion._match import either

__all__ = ["RULE", "LstmCell", "rules", "merge_sequences"]

#: the onnxscript rule-name prefix of the one-step rules (the merge pass finds their nodes by it)
RULE = "LstmCell"


class LstmCell(pattern.RewriteRuleClassBase):
    """One LSTM step -> ``LSTM`` over a sequence of length 1 (outputs ``h'``, ``c'``)."""

    def __init__(self, swap: bool) -> None:
        super().__init__(name=f"{RULE}[{'swapped' if swap else 'plain'}]")
        self.swap = swap
        self.weights = _recurrent.WeightCache()
        self._nodes: list = []

    def setup(self) -> None:
        self.weights.reset()

    def pattern(self, op, i_pre, f_pre, g_pre, o_pre, c):
        i, f, g, o = op.Sigmoid(i_pre), op.Sigmoid(f_pre), op.Tanh(g_pre), op.Sigmoid(o_pre)
        c_new = either(op.Add, either(op.Mul, f, c), either(op.Mul, i, g))
        squashed = op.Tanh(c_new)
        h_new = op.Mul(squashed, o) if self.swap else op.Mul(o, squashed)
        return h_new, c_new

    def check(self, context, i_pre, f_pre, g_pre, o_pre, c, **_):
        result = pattern.MatchResult()
        self.weights.graph = context.graph_or_function
        found = _recurrent.split_outputs([i_pre, f_pre, g_pre, o_pre], 4)
        if found is None:
            return result.fail("the gate pre-activations are not the four equal chunks of one split")
        split, order = found
        gates = split.inputs[0]
        if gates.dtype != ir.DataType.FLOAT:  # ONNX allows double, onnxruntime's LSTM kernel does not
            return result.fail("the gates are not float", gates)
        width = gates.shape[1] if gates.shape is not None else None
        if not isinstance(width, int) or width % 4:
            return result.fail("the gates' width is unknown", gates)
        hidden = width // 4
        read = _recurrent.x_and_h(gates, hidden, c=c)
        if read is None:
            return result.fail("the gates are not linear layers of the input and the state with constant weights")
        if c.shape is not None and (c.shape.rank() != 2 or c.shape[1] != hidden):
            return result.fail("the cell state is not [batch, hidden]", c)
        self._hidden, self._read, self._order = hidden, read, order
        self._nodes = [split, *read.nodes]
        return result

    def wrapped_nodes(self) -> list:
        """The matched step's other nodes (split, linear layers), for ``as_functions``."""
        return self._nodes

    def rewrite(self, op, c, **_):
        read, hidden = self._read, self._hidden
        iofc = [self._order[k] for k in (0, 3, 1, 2)]  # split positions of i, o, f, c(g)
        pack = lambda a: _recurrent.reorder(a, hidden, iofc)  # noqa: E731
        W = self.weights.get(op, pack(read.W)[None], "lstm_W")
        R = self.weights.get(op, pack(read.R)[None], "lstm_R")
        B = self.weights.get(op, np.concatenate([pack(read.Wb), pack(read.Rb)])[None], "lstm_B")
        h = None if read.h is None else _recurrent.state_value(read.h)
        h_new, c_new = _recurrent.one_step(op, "LSTM", read.x, [h, _recurrent.state_value(c)], [W, R, B], hidden)
        return h_new, c_new


def rules() -> dict[str, list]:
    """The LSTM step rules (count key ``lstm_cell``)."""
    from onegraph.passes.fusion import make_rule

    return {"lstm_cell": [make_rule(LstmCell(swap)) for swap in (False, True)]}


def merge_sequences(model) -> dict[str, int]:
    """Merge chains of fused steps into one ``LSTM`` each (count keys ``lstm_sequence``, ``lstm_steps_merged``)."""
    return _recurrent.merge_sequences(model, "LSTM", RULE)
