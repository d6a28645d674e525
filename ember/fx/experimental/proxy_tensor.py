"""``torch.fx.experimental.proxy_tensor``: the tracing mode of PyTorch's ``make_fx``.

ember traces no programs through proxy tensors, so no proxy mode is ever active.
"""

__all__ = ["get_proxy_mode"]


def get_proxy_mode():
    """Return the proxy-tensor tracing mode now active, if any.

    Args:
        none.

    Returns:
        None: ember never runs code under a proxy-tensor tracing mode.

    Example:
        >>> from torch.fx.experimental.proxy_tensor import get_proxy_mode
        >>> get_proxy_mode() is None
        True
    """
    return None
