"""Named-tuple result types (``ember.return_types.max`` ...), as ``torch.return_types``."""

from __future__ import annotations

import collections

_types: dict = {}


def make(name, fields):
    """The named-tuple class ``name`` with ``fields`` (created once, then shared)."""
    t = _types.get(name)
    if t is None:
        t = collections.namedtuple(name, fields)
        t.__module__ = __name__
        t.__qualname__ = name
        _types[name] = t
        globals()[name] = t
    return t
