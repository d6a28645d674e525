"""Named-tuple result types (``ember.return_types.max`` ...), as ``torch.return_types``."""

from __future__ import annotations

import collections

_types: dict = {}


def _repr(self):
    # printed as PyTorch prints its result types: the qualified name, then one field a line
    from ._core.dtype import printed_module  # NOTE [ Printed module name ]

    body = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self))
    return f"{printed_module[0]}.return_types.{type(self).__name__}(\n{body})"


def make(name, fields):
    """The named-tuple class ``name`` with ``fields`` (created once, then shared)."""
    t = _types.get(name)
    if t is None:
        t = collections.namedtuple(name, fields)
        t.__repr__ = _repr
        t.__module__ = __name__
        t.__qualname__ = name
        _types[name] = t
        globals()[name] = t
    return t
