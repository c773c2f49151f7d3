"""Structure-level mutations beyond :class:`onegraph.check.fuzz.Mutator`'s: what a model onegraph made carries
(metadata JSON, function bodies, nested control flow) and what breaks name resolution (invalid UTF-8,
duplicates, domains).

The mutants are built from the seeds' parsed messages (our own valid bytes), so parsing them here is safe.
External-data locations point at the campaign's canaries: files outside the case's folder (``../weights.bin``,
an absolute path), a symbolic link and a hard link to one inside it — reading any of them is a failure.
"""

from __future__ import annotations

import json
import random

import onnx
from onnx import TensorProto, helper

from onegraph.check import fuzz

__all__ = ["CampaignMutator", "mutants"]

_METADATA_KEYS = ["org.onegraph.inputs", "org.onegraph.outputs", "org.onegraph.sequence", "org.onegraph.meta_version",
                  "org.onegraph.training_data", "org.onegraph.lineage", "org.onegraph.federated",
                  "org.onegraph.hyperparameters", "org.onegraph.created_at", "model_author", "org.onegraph.new_key"]


_PLACEHOLDER = "onegraph-not-utf8"
#: byte strings as long as the placeholder that are not UTF-8 (lone surrogate, stray continuation, NUL, 0xff)
_INVALID_UTF8 = [b"\xff\xfe" + b"x" * 15, b"\xed\xa0\x80" + b"x" * 14, b"a\x00" + b"\x80" * 15,
                 b"\xc3" + b"y" * 16]


def _nested(depth: int, kind: str) -> str:
    return ("[" * depth + "]" * depth) if kind == "list" else ('{"a":' * depth + "1" + "}" * depth)


class CampaignMutator(fuzz.Mutator):
    """:class:`onegraph.check.fuzz.Mutator` plus the structure-level mutations of the campaign.

    ``outside`` is the absolute path of a canary outside the case's folder (for absolute locations).
    """

    def __init__(self, rng: random.Random, outside: str) -> None:
        super().__init__(rng)
        self.locations = ["../weights.bin", "sub/../../weights.bin", outside, "link.bin", "hard.bin", "weights.bin",
                          "missing.bin", "./weights.bin"]
        self._field = self._field + [
            ("metadata", self.metadata), ("names", self.names), ("functions", self.functions),
            ("nested_if", self.nested_if), ("duplicates", self.duplicates), ("domain", self.domain),
        ]
        self._invalid = False

    def mutate(self, data: bytes) -> tuple[bytes, str]:
        self._invalid = False
        data, what = super().mutate(data)
        if self._invalid:  # protobuf stores only valid UTF-8: the placeholder's bytes are replaced after
            data = data.replace(_PLACEHOLDER.encode(), self.rng.choice(_INVALID_UTF8))
        return data, what

    def metadata(self, model: onnx.ModelProto) -> None:
        rng = self.rng
        props = model.metadata_props
        existing = [p for p in props if p.key.startswith("org.onegraph.")]
        value = rng.choice([
            _nested(rng.choice((50, 1000, 100_000)), rng.choice(("list", "dict"))), "[]", "{}", "null", "3", '"x"',
            "[1, 2]", '{"name": 1}', "not json", '[{"name": "x", "kind": "float"}]', "\ud800".encode(
                "utf-8", "surrogatepass").decode("utf-8", "replace"), '[{"name": "x", "kind": "float", '
            '"onnx_type": "double"}]', json.dumps([{"name": "label", "role": "label", "classes": [[1]]}]),
            "x" * rng.choice((1, 70_000))])
        if existing and rng.random() < 0.7:
            rng.choice(existing).value = value
        else:
            entry = props.add()
            entry.key, entry.value = rng.choice(_METADATA_KEYS), value

    def names(self, model: onnx.ModelProto) -> None:
        """A name (node, input, output, initializer, metadata value) that is not UTF-8 text: the bytes are put
        in after serialization, where protobuf does not look."""
        rng = self.rng
        g = model.graph
        places = [(n, "name") for n in g.node] + [(v, "name") for v in list(g.input) + list(g.output)]
        places += [(p, "value") for p in model.metadata_props] + [(t, "name") for t in g.initializer]
        if not places:
            return
        message, field = rng.choice(places)
        if field == "name" and hasattr(message, "output") and message.output and rng.random() < 0.5:
            message.output[0] = _PLACEHOLDER  # a value name used by other nodes: they no longer resolve
        else:
            setattr(message, field, _PLACEHOLDER)
        self._invalid = True

    def functions(self, model: onnx.ModelProto) -> None:
        rng = self.rng
        if not model.functions:
            f = model.functions.add()
            f.name, f.domain = "F", "local"
            f.input.append("a")
            f.output.append("b")
            f.node.append(helper.make_node("Identity", ["a"], ["b"]))
            f.opset_import.append(helper.make_opsetid("", 21))
            if model.graph.node:
                node = rng.choice(model.graph.node)
                node.op_type, node.domain = "F", "local"
            return
        f = rng.choice(model.functions)
        kind = rng.randrange(4)
        if kind == 0 and f.node:
            del f.node[rng.randrange(len(f.node))]
        elif kind == 1 and f.node:
            n = rng.choice(f.node)
            n.op_type, n.domain = f.name, f.domain  # a function that calls itself
        elif kind == 2:
            f.input.append(rng.choice(["", "a", "ghost"]))
        else:
            del f.opset_import[:]

    def nested_if(self, model: onnx.ModelProto) -> None:
        """A node moved into an If's branch (captures from the outer scope), or Ifs nested deep."""
        g = model.graph
        if not g.node:
            return
        i = self.rng.randrange(len(g.node))
        node = g.node[i]
        outputs = [o for o in node.output if o]
        body = helper.make_graph([node], "then", [], [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None)
                                                       for o in outputs])
        # the else branch computes the same outputs without the node (Identity of... nothing: left undefined, as a
        # malformed model would); only the then branch nests, so the depth is linear in the levels
        other = helper.make_graph([], "else", [], list(body.output))
        for _ in range(self.rng.choice((1, 1, 3, 20))):
            inner = helper.make_node("If", ["__cond"], outputs, then_branch=body, else_branch=other)
            try:
                body = helper.make_graph([inner], "nest", [], list(body.output))
            except Exception:  # protobuf's own depth limit (100 messages): as deep as it lets us go
                break
        wrapped = body.node[0]
        del g.node[i]
        g.node.insert(i, wrapped)
        g.initializer.append(helper.make_tensor("__cond", TensorProto.BOOL, [], [True]))

    def duplicates(self, model: onnx.ModelProto) -> None:
        g = model.graph
        kind = self.rng.randrange(3)
        if kind == 0 and len(g.node) >= 2 and g.node[0].output:
            g.node[-1].output[0] = g.node[0].output[0]
        elif kind == 1 and g.initializer:
            g.initializer.append(g.initializer[self.rng.randrange(len(g.initializer))])
        elif g.output:
            g.output.append(g.output[0])

    def domain(self, model: onnx.ModelProto) -> None:
        node = self._node(model)
        if node is not None:
            node.domain = self.rng.choice(["ai.onnx", "ai.onnx.ml", "com.microsoft", "local", "onegraph.frame", "x" * 300])
            if self.rng.random() < 0.5:
                model.opset_import.add(domain=node.domain, version=self.rng.choice([1, 5, 99]))



def mutants(n: int, seeds: dict[str, bytes], *, seed: int, outside: str, start: int = 0):
    """``(index, seed name, label, bytes)`` of cases ``start .. start + n - 1``: case ``i`` is the same on every
    machine (a ``random.Random`` seeded with the campaign seed and ``i``)."""
    names = sorted(seeds)
    for i in range(start, start + n):
        rng = random.Random(f"campaign:{seed}:{i}")
        name = names[i % len(names)]
        data, what = CampaignMutator(rng, outside).mutate(seeds[name])
        yield i, name, f"case {i} (seed {seed}, {name}: {what})", data
