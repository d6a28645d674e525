"""``ember.distributed.fsdp``: sharded data parallelism with ``fully_shard`` (PyTorch's
FSDP2 API); see NOTE [ fully_shard ] in ``_fully_shard.py``.

Example::

    >>> from ember.distributed.fsdp import fully_shard, FSDPModule
    >>> fully_shard.__name__
    'fully_shard'
"""

import dataclasses

from ._fully_shard import FSDPModule, fully_shard

__all__ = ["CPUOffloadPolicy", "FSDPModule", "MixedPrecisionPolicy", "OffloadPolicy",
           "full_state_dict", "fully_shard"]


@dataclasses.dataclass(frozen=True)
class MixedPrecisionPolicy:
    """Dtypes for ``fully_shard``'s gathered parameters, gradient reduction and outputs
    (accepted; ember computes in the parameters' dtype).

    Example::

        >>> MixedPrecisionPolicy().param_dtype is None
        True
    """

    param_dtype: object = None
    reduce_dtype: object = None
    output_dtype: object = None
    cast_forward_inputs: bool = True


@dataclasses.dataclass
class OffloadPolicy:
    """No offloading (the default of ``fully_shard``).

    Example::

        >>> OffloadPolicy()
        OffloadPolicy()
    """


@dataclasses.dataclass
class CPUOffloadPolicy(OffloadPolicy):
    """Keep shards on the CPU between uses (ember's CPU tensors already live there).

    Example::

        >>> CPUOffloadPolicy().pin_memory
        True
    """

    pin_memory: bool = True


def full_state_dict(module) -> dict:
    """The module's state dict with every sharded parameter gathered whole (call on every
    rank).

    Example::

        >>> sd = full_state_dict(model)  # doctest: +SKIP
    """
    out = {}
    for m in module.modules():
        if isinstance(m, FSDPModule):
            m.unshard()
    try:
        for k, v in module.state_dict().items():
            out[k] = v.detach().clone()
    finally:
        for m in module.modules():
            if isinstance(m, FSDPModule):
                m.reshard()
    return out
