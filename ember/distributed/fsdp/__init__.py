"""``ember.distributed.fsdp``: sharded data parallelism with ``fully_shard`` (PyTorch's
FSDP2 API; NOTE [ fully_shard ] in ``_fully_shard.py``) and the ``FullyShardedDataParallel``
wrapper (FSDP1; NOTE [ FSDP1 on fully_shard's gathers ] in ``fully_sharded_data_parallel.py``).

Example::

    >>> from ember.distributed.fsdp import fully_shard, FSDPModule
    >>> fully_shard.__name__
    'fully_shard'
"""

import dataclasses

from ._fully_shard import (FSDPModule, UnshardHandle, fully_shard, register_fsdp_forward_method,
                           share_comm_ctx)
from .api import (BackwardPrefetch, CPUOffload, FullOptimStateDictConfig, FullStateDictConfig,
                  LocalOptimStateDictConfig, LocalStateDictConfig, MixedPrecision,
                  OptimStateDictConfig, OptimStateKeyType, ShardedOptimStateDictConfig,
                  ShardedStateDictConfig, ShardingStrategy, StateDictConfig, StateDictSettings,
                  StateDictType)
from .fully_sharded_data_parallel import FullyShardedDataParallel

__all__ = ["BackwardPrefetch", "CPUOffload", "CPUOffloadPolicy", "DataParallelMeshDims",
           "FSDPModule",
           "FullOptimStateDictConfig", "FullStateDictConfig", "FullyShardedDataParallel",
           "LocalOptimStateDictConfig", "LocalStateDictConfig", "MixedPrecision",
           "MixedPrecisionPolicy", "OffloadPolicy", "OptimStateDictConfig", "OptimStateKeyType",
           "ShardedOptimStateDictConfig", "ShardedStateDictConfig", "ShardingStrategy",
           "StateDictConfig", "StateDictSettings", "StateDictType", "UnshardHandle",
           "full_state_dict", "fully_shard", "register_fsdp_forward_method", "share_comm_ctx"]


@dataclasses.dataclass
class DataParallelMeshDims:
    """Which named dimensions of a DeviceMesh are data parallel, for ``fully_shard`` of
    parameters that are already DTensors on that mesh (accepted: ember shards over the
    ``mesh`` it is given).

    Args:
        shard: the dimension name(s) parameters are sharded over.
        replicate: the dimension name(s) parameters are replicated over.

    Example::

        >>> DataParallelMeshDims(shard="dp").replicate is None
        True
    """

    shard: object = None
    replicate: object = None


@dataclasses.dataclass(frozen=True)
class MixedPrecisionPolicy:
    """Dtypes for ``fully_shard``'s gathered parameters (``param_dtype``, floating-point
    forward inputs cast to it with ``cast_forward_inputs``), gradient reduction
    (``reduce_dtype``, default the parameter's) and outputs (``output_dtype``).

    Args:
        param_dtype: dtype of the gathered parameters (None: the parameter's).
        reduce_dtype: dtype of gradient reduction (None: the parameter's).
        output_dtype: dtype the forward's outputs are cast to (None: unchanged).
        cast_forward_inputs: cast floating-point forward inputs to ``param_dtype``.

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

    Args:
        pin_memory: pin the host copies (accepted; CPU tensors need no pinning).

    Example::

        >>> CPUOffloadPolicy().pin_memory
        True
    """

    pin_memory: bool = True


def full_state_dict(module) -> dict:
    """The module's state dict with every sharded parameter gathered whole (call on every
    rank).

    Args:
        module (nn.Module): a module sharded with ``fully_shard``.

    Returns:
        dict: name -> whole tensor.

    Example::

        >>> sd = full_state_dict(model)  # doctest: +SKIP
    """
    from ..tensor import DTensor

    scalars = {}  # 0-d parameters are sharded as plain one-element pieces
    for m in module.modules():
        if isinstance(m, FSDPModule) and not m._fsdp_state.gathered:
            for info in m._fsdp_state.infos:
                if not info.shape:
                    scalars[id(info.owner._parameters[info.name])] = info
    by_name = {n: scalars[id(p)] for n, p in module.named_parameters() if id(p) in scalars}
    out = {}
    for k, v in module.state_dict().items():
        if k in by_name:
            info = by_name[k]
            out[k] = info.gather(info.owner._parameters[info.name])
        else:  # sharded parameters are DTensors: gathered whole in their own dtype
            out[k] = v.full_tensor() if isinstance(v, DTensor) else v.detach().clone()
    return out
