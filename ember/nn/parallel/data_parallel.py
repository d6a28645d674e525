"""``DataParallel``: split a batch over GPUs, run a copy of the module on each, gather.

Without a GPU there is nothing to split over, and the wrapper calls the module directly --
PyTorch's behaviour on such a machine, including ``device_ids == []`` and ``state_dict``
keys prefixed with ``module.``. With ember's CUDA backend the module also runs as it is, on
the device of its parameters: splitting over several GPUs comes with multi-device support.
"""

from __future__ import annotations

from ..modules.module import Module

__all__ = ["DataParallel", "data_parallel"]


class DataParallel(Module):
    """Run ``module`` on the batch (split over GPUs in PyTorch; see the module docstring).

    Args:
        module: the module to run.
        device_ids: the GPUs to use (ignored without a GPU, as in PyTorch).
        output_device: the GPU to gather outputs on.
        dim: the batch dimension.

    Shape:
        As ``module``.

    Example::

        >>> dp = ember.nn.DataParallel(ember.nn.Linear(2, 1))
        >>> dp.device_ids, list(dp.state_dict())
        ([], ['module.weight', 'module.bias'])
    """

    def __init__(self, module, device_ids=None, output_device=None, dim: int = 0):
        super().__init__()
        self.module = module
        from ... import cuda

        if not cuda.is_available():
            self.device_ids = []
            return
        ids = list(range(cuda.device_count())) if device_ids is None else device_ids
        self.device_ids = [getattr(d, "index", d) for d in ids]
        self.output_device = self.device_ids[0] if output_device is None else output_device
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


def data_parallel(module, inputs, device_ids=None, output_device=None, dim: int = 0,
                  module_kwargs=None):
    """The functional ``DataParallel``: run ``module`` on ``inputs`` over GPUs.

    Args:
        module: the module.
        inputs: its positional inputs (a tensor or a tuple).
        device_ids, output_device, dim: as for ``DataParallel``.
        module_kwargs: its keyword inputs.

    Returns:
        The module's output.

    Raises:
        RuntimeError: without a GPU ("device type could not be determined"), as in PyTorch.

    Example::

        >>> if ember.cuda.is_available():
        ...     y = ember.nn.parallel.data_parallel(ember.nn.Linear(2, 1), ember.ones(3, 2))
    """
    from ... import cuda

    if not cuda.is_available():
        raise RuntimeError("device type could not be determined")
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    return module(*inputs, **(module_kwargs or {}))
