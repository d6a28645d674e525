"""``ember.autograd.profiler_legacy``: PyTorch's pre-Kineto profiler entry point (deprecated).

PyTorch keeps this module for old scripts; its ``profile`` takes a narrower set of options
than ``ember.autograd.profiler.profile``. Ember records both the same way (NOTE [ Profiler
recording ] in ember/profiler/_recorder.py), so this ``profile`` is that one with the legacy
signature. New code should use ``ember.profiler.profile``.

Example::

    >>> import ember
    >>> from ember.autograd.profiler_legacy import profile
    >>> with profile() as prof:
    ...     _ = ember.ones(2, 2) @ ember.ones(2, 2)
    >>> [e.name for e in prof.function_events][-1]
    'aten::mm'
"""

from __future__ import annotations

from .profiler import profile as _profile
from .profiler_util import (  # noqa: F401  (PyTorch's names in this module)
    MEMORY_EVENT_NAME, DeviceType, EventList, FunctionEvent,
)
from .profiler import ProfilerConfig, ProfilerState  # noqa: F401

__all__ = ["profile"]


class profile(_profile):
    """DEPRECATED: use ``ember.profiler.profile``. The legacy profiler's signature.

    Args:
        enabled (bool): False makes this a no-op.
        use_cuda (bool): deprecated; record CUDA activity when CUDA is available.
        record_shapes (bool): record input shapes.
        with_flops (bool): count flops of matrix products and convolutions.
        profile_memory (bool): record the bytes ops allocate and free.
        with_stack (bool): record the Python stack of each op.
        with_modules (bool): accepted as PyTorch's; ``nn.Module`` calls are recorded
            with ``with_stack``, as in PyTorch.

    Example::

        >>> x = ember.ones(3)
        >>> with profile(record_shapes=True) as prof:
        ...     _ = x + 1
        >>> [(a.key, a.input_shapes) for a in prof.key_averages(group_by_input_shape=True)]
        [('aten::add', [[3], [], []])]
    """

    def __init__(self, enabled=True, *, use_cuda=False, record_shapes=False, with_flops=False,
                 profile_memory=False, with_stack=False, with_modules=False):
        super().__init__(enabled, use_cuda=use_cuda, record_shapes=record_shapes,
                         with_flops=with_flops, profile_memory=profile_memory,
                         with_stack=with_stack, with_modules=with_modules)
