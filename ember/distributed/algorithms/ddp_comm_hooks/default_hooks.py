"""DDP's standard communication hooks (``torch.distributed.algorithms.ddp_comm_hooks.
default_hooks``): plain all-reduce, and all-reduce in float16 / bfloat16 to halve the bytes
sent. Each takes ``(process_group_or_None, bucket)`` and returns a ``Future`` holding the
averaged flat gradient.
"""

from __future__ import annotations

__all__ = ["allreduce_hook", "bf16_compress_hook", "bf16_compress_wrapper",
           "fp16_compress_hook", "fp16_compress_wrapper"]


def _group_and_size(process_group):
    from .... import distributed as dist

    group = process_group if process_group is not None else dist.group.WORLD
    return group, dist.get_world_size(group)


def _allreduce_fut(process_group, tensor):
    """Average ``tensor`` over the group: a Future holding it (reduced in place)."""
    from .... import distributed as dist

    group, size = _group_and_size(process_group)
    tensor.div_(size)
    work = dist.all_reduce(tensor, group=group, async_op=True)
    return work.get_future().then(lambda fut: fut.value()[0])


def allreduce_hook(process_group, bucket):
    """Average the bucket's gradients with one all-reduce: what DDP does without a hook.

    Args:
        process_group: the group to average over (None: the default group).
        bucket: the ``GradBucket``.

    Returns:
        Future holding the averaged flat buffer.

    Example::

        >>> ddp.register_comm_hook(None, allreduce_hook)  # doctest: +SKIP
    """
    return _allreduce_fut(process_group, bucket.buffer())


def _compress_hook(dtype, process_group, bucket):
    from .... import distributed as dist

    group, size = _group_and_size(process_group)
    buffer = bucket.buffer()
    compressed = buffer if buffer.dtype == dtype else buffer.to(dtype)
    compressed.div_(size)
    work = dist.all_reduce(compressed, group=group, async_op=True)

    def decompress(fut):
        out = bucket.buffer()
        out.copy_(fut.value()[0])
        return out

    return work.get_future().then(decompress)


def fp16_compress_hook(process_group, bucket):
    """Average the bucket in float16: cast, divide by the world size, all-reduce, and cast
    back into the bucket's dtype.

    Args:
        process_group: the group (None: the default group).
        bucket: the ``GradBucket``.

    Returns:
        Future holding the averaged flat buffer.

    Example::

        >>> ddp.register_comm_hook(None, fp16_compress_hook)  # doctest: +SKIP
    """
    from .... import float16

    return _compress_hook(float16, process_group, bucket)


def bf16_compress_hook(process_group, bucket):
    """Average the bucket in bfloat16 (as ``fp16_compress_hook``, with bfloat16's range).

    Args:
        process_group: the group (None: the default group).
        bucket: the ``GradBucket``.

    Returns:
        Future holding the averaged flat buffer.

    Example::

        >>> ddp.register_comm_hook(None, bf16_compress_hook)  # doctest: +SKIP
    """
    from .... import bfloat16

    return _compress_hook(bfloat16, process_group, bucket)


def _compress_wrapper(dtype, hook):
    def wrapped(hook_state, bucket):
        original = bucket.buffer()
        bucket.set_buffer(original.to(dtype))
        fut = hook(hook_state, bucket)

        def decompress(f):
            value = f.value()
            original.copy_(value[0] if isinstance(value, list) else value)
            return original

        return fut.then(decompress)

    # PyTorch's names: DDP refuses the bf16 one where NCCL is missing, by this name
    wrapped.__name__ = ("bf16" if "bfloat16" in str(dtype) else "fp16") + \
        "_compress_wrapper_hook"
    return wrapped


def fp16_compress_wrapper(hook):
    """Wrap another hook so it runs on a float16 copy of the bucket; the result is cast
    back into the original buffer.

    Args:
        hook: a communication hook ``(state, bucket) -> Future``.

    Returns:
        the wrapped hook.

    Example::

        >>> ddp.register_comm_hook(state, fp16_compress_wrapper(powerSGD_hook))  # doctest: +SKIP
    """
    from .... import float16

    return _compress_wrapper(float16, hook)


def bf16_compress_wrapper(hook):
    """Wrap another hook so it runs on a bfloat16 copy of the bucket.

    Args:
        hook: a communication hook ``(state, bucket) -> Future``.

    Returns:
        the wrapped hook.

    Example::

        >>> ddp.register_comm_hook(state, bf16_compress_wrapper(powerSGD_hook))  # doctest: +SKIP
    """
    from .... import bfloat16

    return _compress_wrapper(bfloat16, hook)
