"""Options of ``FullyShardedDataParallel`` (PyTorch's FSDP1): how parameters are sharded,
their dtypes, and the forms of the state dict (``torch.distributed.fsdp.api``).

Example::

    >>> from ember.distributed.fsdp.api import ShardingStrategy
    >>> ShardingStrategy.FULL_SHARD.value
    1
"""

from __future__ import annotations

import dataclasses
import enum

__all__ = ["BackwardPrefetch", "CPUOffload", "FullOptimStateDictConfig", "FullStateDictConfig",
           "LocalOptimStateDictConfig", "LocalStateDictConfig", "MixedPrecision",
           "OptimStateDictConfig", "OptimStateKeyType", "ShardedOptimStateDictConfig",
           "ShardedStateDictConfig", "ShardingStrategy", "StateDictConfig",
           "StateDictSettings", "StateDictType"]


class ShardingStrategy(enum.Enum):
    """What each rank keeps between uses (NOTE [ FSDP1 on fully_shard's gathers ] in
    ``fully_sharded_data_parallel.py``).

    ``FULL_SHARD``: parameters, gradients and optimizer state sharded. ``SHARD_GRAD_OP``:
    the same numbers (PyTorch keeps the gathered parameters from forward to backward; ember's
    backward reuses what forward saved either way). ``NO_SHARD``: replicated, gradients
    all-reduced as DDP does. ``HYBRID_SHARD`` and ``_HYBRID_SHARD_ZERO2``: sharded within a
    node and replicated across nodes; on one node they are ``FULL_SHARD``.

    Example::

        >>> ShardingStrategy.NO_SHARD
        <ShardingStrategy.NO_SHARD: 3>
    """

    FULL_SHARD = 1
    SHARD_GRAD_OP = 2
    NO_SHARD = 3
    HYBRID_SHARD = 4
    _HYBRID_SHARD_ZERO2 = 5


class BackwardPrefetch(enum.Enum):
    """When PyTorch gathers the next unit's parameters in backward (accepted; ember's backward
    reads the parameters its forward gathered, so there is nothing to fetch ahead).

    Example::

        >>> BackwardPrefetch.BACKWARD_PRE.value
        1
    """

    BACKWARD_PRE = 1
    BACKWARD_POST = 2


class StateDictType(enum.Enum):
    """The form ``state_dict()`` takes under ``FullyShardedDataParallel.state_dict_type``.

    ``FULL_STATE_DICT``: whole tensors under the original names. ``SHARDED_STATE_DICT``:
    original names, each a ``DTensor`` laid out ``Shard(0)`` over the ranks.
    ``LOCAL_STATE_DICT``: this rank's flat shards as they are stored (``..._flat_param``).

    Example::

        >>> StateDictType.FULL_STATE_DICT.name
        'FULL_STATE_DICT'
    """

    FULL_STATE_DICT = 1
    LOCAL_STATE_DICT = 2
    SHARDED_STATE_DICT = 3


class OptimStateKeyType(enum.Enum):
    """How an optimizer state dict names its parameters: by name or by index.

    Example::

        >>> OptimStateKeyType.PARAM_NAME.value
        1
    """

    PARAM_NAME = 1
    PARAM_ID = 2


@dataclasses.dataclass
class MixedPrecision:
    """Dtypes for FSDP1: gathered parameters (``param_dtype``), gradient reduction
    (``reduce_dtype``, default ``param_dtype``) and buffers (``buffer_dtype``, accepted).

    Args:
        param_dtype: dtype the parameters are gathered in for forward and backward.
        reduce_dtype: dtype of the gradient reduction.
        buffer_dtype: dtype of buffers (accepted; buffers keep theirs).
        keep_low_precision_grads: accepted; gradients are kept in the parameters' dtype.
        cast_forward_inputs: cast floating-point inputs of every unit to ``param_dtype``.
        cast_root_forward_inputs: cast floating-point inputs of the root to ``param_dtype``.

    Example::

        >>> MixedPrecision().param_dtype is None
        True
    """

    param_dtype: object = None
    reduce_dtype: object = None
    buffer_dtype: object = None
    keep_low_precision_grads: bool = False
    cast_forward_inputs: bool = False
    cast_root_forward_inputs: bool = True


@dataclasses.dataclass
class CPUOffload:
    """Keep the shards on the CPU between uses (accepted: ember's CPU shards live there).

    Args:
        offload_params (bool): PyTorch's flag.

    Example::

        >>> CPUOffload().offload_params
        False
    """

    offload_params: bool = False


@dataclasses.dataclass
class StateDictConfig:
    """Options common to the state dict forms.

    Args:
        offload_to_cpu (bool): move the tensors to the CPU.

    Example::

        >>> StateDictConfig().offload_to_cpu
        False
    """

    offload_to_cpu: bool = False


@dataclasses.dataclass
class FullStateDictConfig(StateDictConfig):
    """Options of ``FULL_STATE_DICT``.

    Args:
        offload_to_cpu (bool): move the whole tensors to the CPU.
        rank0_only (bool): only rank 0 returns the entries (the others an empty dict).

    Example::

        >>> FullStateDictConfig(rank0_only=True).rank0_only
        True
    """

    rank0_only: bool = False


@dataclasses.dataclass
class LocalStateDictConfig(StateDictConfig):
    """Options of ``LOCAL_STATE_DICT``.

    Args:
        offload_to_cpu (bool): move the shards to the CPU.

    Example::

        >>> LocalStateDictConfig().offload_to_cpu
        False
    """


@dataclasses.dataclass
class ShardedStateDictConfig(StateDictConfig):
    """Options of ``SHARDED_STATE_DICT``.

    Args:
        offload_to_cpu (bool): move the pieces to the CPU.
        _use_dtensor (bool): accepted (the entries are always DTensors).

    Example::

        >>> ShardedStateDictConfig().offload_to_cpu
        False
    """

    _use_dtensor: bool = False


@dataclasses.dataclass
class OptimStateDictConfig:
    """Options common to the optimizer state dict forms.

    Args:
        offload_to_cpu (bool): move the tensors to the CPU.

    Example::

        >>> OptimStateDictConfig().offload_to_cpu
        True
    """

    offload_to_cpu: bool = True


@dataclasses.dataclass
class FullOptimStateDictConfig(OptimStateDictConfig):
    """Options of the whole optimizer state dict.

    Args:
        offload_to_cpu (bool): move the tensors to the CPU.
        rank0_only (bool): only rank 0 returns the state (the others an empty dict).

    Example::

        >>> FullOptimStateDictConfig().rank0_only
        False
    """

    rank0_only: bool = False


@dataclasses.dataclass
class LocalOptimStateDictConfig(OptimStateDictConfig):
    """Options of the local optimizer state dict (accepted).

    Args:
        offload_to_cpu (bool): move the tensors to the CPU.

    Example::

        >>> LocalOptimStateDictConfig().offload_to_cpu
        False
    """

    offload_to_cpu: bool = False


@dataclasses.dataclass
class ShardedOptimStateDictConfig(OptimStateDictConfig):
    """Options of the sharded optimizer state dict (accepted; ember returns whole state).

    Args:
        offload_to_cpu (bool): move the tensors to the CPU.
        _use_dtensor (bool): accepted.

    Example::

        >>> ShardedOptimStateDictConfig().offload_to_cpu
        True
    """

    _use_dtensor: bool = False


@dataclasses.dataclass
class StateDictSettings:
    """What ``FullyShardedDataParallel.get_state_dict_type`` returns.

    Args:
        state_dict_type (StateDictType): the form.
        state_dict_config (StateDictConfig): its options.
        optim_state_dict_config (OptimStateDictConfig): the optimizer's options.

    Example::

        >>> StateDictSettings(StateDictType.FULL_STATE_DICT, FullStateDictConfig(),
        ...                   FullOptimStateDictConfig()).state_dict_type.name
        'FULL_STATE_DICT'
    """

    state_dict_type: StateDictType
    state_dict_config: StateDictConfig
    optim_state_dict_config: OptimStateDictConfig
