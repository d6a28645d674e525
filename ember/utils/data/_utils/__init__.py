"""``ember.utils.data._utils``: the helper modules PyTorch keeps under this path, which code
imports from directly (``_utils.collate.default_collate``, ``_utils.worker``...)."""

import sys

from . import collate, pin_memory, worker

IS_WINDOWS = sys.platform == "win32"
HAS_NUMPY = True
MP_STATUS_CHECK_INTERVAL = 5.0  # seconds between checks that a worker is alive

__all__ = ["collate", "pin_memory", "worker"]
