"""The JSON Schema of onegraph's model metadata, generated from :class:`onegraph.contract.metadata.ModelMetadata`.

The schema describes the decoded fields (what ``onegraph meta show --json`` prints under ``fields``); each
property says where it is stored (``x-onegraph-key``) and how (``x-onegraph-storage``: ``text`` or ``json``).
The generated file ships in the package as ``onegraph/meta/metadata.schema.json``; regenerate it with::

    python -m onegraph.contract.jsonschema --write
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from onegraph.contract.metadata import PREFIX, SCHEMA_VERSION, ModelMetadata

__all__ = ["SHIPPED", "json_schema", "text", "main"]

SHIPPED = Path(__file__).with_name("metadata.schema.json")


def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of metadata schema version :data:`SCHEMA_VERSION`."""
    schema = ModelMetadata.model_json_schema()
    for name, prop in schema["properties"].items():
        prop["x-onegraph-key"] = PREFIX + name
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"urn:org.onegraph:metadata:{SCHEMA_VERSION}", "x-onegraph-version": SCHEMA_VERSION, **schema}


def text() -> str:
    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description="Print (or --write) onegraph's metadata JSON Schema.")
    ap.add_argument("--write", action="store_true", help=f"write {SHIPPED}")
    args = ap.parse_args()
    if args.write:
        SHIPPED.write_text(text())
        print(f"wrote {SHIPPED}")
    else:
        print(text(), end="")


if __name__ == "__main__":
    main()
