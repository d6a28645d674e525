"""``ember.Tag``: the tags an operator carries (``torch.Tag``), as an enum.

Tags describe an op to graph tools (pointwise, a view copy, nondeterministic, ...); ember's
own ops do not consult them, but custom ops (``ember.library``) may name them.
"""

from __future__ import annotations

import enum


class Tag(enum.IntEnum):
    """An operator tag, as ``torch.Tag``.

    Args:
        value (int): the tag's number (members are reached by name: ``ember.Tag.pointwise``).

    Example::

        >>> ember.Tag.pointwise.name
        'pointwise'
    """

    core = 0
    cudagraph_unsafe = 1
    data_dependent_output = 2
    dynamic_output_shape = 3
    flexible_layout = 4
    generated = 5
    inplace = 6
    inplace_view = 7
    maybe_aliasing_or_mutating = 8
    needs_contiguous_strides = 9
    needs_exact_strides = 10
    needs_fixed_stride_order = 11
    nondeterministic_bitwise = 12
    nondeterministic_seeded = 13
    out = 14
    out_variant = 15
    pointwise = 16
    pt2_compliant_tag = 17
    reduction = 18
    view_copy = 19

    def __repr__(self):
        return f"Tag.{self.name}"

    __str__ = __repr__
