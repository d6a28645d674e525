"""Named-tuple result types (``ember.return_types.max`` ...), as ``torch.return_types``."""

from __future__ import annotations

import collections

_types: dict = {}


def _repr(self):
    # printed as PyTorch prints its result types: the qualified name, then one field a line
    from ._core.dtype import printed_module  # NOTE [ Printed module name ]

    body = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self))
    return f"{printed_module[0]}.return_types.{type(self).__name__}(\n{body})"


def _structseq_new(fields_new):
    """``__new__`` taking PyTorch's form too: one sequence of all the fields (and optionally
    a dict, which PyTorch accepts and ignores), as ``torch.return_types.max((v, i))``;
    field-by-field calls, which ember's ops make, stay the named tuple's."""

    def __new__(cls, *args, **kwargs):
        if kwargs or not args or not isinstance(args[0], (list, tuple)) or len(args) > 2:
            return fields_new(cls, *args, **kwargs)
        from ._core.dtype import printed_module

        name = f"{printed_module[0]}.return_types.{cls.__name__}()"
        if len(args) == 2 and not isinstance(args[1], dict):
            raise TypeError(f"{name} takes a dict as second arg, if any")
        values = tuple(args[0])
        if len(values) != len(cls._fields):
            raise TypeError(f"{name} takes a {len(cls._fields)}-sequence ({len(values)}-sequence "
                            "given)")
        return fields_new(cls, *values)

    return __new__


def make(name, fields):
    """The named-tuple class ``name`` with ``fields`` (created once, then shared)."""
    t = _types.get(name)
    if t is None:
        t = collections.namedtuple(name, fields)
        t.__new__ = _structseq_new(t.__new__)
        t.__repr__ = _repr
        t.__module__ = __name__
        t.__qualname__ = name
        _types[name] = t
        globals()[name] = t
    return t
