"""Checks of operators against their schemas and against what onnxruntime can run.

Schemas come from ``onnx.defs`` (the standard domains) and from onnxruntime's own registry (its contrib
domains); kernels from onnxruntime's CPU execution provider (``get_all_opkernel_def``). An operator without a
kernel still runs when its schema defines a function body, which onnxruntime expands.
"""

from __future__ import annotations

import dataclasses
import functools
from collections import defaultdict
from collections.abc import Iterator

import onnx
import onnx.defs

from onegraph.check.findings import Finding
from onegraph.check.static.walk import Body, domain_of, node_label

__all__ = ["Schema", "Registry", "registry", "check_versions", "check_nodes", "local_functions"]

_VARIADIC = 2
_OPTIONAL = 1
#: operators onnxruntime turns into initializers or removes before it looks for kernels
_NO_KERNEL_NEEDED = {("", "Constant")}


@dataclasses.dataclass(frozen=True)
class Schema:
    """What the checks need of an operator schema (from onnx or onnxruntime)."""

    name: str
    domain: str
    since_version: int
    min_input: int
    max_input: int
    min_output: int
    max_output: int
    inputs: tuple[tuple[str, int], ...]   # (name, option: 0 single, 1 optional, 2 variadic)
    outputs: tuple[tuple[str, int], ...]
    attributes: dict[str, tuple[int, bool]]  # name -> (AttributeProto type, required)
    has_function: bool

    @classmethod
    def of(cls, s, domain: str, has_function: bool) -> Schema:
        return cls(s.name, domain, int(s.since_version), int(s.min_input), int(s.max_input), int(s.min_output),
                   int(s.max_output), tuple((p.name, int(p.option.value)) for p in s.inputs),
                   tuple((p.name, int(p.option.value)) for p in s.outputs),
                   {k: (int(a.type.value), bool(a.required)) for k, a in s.attributes.items()}, has_function)


class Registry:
    """Operator schemas, onnxruntime kernels and the highest opsets onnxruntime supports, looked up once."""

    def __init__(self) -> None:
        import onnxruntime.capi._pybind_state as ort_c

        self._ort_schemas: dict[tuple[str, str], list] = defaultdict(list)
        self.max_opset: dict[str, int] = {"": onnx.defs.onnx_opset_version()}
        for s in ort_c.get_all_operator_schema():
            domain = domain_of(s.domain)
            self._ort_schemas[(domain, s.name)].append(s)
            self.max_opset[domain] = max(self.max_opset.get(domain, 0), int(s.since_version))
        for schemas in self._ort_schemas.values():
            schemas.sort(key=lambda s: s.since_version)
        self.kernels: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
        for k in ort_c.get_all_opkernel_def():
            if k.provider == "CPUExecutionProvider":
                self.kernels[(domain_of(k.domain), k.op_name)].append(tuple(k.version_range))
        self.kernel_domains = {d for d, _ in self.kernels}

    @functools.lru_cache(maxsize=4096)  # noqa: B019 - one registry per process
    def schema(self, domain: str, op_type: str, opset: int) -> Schema | None:
        """The schema in force for ``op_type`` at ``opset`` of ``domain``, or None."""
        if not 0 < opset < 2**31:
            return None  # reported as C401; onnx's binding takes 32-bit versions only
        try:
            s = onnx.defs.get_schema(op_type, opset, domain)
            return Schema.of(s, domain, bool(s.has_function or s.has_context_dependent_function))
        except onnx.defs.SchemaError:
            pass
        candidates = [s for s in self._ort_schemas.get((domain, op_type), ()) if s.since_version <= opset]
        return Schema.of(candidates[-1], domain, False) if candidates else None

    def has_kernel(self, schema: Schema) -> bool:
        if (schema.domain, schema.name) in _NO_KERNEL_NEEDED or schema.has_function:
            return True
        return any(lo <= schema.since_version <= hi for lo, hi in self.kernels.get((schema.domain, schema.name), ()))


@functools.lru_cache(maxsize=1)
def registry() -> Registry:
    return Registry()


def check_versions(model: onnx.ModelProto) -> Iterator[Finding]:
    """C405 for the IR version, C401 for opset imports onnxruntime cannot run."""
    if model.ir_version <= 0:
        yield Finding("C405", "ir_version is not set", "ir_version")
    elif model.ir_version > onnx.IR_VERSION:
        yield Finding("C405", f"ir_version {model.ir_version} is newer than {onnx.IR_VERSION}, the newest this onnx "
                      "knows", "ir_version")
    reg = registry()
    local = {domain_of(f.domain) for f in model.functions}
    for i, imp in enumerate(model.opset_import):
        domain = domain_of(imp.domain)
        top = reg.max_opset.get(domain)
        if domain in local and top is None:
            continue
        if imp.version < 1:
            yield Finding("C401", f"opset {imp.version} of domain {imp.domain or 'ai.onnx'!r} is not a version",
                          f"opset_import[{i}].version")
        elif top is not None and imp.version > top:
            yield Finding("C401", f"opset {imp.version} of domain {imp.domain or 'ai.onnx'!r} is newer than "
                          f"{top}, the newest onnxruntime supports", f"opset_import[{i}].version")


def check_nodes(body: Body, functions: dict[tuple[str, str, str], onnx.FunctionProto]) -> Iterator[Finding]:
    """C301-C310 and C402-C404 for the nodes of one body."""
    reg = registry()
    local_domains = {d for d, _, _ in functions}
    for i, node in enumerate(body.nodes):
        domain = domain_of(node.domain)
        label = node_label(node, i)
        path = f"{body.path}.node[{i}]"
        fn = functions.get((domain, node.op_type, node.overload))
        if fn is not None:
            yield from _function_call(node, fn, path, label)
            continue
        opset = body.opsets.get(domain)
        if opset is None:
            if domain not in local_domains:
                yield Finding("C404", f"domain {node.domain!r} of {node.op_type} has no opset import",
                              f"{path}.domain", node=label)
            continue
        schema = reg.schema(domain, node.op_type, opset)
        if schema is None:
            yield Finding("C403", f"operator {node.op_type!r} of domain {node.domain or 'ai.onnx'!r} is not defined "
                          f"at opset {opset}", f"{path}.op_type", node=label)
            continue
        yield from _arity(node, schema, path, label)
        yield from _attributes(node, schema, path, label)
        if domain in reg.kernel_domains and not reg.has_kernel(schema):
            yield Finding("C402", f"onnxruntime has no CPU kernel for {node.op_type}-{schema.since_version} "
                          f"(opset {opset})", f"{path}.op_type", node=label)


def _function_call(node: onnx.NodeProto, fn: onnx.FunctionProto, path: str, label: str) -> Iterator[Finding]:
    if len(node.input) > len(fn.input):
        yield Finding("C301", f"{len(node.input)} inputs given to function {fn.name!r}, which takes "
                      f"{len(fn.input)}", f"{path}.input", node=label)
    if len(node.output) > len(fn.output):
        yield Finding("C302", f"{len(node.output)} outputs asked of function {fn.name!r}, which returns "
                      f"{len(fn.output)}", f"{path}.output", node=label)


def _arity(node: onnx.NodeProto, schema: Schema, path: str, label: str) -> Iterator[Finding]:
    what = f"{schema.name}-{schema.since_version}"
    n_in, n_out = len(node.input), len(node.output)
    if not schema.min_input <= n_in <= schema.max_input:
        yield Finding("C301", f"{n_in} inputs; {what} takes {_range(schema.min_input, schema.max_input)}",
                      f"{path}.input", node=label)
    else:
        for k, name in enumerate(node.input):
            formal, option = _formal(schema.inputs, k)
            if not name and option != _OPTIONAL:
                yield Finding("C301", f"input {k} ({formal}) of {what} is required but empty", f"{path}.input[{k}]",
                              node=label)
    if not schema.min_output <= n_out <= schema.max_output:
        yield Finding("C302", f"{n_out} outputs; {what} gives {_range(schema.min_output, schema.max_output)}",
                      f"{path}.output", node=label)


def _formal(params: tuple[tuple[str, int], ...], k: int) -> tuple[str, int]:
    if k < len(params):
        return params[k]
    return params[-1] if params and params[-1][1] == _VARIADIC else ("?", _OPTIONAL)


def _range(lo: int, hi: int) -> str:
    if lo == hi:
        return str(lo)
    return f"at least {lo}" if hi >= 2**31 - 1 else f"{lo} to {hi}"


def _attributes(node: onnx.NodeProto, schema: Schema, path: str, label: str) -> Iterator[Finding]:
    what = f"{schema.name}-{schema.since_version}"
    given = set()
    for attr in node.attribute:
        given.add(attr.name)
        where = f"{path}.attribute[{attr.name[:80]}]"
        if attr.ref_attr_name:
            continue
        if attr.name not in schema.attributes:
            yield Finding("C309", f"{what} has no attribute {attr.name[:80]!r}", where, node=label)
            continue
        expected = schema.attributes[attr.name][0]
        if attr.type != expected:
            yield Finding("C308", f"attribute {attr.name!r} is {_attr_type(attr.type)}; {what} takes "
                          f"{_attr_type(expected)}", f"{where}.type", node=label)
    for name, (_, required) in schema.attributes.items():
        if required and name not in given:
            yield Finding("C310", f"{what} requires attribute {name!r}", f"{path}.attribute", node=label)


def _attr_type(t: int) -> str:
    try:
        return onnx.AttributeProto.AttributeType.Name(t).lower()
    except ValueError:
        return f"type {t}"


def local_functions(model: onnx.ModelProto) -> dict[tuple[str, str, str], onnx.FunctionProto]:
    return {(domain_of(f.domain), f.name, f.overload): f for f in model.functions}
