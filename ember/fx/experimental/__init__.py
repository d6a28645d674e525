"""Experimental fx passes: ``optimization`` (conv/linear-batchnorm fusion, dropout removal,
subgraph extraction)."""

from . import optimization  # noqa: F401
