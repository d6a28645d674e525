"""Helpers of ``torch.distributed.utils`` that data-parallel code uses: moving inputs to a
device and mapping functions over nested outputs.

Example::

    >>> from ember.distributed.utils import _to_kwargs
    >>> _to_kwargs((1,), {}, None)
    (((1,),), ({},))
"""

from __future__ import annotations

__all__: list = []


def _to_kwargs(inputs, kwargs, target_device, use_side_stream_for_tensor_copies=False):
    """``(inputs,), (kwargs,)`` unchanged for CPU (ember moves nothing between devices)."""
    inputs = tuple(inputs) if inputs else ()
    kwargs = dict(kwargs) if kwargs else {}
    return (inputs,), (kwargs,)


def _apply_to_tensors(fn, container):
    """``fn`` applied to every tensor in a nested list/tuple/dict."""
    from .. import Tensor

    if isinstance(container, Tensor):
        return fn(container)
    if isinstance(container, dict):
        return {k: _apply_to_tensors(fn, v) for k, v in container.items()}
    if isinstance(container, (list, tuple)):
        out = [_apply_to_tensors(fn, v) for v in container]
        return type(container)(out) if not hasattr(container, "_fields") else \
            type(container)(*out)
    return container
