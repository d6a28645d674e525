"""``ember.cuda.green_contexts``: CUDA green contexts (partitions of a GPU's SMs).

Green contexts need the CUDA driver's green-context entry points (CUDA 12.4+), which ember's
CuPy backend does not reach; ember answers as a PyTorch built without them does:
``SUPPORTED`` is False and :meth:`GreenContext.create` raises RuntimeError.

Example::

    >>> ember.cuda.green_contexts.SUPPORTED
    False
"""

from __future__ import annotations

__all__ = ["GreenContext", "SUPPORTED"]

SUPPORTED = False


class GreenContext:
    """A CUDA green context: a context bound to a subset of one GPU's SMs.

    Build one with :meth:`GreenContext.create`; without green-context support (ember's case,
    see the module's docstring) that raises RuntimeError.

    Example::

        >>> try:
        ...     ember.cuda.green_contexts.GreenContext.create(num_sms=8)
        ... except RuntimeError as e:
        ...     print("unsupported")
        unsupported
    """

    @staticmethod
    def create(*, num_sms=None, workqueue_scope=None, workqueue_concurrency_limit=None,
               device_id=None):
        """Make a green context over ``num_sms`` SMs of device ``device_id``.

        Args:
            num_sms (int, optional): SMs to give the context.
            workqueue_scope (str, optional): the work queue's sharing scope.
            workqueue_concurrency_limit (int, optional): concurrent workloads in its queue.
            device_id (int, optional): the GPU; Default: the current one.

        Returns:
            GreenContext

        Raises:
            RuntimeError: green contexts are not supported by this build.
        """
        raise RuntimeError("PyTorch was not built with Green Context support! (ember's CUDA "
                           "backend, CuPy, does not reach the driver's green contexts)")

    @staticmethod
    def max_workqueue_concurrency(device_id=None):
        """The device's default limit of concurrent workloads per work queue.

        Args:
            device_id (int, optional): the GPU.

        Returns:
            int

        Raises:
            RuntimeError: green contexts are not supported by this build.
        """
        raise RuntimeError("PyTorch was not built with Green Context support!")

    def set_context(self):
        """Make this green context the current one."""
        raise RuntimeError("PyTorch was not built with Green Context support!")

    def pop_context(self):
        """Pop this green context (the current one) and restore the previous context."""
        raise RuntimeError("PyTorch was not built with Green Context support!")

    def Stream(self):  # noqa: N802  (PyTorch's spelling)
        """The CUDA stream of this green context.

        Returns:
            ember.cuda.Stream
        """
        raise RuntimeError("PyTorch was not built with Green Context support!")
