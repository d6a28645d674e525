"""``scatter`` and ``gather``: split inputs over GPUs, and bring outputs back."""

from __future__ import annotations

__all__ = ["gather", "scatter", "scatter_kwargs"]


def _scatter_tensor(t, target_gpus, dim):
    from ... import cuda, device

    if not target_gpus or not cuda.is_available():
        raise AssertionError("Scatter function not implemented for CPU tensors (scattering "
                             "needs CUDA devices to scatter to)")
    chunks = t.chunk(len(target_gpus), dim)
    return tuple(c.to(device("cuda", int(getattr(g, "index", g)))) for c, g in
                 zip(chunks, target_gpus))


def scatter(inputs, target_gpus, dim: int = 0):
    """Split tensors in ``inputs`` into chunks along ``dim``, one per GPU; every other value
    is repeated once per GPU (tuples, lists, dicts and named tuples are entered).

    Args:
        inputs: a tensor, or nested lists, tuples and dicts of them.
        target_gpus: GPU indices.
        dim: the dimension to split.

    Returns:
        list: one input per GPU.

    Raises:
        AssertionError: for a tensor when no CUDA device is there to scatter to.

    Example::

        >>> ember.nn.parallel.scatter((3, "s"), [0, 1])
        [(3, 's'), (3, 's')]
    """
    from ... import Tensor

    def scatter_map(obj):
        if isinstance(obj, Tensor):
            return _scatter_tensor(obj, target_gpus, dim)
        if isinstance(obj, tuple) and hasattr(obj, "_fields") and obj:  # a named tuple
            return [type(obj)(*args) for args in zip(*map(scatter_map, obj))]
        if isinstance(obj, tuple) and obj:
            return list(zip(*map(scatter_map, obj)))
        if isinstance(obj, list) and obj:
            return [list(i) for i in zip(*map(scatter_map, obj))]
        if isinstance(obj, dict) and obj:
            return [type(obj)(i) for i in zip(*map(scatter_map, obj.items()))]
        return [obj for _ in target_gpus]

    try:
        return scatter_map(inputs)
    finally:
        scatter_map = None  # the closure refers to itself: break the cycle


def scatter_kwargs(inputs, kwargs, target_gpus, dim: int = 0):
    """``scatter`` for a call's positional and keyword arguments, padded to the same count.

    Args:
        inputs (tuple): positional arguments.
        kwargs (dict): keyword arguments.
        target_gpus: GPU indices.
        dim: the dimension to split tensors along.

    Returns:
        (tuple of tuples, tuple of dicts): one pair per GPU.

    Example::

        >>> ember.nn.parallel.scatter_gather.scatter_kwargs((3,), {"a": 1}, [0, 1])
        (((3,), (3,)), ({'a': 1}, {'a': 1}))
    """
    scattered_inputs = scatter(inputs, target_gpus, dim) if inputs else []
    scattered_kwargs = scatter(kwargs, target_gpus, dim) if kwargs else []
    if len(scattered_inputs) < len(scattered_kwargs):
        scattered_inputs.extend(() for _ in range(len(scattered_kwargs) - len(scattered_inputs)))
    elif len(scattered_kwargs) < len(scattered_inputs):
        scattered_kwargs.extend({} for _ in range(len(scattered_inputs) - len(scattered_kwargs)))
    return tuple(scattered_inputs), tuple(scattered_kwargs)


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
