"""``ember.distributed.optim``: ``ZeroRedundancyOptimizer`` (optimizer state sharded across
ranks), ``PostLocalSGDOptimizer`` (local steps, periodic model averaging),
``DistributedOptimizer`` (parameters held by RRefs on several RPC workers) and the
functional optimizers (``as_functional_optim``, ``functional_*``), as
``torch.distributed.optim``.

Example::

    >>> from ember.distributed.optim import ZeroRedundancyOptimizer
    >>> ZeroRedundancyOptimizer.__name__
    'ZeroRedundancyOptimizer'
"""

from . import (apply_optimizer_in_backward, functional_adadelta, functional_adagrad,
               functional_adam, functional_adamax, functional_adamw, functional_rmsprop,
               functional_rprop, functional_sgd, named_optimizer, optimizer,
               post_localSGD_optimizer, utils, zero_redundancy_optimizer)
from .named_optimizer import _NamedOptimizer  # noqa: F401  (torch's private name)
from .optimizer import DistributedOptimizer
from .post_localSGD_optimizer import PostLocalSGDOptimizer
from .utils import as_functional_optim
from .zero_redundancy_optimizer import ZeroRedundancyOptimizer

__all__ = ["DistributedOptimizer", "PostLocalSGDOptimizer", "ZeroRedundancyOptimizer",
           "apply_optimizer_in_backward", "as_functional_optim", "functional_adadelta",
           "functional_adagrad", "functional_adam", "functional_adamax", "functional_adamw",
           "functional_rmsprop", "functional_rprop", "functional_sgd", "named_optimizer",
           "optimizer", "post_localSGD_optimizer", "utils", "zero_redundancy_optimizer"]
