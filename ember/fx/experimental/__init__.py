"""Experimental fx passes: ``optimization`` (conv/linear-batchnorm fusion, dropout removal,
subgraph extraction); ``symbolic_shapes`` (the data-dependent guard error of export)."""

from . import optimization, symbolic_shapes  # noqa: F401
