"""The quantization schemes (``ember.per_tensor_affine`` and its four siblings).

A scheme names how a quantized tensor maps integers back to reals: one scale and zero point
for the whole tensor, or one per channel, affine or symmetric. The five instances are made
once, here, and compared by identity, as PyTorch's are.
"""

__all__ = ["qscheme", "per_tensor_affine", "per_channel_affine", "per_tensor_symmetric",
           "per_channel_symmetric", "per_channel_affine_float_qparams"]


class qscheme:
    """A quantization scheme (``ember.per_tensor_affine``, ...).

    Use the five instances rather than this constructor.

    Args:
        name (str): the scheme's name.

    Example:
        >>> ember.per_tensor_affine
        ember.per_tensor_affine
        >>> ember.per_channel_symmetric in (ember.per_channel_affine, ember.per_channel_symmetric)
        True
    """

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self):
        from .._core.dtype import printed_module

        return printed_module[0] + "." + self.name

    __str__ = __repr__

    def __reduce__(self):
        return (_by_name, (self.name,))


per_tensor_affine = qscheme("per_tensor_affine")
per_channel_affine = qscheme("per_channel_affine")
per_tensor_symmetric = qscheme("per_tensor_symmetric")
per_channel_symmetric = qscheme("per_channel_symmetric")
per_channel_affine_float_qparams = qscheme("per_channel_affine_float_qparams")

_ALL = {q.name: q for q in (per_tensor_affine, per_channel_affine, per_tensor_symmetric,
                            per_channel_symmetric, per_channel_affine_float_qparams)}


def _by_name(name):
    return _ALL[name]
