"""``ember.nn.attention``: choosing the scaled-dot-product-attention kernel.

ember has one attention kernel, the math one (``nn.functional.scaled_dot_product_attention``
runs it whatever is chosen); ``sdpa_kernel`` records the choice in the same switches as
``ember.backends.cuda`` so code that sets and reads them behaves as under PyTorch.
"""

from __future__ import annotations

import contextlib

from ...backends import cuda as _cuda
from ...backends.cuda import SDPBackend

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS", "can_use_flash_attention",
           "can_use_efficient_attention", "list_flash_attention_impls",
           "current_flash_attention_impl"]

# PyTorch warns when a fused kernel cannot run if this is set; ember has no fused kernels
WARN_FOR_UNFUSED_KERNELS = False

_SWITCHES = {
    SDPBackend.FLASH_ATTENTION: (_cuda.enable_flash_sdp, _cuda.flash_sdp_enabled),
    SDPBackend.EFFICIENT_ATTENTION: (_cuda.enable_mem_efficient_sdp,
                                     _cuda.mem_efficient_sdp_enabled),
    SDPBackend.MATH: (_cuda.enable_math_sdp, _cuda.math_sdp_enabled),
    SDPBackend.CUDNN_ATTENTION: (_cuda.enable_cudnn_sdp, _cuda.cudnn_sdp_enabled),
}


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority=False):
    """Within the block, allow only ``backends`` for scaled dot-product attention.

    Args:
        backends (SDPBackend or list of SDPBackend): the kernels to allow.
        set_priority (bool): whether the list order is a priority order (recorded only;
            ember has one kernel). Default: False.

    Returns:
        A context manager; the previous switches come back on exit.

    Example:
        >>> import ember
        >>> from ember.nn.attention import SDPBackend, sdpa_kernel
        >>> with sdpa_kernel(SDPBackend.MATH):
        ...     ember.backends.cuda.flash_sdp_enabled()
        False
    """
    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError(
            "Backend must be an instance of SDPBackend or a list of SDPBackend instances")
    chosen = [backends] if isinstance(backends, SDPBackend) else list(backends)
    before = {b: query() for b, (_, query) in _SWITCHES.items()}
    try:
        for backend, (enable, _) in _SWITCHES.items():
            enable(backend in chosen)
        yield {}
    finally:
        for backend, (enable, _) in _SWITCHES.items():
            enable(before[backend])


def can_use_flash_attention(params, debug=False):
    """Whether the FlashAttention kernel could run these inputs: never in ember.

    Args:
        params: the attention inputs (PyTorch's ``SDPAParams``).
        debug (bool): warn with the reason. Default: False.

    Returns:
        False.

    Example:
        >>> from ember.nn.attention import can_use_flash_attention
        >>> can_use_flash_attention(None)
        False
    """
    if debug:
        import warnings

        warnings.warn("ember has no FlashAttention kernel; attention runs the math kernel",
                      stacklevel=2)
    return False


def can_use_efficient_attention(params, debug=False):
    """Whether the memory-efficient kernel could run these inputs: never in ember.

    Args:
        params: the attention inputs (PyTorch's ``SDPAParams``).
        debug (bool): warn with the reason. Default: False.

    Returns:
        False.

    Example:
        >>> from ember.nn.attention import can_use_efficient_attention
        >>> can_use_efficient_attention(None)
        False
    """
    if debug:
        import warnings

        warnings.warn("ember has no memory-efficient attention kernel; attention runs the "
                      "math kernel", stacklevel=2)
    return False


def list_flash_attention_impls():
    """The FlashAttention implementations that could be activated: none in ember.

    Returns:
        An empty list.

    Example:
        >>> from ember.nn.attention import list_flash_attention_impls
        >>> list_flash_attention_impls()
        []
    """
    return []


def current_flash_attention_impl():
    """The active FlashAttention implementation: None (ember has none).

    Returns:
        None.

    Example:
        >>> from ember.nn.attention import current_flash_attention_impl
        >>> current_flash_attention_impl() is None
        True
    """
    return None
