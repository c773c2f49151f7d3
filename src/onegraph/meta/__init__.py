"""The versioned metadata schema onegraph writes into models (see :mod:`onegraph.meta.schema`)."""

from onegraph.meta.schema import PREFIX, SCHEMA_VERSION, MetadataError, SequenceSpec, decode, encode

__all__ = ["PREFIX", "SCHEMA_VERSION", "MetadataError", "SequenceSpec", "decode", "encode"]
