"""``torch._subclasses.fake_tensor``: the test libraries use to tell fake tensors from real ones.

ember never makes fake tensors (shapes are never traced without data), so every tensor is real.
"""

__all__ = ["is_fake"]


def is_fake(x):
    """Say whether ``x`` is a fake tensor (a tensor with metadata but no data).

    Args:
        x: any object, usually a tensor.

    Returns:
        bool: always ``False`` in ember, which has no fake tensors.

    Example:
        >>> from torch._subclasses.fake_tensor import is_fake
        >>> is_fake(torch.ones(2))
        False
    """
    return False
