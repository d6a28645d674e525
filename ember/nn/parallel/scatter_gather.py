"""``scatter`` and ``gather``: split inputs over GPUs, and bring outputs back."""

from __future__ import annotations

__all__ = ["gather", "scatter"]


def scatter(inputs, target_gpus, dim: int = 0):
    """Split tensors in ``inputs`` into chunks along ``dim``, one per GPU.

    Args:
        inputs: a tensor, or nested lists, tuples and dicts of them.
        target_gpus: GPU indices.
        dim: the dimension to split.

    Returns:
        One input per GPU.

    Raises:
        AssertionError: without GPUs to scatter to.

    Example::

        >>> ember.nn.parallel.scatter(ember.ones(4, 2), [0])  # doctest: +SKIP
    """
    raise AssertionError("Scatter function not implemented for CPU tensors (ember scatters "
                         "over GPUs only with multi-GPU support, which it lacks)")


def gather(outputs, target_device, dim: int = 0):
    """Concatenate per-GPU outputs along ``dim`` on ``target_device``.

    Args:
        outputs: one output per GPU.
        target_device: where the result goes.
        dim: the dimension to join.

    Returns:
        The joined output.

    Raises:
        AssertionError: for CPU tensors, as in PyTorch.

    Example::

        >>> ember.nn.parallel.gather([ember.ones(1)], 0)
        Traceback (most recent call last):
        ...
        AssertionError: Gather function not implemented for CPU tensors
    """
    raise AssertionError("Gather function not implemented for CPU tensors")
