"""DDP communication hooks (``torch.distributed.algorithms.ddp_comm_hooks``): the standard
ones in ``default_hooks``, ``powerSGD_hook`` and ``post_localSGD_hook``, and
``DDPCommHookType`` to register them by name.

Example::

    >>> from ember.distributed.algorithms.ddp_comm_hooks import DDPCommHookType
    >>> DDPCommHookType.FP16_COMPRESS.name
    'FP16_COMPRESS'
"""

from __future__ import annotations

import enum
import functools

from . import ddp_zero_hook, debugging_hooks, default_hooks, post_localSGD_hook, powerSGD_hook
from . import debugging_hooks as debugging  # noqa: F401  (torch's alias)
from . import default_hooks as default  # noqa: F401  (torch's alias)
from . import powerSGD_hook as powerSGD  # noqa: F401  (torch's alias)

__all__ = ["DDPCommHookType", "ddp_zero_hook", "debugging", "debugging_hooks", "default",
           "default_hooks", "post_localSGD_hook", "powerSGD", "powerSGD_hook",
           "register_ddp_comm_hook"]


def _plain(hook, model, state):
    model.register_comm_hook(state, hook)


def _powersgd(hook, model, state, matrix_approximation_rank):
    st = powerSGD_hook.PowerSGDState(process_group=state,
                                      matrix_approximation_rank=matrix_approximation_rank)
    model.register_comm_hook(st, hook)


class DDPCommHookType(enum.Enum):
    """The standard DDP communication hooks by name; ``register_ddp_comm_hook`` installs
    one.

    Example::

        >>> [t.name for t in DDPCommHookType][:3]
        ['ALLREDUCE', 'FP16_COMPRESS', 'BF16_COMPRESS']
    """

    ALLREDUCE = functools.partial(_plain, default_hooks.allreduce_hook)
    FP16_COMPRESS = functools.partial(_plain, default_hooks.fp16_compress_hook)
    BF16_COMPRESS = functools.partial(_plain, default_hooks.bf16_compress_hook)
    QUANTIZE_PER_TENSOR = "quantize_per_tensor"
    QUANTIZE_PER_CHANNEL = "quantize_per_channel"
    POWER_SGD = functools.partial(_powersgd, powerSGD_hook.powerSGD_hook,
                                  matrix_approximation_rank=1)
    POWER_SGD_RANK2 = functools.partial(_powersgd, powerSGD_hook.powerSGD_hook,
                                        matrix_approximation_rank=2)
    BATCHED_POWER_SGD = functools.partial(_powersgd, powerSGD_hook.batched_powerSGD_hook,
                                          matrix_approximation_rank=1)
    BATCHED_POWER_SGD_RANK2 = functools.partial(
        _powersgd, powerSGD_hook.batched_powerSGD_hook, matrix_approximation_rank=2)
    NOOP = "noop"


def register_ddp_comm_hook(comm_hook_type, model, state=None):
    """Register the hook ``comm_hook_type`` names on the DDP ``model``.

    Args:
        comm_hook_type: a ``DDPCommHookType``.
        model: the ``DistributedDataParallel`` model.
        state: the hook's state (a process group, or None for the default group).

    Raises:
        NotImplementedError: a quantization hook (not in ember).

    Example::

        >>> register_ddp_comm_hook(DDPCommHookType.FP16_COMPRESS, ddp)  # doctest: +SKIP
    """
    if comm_hook_type is DDPCommHookType.NOOP:
        model.register_comm_hook(state, debugging_hooks.noop_hook)
        return
    if isinstance(comm_hook_type.value, str):
        raise NotImplementedError(f"{comm_hook_type.name}: quantization hooks are not in ember")
    comm_hook_type.value(model=model, state=state)
