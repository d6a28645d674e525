"""``ember.nn.parallel``: running a module over several devices.

``DataParallel`` on a machine without a GPU runs the module as it is (PyTorch does the
same); ``DistributedDataParallel`` needs a process group (ember.distributed), and
constructing it before one exists raises ValueError, as in PyTorch. ``replicate``,
``scatter``, ``gather`` and ``parallel_apply`` move work between GPUs and raise on CPU
tensors as PyTorch's do.

Example::

    >>> net = ember.nn.DataParallel(ember.nn.Linear(2, 1))
    >>> net(ember.ones(3, 2)).shape
    ember.Size([3, 1])
"""

from . import comm
from .data_parallel import DataParallel, data_parallel
from .distributed import DistributedDataParallel, DistributedDataParallelCPU
from .parallel_apply import parallel_apply
from .replicate import replicate
from .scatter_gather import gather, scatter

__all__ = ["DataParallel", "DistributedDataParallel", "DistributedDataParallelCPU", "comm",
           "data_parallel", "gather",
           "parallel_apply", "replicate", "scatter"]
