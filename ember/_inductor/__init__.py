"""``ember._inductor``: the settings of PyTorch's Inductor compiler (``config``).

ember has no Inductor; ``ember.compile`` runs eagerly (NOTE [ Eager compile ] in
ember/_dynamo/eval_frame.py). ``config`` keeps the settings programs tune.

Example::

    >>> ember._inductor.config.coordinate_descent_tuning
    False
"""

from . import config, utils  # noqa: F401
from ..compiler import cudagraph_mark_step_begin  # noqa: F401  (as torch._inductor's)
