"""Re-lay convolution weights in a memory format (channels-last) without changing values."""

from __future__ import annotations

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def _convert(module, memory_format, classes):
    if isinstance(module, classes):
        module.weight.data = module.weight.detach().clone(memory_format=memory_format)
    for child in module.children():
        _convert(child, memory_format, classes)
    return module


def convert_conv2d_weight_memory_format(module, memory_format):
    """Give every ``Conv2d``/``ConvTranspose2d`` weight in ``module`` (recursively) the
    layout ``memory_format``; values are unchanged.

    Args:
        module (Module): the module to convert, in place.
        memory_format: ``ember.channels_last`` or ``ember.contiguous_format``.

    Returns:
        ``module`` itself.

    Example:
        >>> import ember
        >>> conv = ember.nn.Conv2d(2, 3, 3)
        >>> conv = convert_conv2d_weight_memory_format(conv, ember.channels_last)
        >>> conv.weight.is_contiguous(memory_format=ember.channels_last)
        True
    """
    from ..modules.conv import Conv2d, ConvTranspose2d

    return _convert(module, memory_format, (Conv2d, ConvTranspose2d))


def convert_conv3d_weight_memory_format(module, memory_format):
    """Give every ``Conv3d``/``ConvTranspose3d`` weight in ``module`` (recursively) the
    layout ``memory_format``; values are unchanged.

    Args:
        module (Module): the module to convert, in place.
        memory_format: ``ember.channels_last_3d`` or ``ember.contiguous_format``.

    Returns:
        ``module`` itself.

    Example:
        >>> import ember
        >>> conv = ember.nn.Conv3d(2, 3, 3)
        >>> conv = convert_conv3d_weight_memory_format(conv, ember.channels_last_3d)
        >>> conv.weight.is_contiguous(memory_format=ember.channels_last_3d)
        True
    """
    from ..modules.conv import Conv3d, ConvTranspose3d

    return _convert(module, memory_format, (Conv3d, ConvTranspose3d))
