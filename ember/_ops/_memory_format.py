"""Which memory format an op's result takes: PyTorch's ``suggest_memory_format`` rule.

NOTE [ Result layout ]
A network whose input (or weights) are channels-last stays channels-last in PyTorch:
convolutions, batch norm and pooling give results in the layout their input suggests, and
element-wise ops keep their operand's layout. Ember's kernels compute in whatever layout
NumPy gives; the public functions of those ops pass their result through ``keep_layout``,
which lays it out channels-last (a copy) when an operand is, so ``is_contiguous(
memory_format=channels_last)`` and ``stride()`` answer as PyTorch's do.
"""

from __future__ import annotations


def keep_layout(y, *like):
    """``y``, laid out channels-last (or channels-last-3d) when one of ``like`` is: 4-d
    (5-d) and channels-last-contiguous without being contiguous (NOTE [ Result layout ]).

    Args:
        y: the op's result.
        *like: the operands whose layout the result follows (input, weight).

    Returns:
        Tensor: ``y`` itself, or a channels-last copy of it.

    Example::

        >>> x = ember.ones(1, 3, 2, 2).to(memory_format=ember.channels_last)
        >>> keep_layout(ember.ones(1, 3, 2, 2), x).stride()
        (12, 1, 6, 3)
    """
    if y._data.flags.c_contiguous:
        for t in like:
            if t is not None and not t._data.flags.c_contiguous:
                break
        else:  # every array in row order: nothing suggests channels-last (the common case)
            return y
    from .._core.layout import channels_last, channels_last_3d

    fmt = {4: channels_last, 5: channels_last_3d}.get(y.dim())
    if fmt is None or y.is_contiguous(memory_format=fmt):
        return y
    for t in like:
        if t is not None and t.dim() == y.dim() and not t.is_contiguous() and \
                t.is_contiguous(memory_format=fmt):
            return y.contiguous(memory_format=fmt)
    return y
