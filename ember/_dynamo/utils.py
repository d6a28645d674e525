"""``torch._dynamo.utils``: the helper libraries ask before taking a compile-friendly path
(torchvision's ``roi_align`` asks ``is_compile_supported``)."""

from __future__ import annotations

__all__ = ["is_compile_supported"]


def is_compile_supported(device_type) -> bool:
    """Whether ``ember.compile`` can compile code for tensors on ``device_type``.

    ember's ``compile`` runs the function as written (no code generation), which works on
    every device; torch answers True for the CPU and for GPUs with Triton. Answering False
    keeps libraries on their ordinary path (torchvision then calls its native operator).

    Args:
        device_type (str or ember.device): e.g. ``"cpu"``.

    Returns:
        bool: False.

    Example::

        >>> from ember._dynamo.utils import is_compile_supported
        >>> is_compile_supported("cpu")
        False
    """
    return False
