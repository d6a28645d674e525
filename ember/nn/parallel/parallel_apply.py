"""``parallel_apply``: run modules on their inputs, each on its own GPU, in threads."""

from __future__ import annotations

__all__ = ["parallel_apply"]


def parallel_apply(modules, inputs, kwargs_tup=None, devices=None) -> list:
    """Run ``modules[i](*inputs[i], **kwargs_tup[i])``, each on its GPU.

    Args:
        modules: the modules.
        inputs: one input (or tuple of inputs) per module.
        kwargs_tup: one dict of keyword inputs per module.
        devices: one GPU per module.

    Returns:
        The outputs, in order.

    Raises:
        ValueError: a non-CUDA device in ``devices``. RuntimeError: without an accelerator,
        as in PyTorch.

    Example::

        >>> if ember.cuda.is_available():
        ...     outs = ember.nn.parallel.parallel_apply([ember.nn.Identity()], [ember.ones(1)])
    """
    if len(modules) != len(inputs):
        raise AssertionError(f"The number of modules {len(modules)} is not equal to the "
                             f"number of inputs {len(inputs)}")
    from ...cuda import _runtime

    for d in devices or ():
        _runtime.device_index(d)  # ValueError for a non-CUDA device
    from ... import accelerator

    if not accelerator.is_available():
        raise RuntimeError(accelerator.NO_ACCELERATOR)
    kwargs_tup = kwargs_tup or ({},) * len(modules)
    return [m(*(x if isinstance(x, (list, tuple)) else (x,)), **kw)
            for m, x, kw in zip(modules, inputs, kwargs_tup, strict=True)]
