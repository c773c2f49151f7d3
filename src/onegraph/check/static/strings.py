"""Names that are not UTF-8: reported once, then made readable so the other checks can compare them.

ONNX declares names as protobuf ``string`` (UTF-8). The protobuf runtime hands back ``bytes`` for a proto2
``string`` field holding anything else, which the other checks could not compare with ``str`` names; this
pass reports each such field (C007) and replaces the value, in the checking process's own parsed copy, by
its UTF-8 decoding with the bad bytes escaped (``\\xff``), so distinct names stay distinct.
"""

from __future__ import annotations

from collections.abc import Iterator

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from onegraph.check.findings import Finding

__all__ = ["sanitize"]


def sanitize(message: Message, path: str = "") -> Iterator[Finding]:
    """Findings (C007) for the string fields of ``message`` that are not UTF-8; fixes them in place."""
    for field, value in message.ListFields():
        where = f"{path}.{field.name}" if path else field.name
        if field.type == FieldDescriptor.TYPE_STRING:
            values = value if _repeated(field) else [value]
            for i, v in enumerate(values):
                if isinstance(v, bytes):
                    text = v.decode("utf-8", "backslashreplace")
                    at = f"{where}[{i}]" if _repeated(field) else where
                    yield Finding("C007", f"{text[:200]!r} is not UTF-8", at)
                    if _repeated(field):
                        value[i] = text
                    else:
                        setattr(message, field.name, text)
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            if _repeated(field):
                for i, item in enumerate(value):
                    yield from sanitize(item, f"{where}[{i}]")
            else:
                yield from sanitize(value, where)


def _repeated(field: FieldDescriptor) -> bool:
    return field.is_repeated
