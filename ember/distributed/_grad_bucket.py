"""``GradBucket``: what a DDP communication hook receives (``torch.distributed.GradBucket``)."""

from __future__ import annotations

__all__ = ["GradBucket"]


class GradBucket:
    """One DDP bucket handed to a communication hook: a flat buffer holding the gradients
    of several parameters (not yet averaged), with their parameters.

    Args:
        index: the bucket's position (0 is the first to be reduced).
        buffer: the flat gradient tensor.
        params: the parameters whose gradients it holds, in buffer order.
        offsets: where each parameter's gradient starts in the buffer.
        is_last: whether it is the last bucket of the iteration.

    Example::

        >>> b = ember.distributed.GradBucket(0, ember.zeros(3), [], [], True)
        >>> b.index(), b.is_last(), b.buffer().shape
        (0, True, ember.Size([3]))
    """

    def __init__(self, index, buffer, params, offsets, is_last):
        self._index = index
        self._buffer = buffer
        self._params = list(params)
        self._offsets = list(offsets)
        self._is_last = is_last

    def index(self) -> int:
        """The bucket's index; bucket 0 is reduced first."""
        return self._index

    def buffer(self):
        """The flat 1-D tensor holding the bucket's gradients."""
        return self._buffer

    def set_buffer(self, buffer) -> None:
        """Replace the flat buffer (used by the compression wrappers)."""
        self._buffer = buffer

    def gradients(self) -> list:
        """Each parameter's gradient, as a view of the buffer shaped like the parameter."""
        return [self._buffer[o:o + p.numel()].view(p.shape)
                for p, o in zip(self._params, self._offsets)]

    def parameters(self) -> list:
        """The parameters whose gradients the bucket holds."""
        return list(self._params)

    def is_last(self) -> bool:
        """Whether this is the last bucket to be reduced in the iteration."""
        return self._is_last

    def __repr__(self):
        return f"GradBucket(index={self._index}, numel={self._buffer.numel()})"
