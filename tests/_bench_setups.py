"""Workload setups for tests/test_bench.py that a bench worker process can import by name.

They import nothing but NumPy, so a worker that runs them still holds only its framework.
"""

from __future__ import annotations

import os

import numpy as np


def ones(fw):
    """Three ones: a tiny workload both frameworks run alike."""
    a = fw.from_numpy(np.ones(3, np.float32))
    return lambda: a + 0


def zeros(fw):
    """Three zeros, to disagree with ``ones``."""
    a = fw.from_numpy(np.zeros(3, np.float32))
    return lambda: a + 0


def broken(fw):
    """A setup that raises, as a feature not written yet would."""
    raise NotImplementedError("not there yet")


def exits(fw):
    """A setup that ends its process at once, as a crash or the out-of-memory killer would."""
    os._exit(3)


def fails_after_first_call(fw):
    """A callable whose first call works and whose later calls raise (during timing)."""
    calls = []

    def call():
        calls.append(None)
        if len(calls) > 1:
            raise RuntimeError("broke while timing")
        return fw.from_numpy(np.ones(3, np.float32))

    return call
