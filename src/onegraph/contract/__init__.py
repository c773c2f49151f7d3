"""The model contract building and scoring share, at the bottom of onegraph's layers.

* :mod:`~onegraph.contract.columns`: the input schema, one :class:`ColumnSpec` per DataFrame column (the one
  dtype table, the missing-value representation);
* :mod:`~onegraph.contract.feeds`: any column's values as the array its graph input takes;
* :mod:`~onegraph.contract.tables`: the containers of rows onegraph accepts, reduced to named columns;
* :mod:`~onegraph.contract.outputs`: output roles, and the check outputs every scorer must read;
* :mod:`~onegraph.contract.scopes`: the node metadata keys saying which object emitted a node;
* :mod:`~onegraph.contract.metadata`: the versioned, typed metadata schema (pydantic), validated on write and
  read.

It depends on numpy, pandas, pyarrow and pydantic only: never on onnx, onnxruntime or scikit-learn.
"""
