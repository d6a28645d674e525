"""``replicate``: copies of a module on several GPUs."""

from __future__ import annotations

__all__ = ["replicate"]


def replicate(network, devices, detach: bool = False) -> list:
    """Copies of ``network``, one per GPU in ``devices``.

    Args:
        network: the module.
        devices: GPU indices or devices.
        detach: whether the copies' parameters are detached.

    Returns:
        A list of modules ([] for no devices).

    Raises:
        AssertionError: for any device without ember's CUDA backend, as PyTorch raises for
        CPU tensors.

    Example::

        >>> ember.nn.parallel.replicate(ember.nn.Linear(1, 1), [])
        []
    """
    if not devices:
        return []
    raise AssertionError("Broadcast function not implemented for CPU tensors (ember replicates "
                         "modules over GPUs only with multi-GPU support, which it lacks)")
