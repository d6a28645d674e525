"""Decorators for functions run by RPC (``torch.distributed.rpc.functions``)."""

from __future__ import annotations

import functools

__all__ = ["async_execution"]


def async_execution(fn):
    """Mark ``fn`` as returning an ``ember.futures.Future`` when run by RPC: the callee
    answers when that Future completes, with its value, and the thread that ran ``fn`` is
    free meanwhile (so ``fn`` can chain further RPCs without blocking a worker thread).
    Put it under ``@staticmethod`` / ``@classmethod`` when decorating methods.

    Args:
        fn (callable): a function returning a Future.

    Returns:
        callable: ``fn``, marked.

    Example::

        >>> @ember.distributed.rpc.functions.async_execution
        ... def add_later(fut_a, b):
        ...     return fut_a.then(lambda f: f.value() + b)
        >>> hasattr(add_later, "_wrapped_async_rpc_function")
        True
    """
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)

    wrapper._wrapped_async_rpc_function = fn
    return wrapper
