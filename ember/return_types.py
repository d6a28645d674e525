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


def _doc(name, fields):
    """The docstring of result type ``name``: its fields, how it is built, an example."""
    fields = list(fields)
    listed = "\n".join(f"        {f}: field {i} (``result[{i}]``)." for i, f in enumerate(fields))
    return f"""What ``ember.{name}`` returns: a named tuple of {len(fields)} fields, read by name or
    unpacked as a tuple.

    It is built field by field, or, as PyTorch allows, from one sequence of all the fields.

    Args:
{listed}

    Returns:
        The named tuple; it prints as PyTorch's result type does.

    Example:
        >>> from ember.return_types import {name}
        >>> result = {name}(tuple(ember.tensor(float(i)) for i in range({len(fields)})))
        >>> result.{fields[-1]}
        tensor({len(fields) - 1}.)
    """


def make(name, fields):
    """The named-tuple class ``name`` with ``fields`` (created once, then shared).

    Ops returning several tensors call it as they are declared; the class is then
    ``ember.return_types.<name>``.

    Args:
        name (str): the type's name, the op's (``"max"``).
        fields (list of str): the field names, in order (``["values", "indices"]``).

    Returns:
        The named-tuple class.

    Example:
        >>> from ember.return_types import make
        >>> make("max", ["values", "indices"]) is ember.return_types.max
        True
    """
    t = _types.get(name)
    if t is None:
        t = collections.namedtuple(name, fields)
        t.__doc__ = _doc(name, fields)
        t.__new__ = _structseq_new(t.__new__)
        t.__repr__ = _repr
        t.__module__ = __name__
        t.__qualname__ = name
        _types[name] = t
        globals()[name] = t
    return t
