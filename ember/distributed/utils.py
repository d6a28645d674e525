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


def _sync_params_and_buffers(process_group, module_states, broadcast_bucket_size, src):
    """Broadcast ``module_states`` from rank ``src`` to the group, in place, in buckets of
    about ``broadcast_bucket_size`` bytes (one flat tensor per bucket and dtype).

    Args:
        process_group (ProcessGroup): the group.
        module_states (list of Tensors): the tensors to overwrite with ``src``'s values.
        broadcast_bucket_size (int): bytes per broadcast.
        src (int): the source rank.

    Returns:
        None.

    Example::

        >>> # _sync_params_and_buffers(group, list(model.parameters()), 250 * 1024**2, 0)
    """
    from .. import no_grad
    from .._utils import _flatten_dense_tensors, _take_tensors, _unflatten_dense_tensors
    from . import broadcast

    if not module_states:
        return
    with no_grad():
        for bucket in _take_tensors(list(module_states), int(broadcast_bucket_size)):
            flat = _flatten_dense_tensors(bucket)
            broadcast(flat, src, group=process_group)
            for t, synced in zip(bucket, _unflatten_dense_tensors(flat, bucket)):
                t.copy_(synced)


def _sync_module_states(module, process_group, broadcast_bucket_size, src,
                        params_and_buffers_to_ignore, broadcast_buffers=True):
    """Make every rank's copy of ``module`` equal rank ``src``'s: its parameters and (with
    ``broadcast_buffers``) buffers, but for the names in ``params_and_buffers_to_ignore``
    (what DistributedDataParallel does at construction).

    Args:
        module (Module): the module.
        process_group (ProcessGroup): the group.
        broadcast_bucket_size (int): bytes per broadcast.
        src (int): the source rank.
        params_and_buffers_to_ignore (container of str): fully qualified names to skip.
        broadcast_buffers (bool): sync the buffers too. Default: True.

    Returns:
        None.

    Example::

        >>> # _sync_module_states(model, group, 250 * 1024**2, 0, set())
    """
    states = [p.detach() for name, p in module.named_parameters()
              if name not in params_and_buffers_to_ignore]
    if broadcast_buffers:
        states += [b.detach() for name, b in module.named_buffers()
                   if name not in params_and_buffers_to_ignore]
    _sync_params_and_buffers(process_group, states, broadcast_bucket_size, src)
