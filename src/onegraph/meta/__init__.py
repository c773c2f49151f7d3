"""The versioned metadata schema onegraph writes into models (see :mod:`onegraph.contract.metadata`)."""

from onegraph.contract.metadata import (
    PREFIX,
    SCHEMA_VERSION,
    Metadata,
    ModelMetadata,
    SequenceSpec,
    decode,
    encode,
    read,
    validate,
)
from onegraph.errors import MetadataError
from onegraph.meta.model import (
    diff,
    model_hash,
    read_metadata,
    set_metadata,
    table_hash,
)

__all__ = ["PREFIX", "SCHEMA_VERSION", "Metadata", "MetadataError", "ModelMetadata", "SequenceSpec", "decode", "encode",
           "read", "validate", "read_metadata", "set_metadata", "diff", "model_hash", "table_hash"]
