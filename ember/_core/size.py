"""``ember.Size``: the type of ``Tensor.shape``, a tuple of ints."""

from __future__ import annotations

from .dtype import printed_module


class Size(tuple):
    """The shape of a tensor: a tuple of ints (``Tensor.shape`` and ``Tensor.size()``).

    Args:
        seq (iterable of ints): the sizes. Default: ``()`` (the shape of a zero-dim tensor).

    Differences from PyTorch:
        Printing: a shape prints as ``ember.Size([2, 3])`` where PyTorch prints
        ``torch.Size([2, 3])``; programs run with ``python -m ember.compat.run`` (or after
        ``ember.compat.install()``) print PyTorch's name.

    Example:
        >>> s = ember.zeros(2, 3).shape
        >>> s, s[1], s.numel()
        (ember.Size([2, 3]), 3, 6)
        >>> ember.Size([4]) + (5,)
        ember.Size([4, 5])
    """

    __module__ = "ember"  # its public address (printed classes, pickles)

    __slots__ = ()

    def __new__(cls, seq=()):
        return tuple.__new__(cls, (int(s) for s in seq))

    def __repr__(self):
        # NOTE [ Printed module name ] in ember/_core/dtype.py
        return f"{printed_module[0]}.Size([{', '.join(map(str, self))}])"

    def __getitem__(self, key):
        r = tuple.__getitem__(self, key)
        return Size(r) if isinstance(key, slice) else r

    def __add__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(self, other))

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(other, self))

    def __mul__(self, n):
        return Size(tuple.__mul__(self, n))

    __rmul__ = __mul__

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

    def __reduce__(self):
        return (Size, (tuple(self),))
