"""Helpers for the multi-process tests: spawn 2 workers, collect what they dumped."""

import os
import pickle

import pytest

import ember.distributed as dist  # noqa: F401  (imported before the engine module)
from ember.distributed import _engine
from tests._ports import free_port  # noqa: F401  (NOTE [ Test ports outside the ephemeral range ])

# several processes need mpi4py; a group of one does not (NOTE [ A world of one ])
needs_mpi = pytest.mark.skipif(not _engine.available(),
                               reason="mpi4py not installed (pip install 'ember[distributed]')")


def spawn2(tmp_path, fn, fw="ember", *extra, init_method=None):
    """Run ``fn(rank, fw, init_method, out_dir, *extra)`` in 2 processes; their results."""
    import importlib

    mp = importlib.import_module(fw + ".multiprocessing")
    out = tmp_path / fw
    out.mkdir(exist_ok=True)
    # PyTorch's gloo now and then aborts a worker ("terminate called without an active
    # exception") or raises from a collective an error left over from an earlier one (NOTE
    # [ PyTorch's gloo as the oracle ] in _random_collective_workers.py) on its own: the
    # reference run is retried, ember's never is.
    tries = 3 if fw == "torch" and init_method is None else 1
    for attempt in range(tries):
        method = init_method or f"tcp://127.0.0.1:{free_port()}"
        try:
            mp.spawn(fn, args=(fw, method, str(out), *extra), nprocs=2)
            break
        except (mp.ProcessExitedException, mp.ProcessRaisedException):
            if attempt == tries - 1:
                raise
    return load(out)


def load(out_dir):
    results = []
    for r in range(2):
        with open(os.path.join(out_dir, f"rank{r}.pkl"), "rb") as f:
            results.append(pickle.load(f))
    return results
