"""Making MaskedTensors: ``masked_tensor`` (a copy) and ``as_masked_tensor`` (an alias)."""

from __future__ import annotations

from ember import Tensor

from .core import MaskedTensor, _validate, _wrap

__all__ = ["as_masked_tensor", "masked_tensor"]


def masked_tensor(data: Tensor, mask: Tensor, requires_grad: bool = False) -> MaskedTensor:
    """A new MaskedTensor holding copies of ``data`` and ``mask``.

    Args:
        data (Tensor): the values.
        mask (Tensor): a bool tensor of ``data``'s shape; True marks present elements.
        requires_grad (bool): whether autograd records operations on the result (a new
            leaf; ``data``'s own history is not kept).

    Returns:
        MaskedTensor: the masked tensor.

    Raises:
        TypeError, ValueError: as :class:`MaskedTensor`.

    Example::

        >>> import warnings; warnings.simplefilter("ignore")
        >>> ember.masked.masked_tensor(ember.tensor([1., 2., 3.]),
        ...                            ember.tensor([True, False, True]))
        MaskedTensor(
          [  1.0000,       --,   3.0000]
        )
    """
    return MaskedTensor(data, mask, requires_grad)


def as_masked_tensor(data: Tensor, mask: Tensor) -> MaskedTensor:
    """A MaskedTensor aliasing ``data``, gradients flowing back to ``data``.

    Args:
        data (Tensor): the values (not copied; its autograd history is kept).
        mask (Tensor): a bool tensor of ``data``'s shape; True marks present elements.

    Returns:
        MaskedTensor: the masked tensor.

    Raises:
        TypeError, ValueError: as :class:`MaskedTensor`.

    Example::

        >>> x = ember.tensor([1., 2., 3.], requires_grad=True)
        >>> mt = ember.masked.as_masked_tensor(x, ember.tensor([True, False, True]))
        >>> mt.sum().get_data().backward()
        >>> x.grad
        tensor([1., 0., 1.])
    """
    from .core import is_masked_tensor

    if is_masked_tensor(data) or not isinstance(data, Tensor):
        raise TypeError("data must be a Tensor")
    if is_masked_tensor(mask) or not isinstance(mask, Tensor):
        raise TypeError("mask must be a Tensor")
    _validate(data, mask)
    return _wrap(data, mask)
