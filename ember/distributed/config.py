"""``ember.distributed.config``: the global settings of ``torch.distributed``, read from
the environment at import (``patch`` and ``get_config_copy`` as other config modules;
see NOTE [ Compiler config ] in ``ember/_dynamo/_config_module.py``).

- ``compile_on_one_rank`` (``TORCH_DISTRIBUTED_COMPILE_ON_ONE_RANK``): compute device-mesh
  coordinates at run time, so a program compiled on one rank runs on all.
- ``use_torchcomms`` (``TORCH_DISTRIBUTED_USE_TORCHCOMMS``): PyTorch's TorchComms
  backends; ember's groups always run on its MPI engine, so the flag is only kept.

Example::

    >>> import ember.distributed.config as config
    >>> config.use_torchcomms
    False
"""

import os

from .._dynamo._config_module import install

# the settings live in the config store that ``install`` sets up, not as module globals
__all__ = ["compile_on_one_rank", "use_torchcomms"]  # noqa: F822


def _flag(name):
    return os.environ.get(name, "0").strip().lower() in ("1", "true", "yes", "on")


install(__name__, "torch.distributed.config", {
    "compile_on_one_rank": bool(os.environ.get("TORCH_DISTRIBUTED_COMPILE_ON_ONE_RANK", False)),
    "use_torchcomms": _flag("TORCH_DISTRIBUTED_USE_TORCHCOMMS"),
})
