"""Checks on a parsed ModelProto that ``onnx.checker`` does not make (see :func:`static_findings`).

Pure Python over the message: these run in the checking process after the bytes parsed, before any
native checker, so their findings survive a later crash. Tests also run them in-process on models they
construct (never on parsed untrusted bytes).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import onnx

from onegraph.check.static.walk import bodies, domain_of
from onegraph.check.static.walk import tensors as stored_tensors

if TYPE_CHECKING:
    from onegraph.check.findings import Finding

__all__ = ["static_findings"]


def static_findings(model: onnx.ModelProto, *, folder: str | None = None, memory: int = 4 << 30) -> list[Finding]:
    """Findings for ``model`` from checks ``onnx.checker`` does not make.

    Parameters
    ----------
    model:
        A parsed model.
    folder:
        The folder the model file is in (external-data locations are relative to it); None when the model came
        as bytes (external data is then reported as unverifiable, C109).
    memory:
        Bytes a tensor or a constant-shape allocation may take (C204 beyond).

    Returns
    -------
    list of Finding
        Names that are not UTF-8 (C007; ``model`` is fixed in place so the rest can compare names), then
        versions (C401, C405), metadata and inputs (C60x), then per graph external data (C10x), stored
        tensors (C20x), wiring (C30x), operators (C40x), constant folding (C203 / C204 allocations, C313-C315
        shapes), in that order. One C109 at most.
    """
    found = list(_all(model, folder, memory))
    first_c109 = next((i for i, f in enumerate(found) if f.code == "C109"), None)
    return [f for i, f in enumerate(found) if f.code != "C109" or i == first_c109]


def _all(model: onnx.ModelProto, folder: str | None, memory: int) -> Iterator[Finding]:
    # the rules and the report's types load here, not with the package: the loader reads external data through
    # .walk in every process
    from onegraph.check.findings import Finding
    from onegraph.check.static import fold, inputs, metadata, operators, rules, strings, structure, tensors

    if not model.HasField("graph"):
        yield Finding("C002", "the model holds no graph", "graph")
        return
    yield from strings.sanitize(model)
    yield from operators.check_versions(model)
    yield from metadata.check_metadata(model)
    yield from inputs.check_inputs(model.graph, memory)
    functions = operators.local_functions(model)
    folding = fold.Folder(memory)
    for body in bodies(model):
        yield from tensors.check_attribute_values(body.nodes, body.path)
        for site in stored_tensors(body):
            yield from tensors.check_tensor(site, folder=folder, memory=memory)
        yield from structure.check_body(body)
        yield from operators.check_nodes(body, functions)
        yield from rules.check_rules(body)
        yield from folding.body(body, main=model.graph)
    calls = {key: {(domain_of(n.domain), n.op_type, n.overload) for n in fn.node} for key, fn in functions.items()}
    for key in structure.function_cycles(calls):
        index = list(functions).index(key)
        yield Finding("C304", f"model-local function {key[1]!r} (domain {key[0]!r}) calls itself, directly or "
                      "through others", f"functions[{index}]")

