"""``ember.distributed.tensor.parallel``: tensor parallelism over a 1-D ``DeviceMesh``
(PyTorch's ``torch.distributed.tensor.parallel``): ``parallelize_module`` with the styles
``ColwiseParallel``, ``RowwiseParallel``, ``SequenceParallel`` and the ``PrepareModule*``
layouts (NOTE [ Tensor-parallel styles ] in style.py), and ``loss_parallel``.

Example::

    >>> from ember.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel
    >>> ColwiseParallel().use_local_output
    True
"""

from . import api, loss, style
from .api import parallelize_module
from .loss import loss_parallel
from .style import (ColwiseParallel, ParallelStyle, PrepareModuleInput, PrepareModuleInputOutput,
                    PrepareModuleOutput, RowwiseParallel, SequenceParallel)

__all__ = ["ColwiseParallel", "ParallelStyle", "PrepareModuleInput", "PrepareModuleInputOutput",
           "PrepareModuleOutput", "RowwiseParallel", "SequenceParallel", "loss_parallel",
           "parallelize_module"]
