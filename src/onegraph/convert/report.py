"""The report of a conversion: what happened to each operator, and how the converted model agrees."""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

from onegraph.verify.runs import Agreement

__all__ = ["NodeConversion", "ConversionReport"]


@dataclasses.dataclass
class NodeConversion:
    """What a conversion did to one node.

    ``where`` is ``graph`` or ``function <domain>.<name>``; ``from_version`` / ``to_version`` are the
    versions (``since_version``) of the operator's definition before and after; ``how`` says what was done,
    or why it could not be (then ``ok`` is False).
    """

    name: str
    op_type: str
    domain: str
    where: str
    from_version: int | None
    to_version: int | None
    how: str
    ok: bool = True


@dataclasses.dataclass
class ConversionReport:
    """Per-operator report and verification of one conversion (``onegraph convert``).

    Attributes
    ----------
    kind: ``opset`` or ``float16`` / ``bfloat16``.
    source, target: what was converted from and to (e.g. ``opset 21`` -> ``opset 13``).
    nodes: one :class:`NodeConversion` per node of the original model (graph and function bodies).
    agreement: how the converted model's outputs compare with the original's on the same inputs (None
        when the conversion was refused before it could run).
    inputs: where the inputs came from (the data file, or how they were generated).
    lost: annotations / metadata that could not be carried over (their tensor or node is gone).
    notes: anything else the user should know (an overridable initializer taken as constant...).
    """

    kind: str
    source: str
    target: str
    nodes: list[NodeConversion] = dataclasses.field(default_factory=list)
    agreement: Agreement | None = None
    inputs: str = ""
    lost: list[str] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)
    #: what makes an accepted conversion doubtful (nothing converted, inf in the inputs...)
    warnings: list[str] = dataclasses.field(default_factory=list)
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def refused(self) -> list[NodeConversion]:
        return [n for n in self.nodes if not n.ok]

    @property
    def ok(self) -> bool:
        """True when every node converted and every output agrees within tolerance."""
        return not self.refused and self.agreement is not None and self.agreement.ok

    def operators(self) -> list[dict]:
        """Nodes grouped by (operator, versions, what was done), with counts, in first-seen order."""
        counts: Counter = Counter()
        first: dict[tuple, NodeConversion] = {}
        for n in self.nodes:
            key = (n.domain, n.op_type, n.from_version, n.to_version, n.how, n.ok)
            counts[key] += 1
            first.setdefault(key, n)
        return [{"op": (f"{n.domain}." if n.domain else "") + n.op_type, "count": counts[k],
                 "from": n.from_version, "to": n.to_version, "how": n.how, "ok": n.ok,
                 "example": n.name} for k, n in first.items()]

    def to_dict(self) -> dict:
        return {
            "kind": self.kind, "source": self.source, "target": self.target, "ok": self.ok,
            "operators": self.operators(), "refused": [dataclasses.asdict(n) for n in self.refused],
            "verification": None if self.agreement is None else {
                "inputs": self.inputs, "rtol": self.agreement.rtol, "atol": self.agreement.atol,
                "outputs": self.agreement.rows(), "missing": self.agreement.missing},
            "lost": self.lost, "notes": self.notes, "warnings": self.warnings, **self.extra,
        }

    def __str__(self) -> str:
        lines = [f"{self.kind} conversion: {self.source} -> {self.target}"]
        lines.append("operators:")
        for row in self.operators():
            versions = ""
            if row["from"] is not None or row["to"] is not None:
                versions = f" v{row['from'] if row['from'] is not None else '-'}->v{row['to'] if row['to'] is not None else '-'}"
            mark = "" if row["ok"] else "REFUSED "
            lines.append(f"  {row['op']}{versions} x{row['count']}: {mark}{row['how']}")
        for line in self.extra.get("summary", []):
            lines.append(line)
        if self.agreement is not None:
            a = self.agreement
            lines.append(f"verification on {self.inputs} (rtol {a.rtol:g}, atol {a.atol:g}):")
            for o in a.outputs:
                lines.append(f"  {o}")
            for name in a.missing:
                lines.append(f"  {name}: missing from the converted model  DIVERGES")
        for line in self.lost:
            lines.append(f"not carried over: {line}")
        for line in self.notes:
            lines.append(f"note: {line}")
        for line in self.warnings:
            lines.append(f"warning: {line}")
        verdict = ("ok" + (f", with {len(self.warnings)} warning(s)" if self.warnings else "")) if self.ok else ("REFUSED" if self.refused or self.agreement is None else "VALUES CHANGED")
        lines.append(f"result: {verdict}")
        return "\n".join(lines)
