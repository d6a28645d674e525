"""``ember.utils``: data loading and other utilities."""

from . import data  # noqa: F401
from . import _device  # noqa: F401,E402  (``with ember.device(...)``)
from .backend_registration import (  # noqa: E402
    generate_methods_for_privateuse1_backend, rename_privateuse1_backend,
)
from . import checkpoint  # noqa: F401,E402  (torch.utils.checkpoint)
from . import dlpack, hooks, weak  # noqa: F401,E402  (the rest load on import)
from ._swap_tensors import swap_tensors  # noqa: F401,E402
from .throughput_benchmark import ThroughputBenchmark  # noqa: F401,E402
