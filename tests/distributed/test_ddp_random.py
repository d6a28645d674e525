"""DDP on random small models, 2 processes: ember against PyTorch's gloo, step by step.

Each seed draws a model (Linear/Conv1d/Embedding/LayerNorm/BatchNorm, shared, unused and
frozen parameters) and DDP options (bucket caps down to a few bytes, find_unused_parameters,
static_graph, gradient_as_bucket_view, broadcast_buffers, no_sync, join with uneven
inputs, a comm hook, SGD or Adam); see ``_random_ddp_workers.py``. Every step's gradients,
parameters and buffers, the logging record's bucket layout and the warnings must agree.
CI runs a few seeds; ``EMBER_RANDOM_DDP_SEEDS=N`` runs N.
"""

import os

import numpy as np
import pytest

from tests.distributed import _random_ddp_workers
from tests.distributed.conftest import needs_mpi, spawn2

pytest.importorskip("torch")

pytestmark = needs_mpi

SEEDS = list(range(int(os.environ.get("EMBER_RANDOM_DDP_SEEDS", "4"))))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ddp_random")
    return (spawn2(tmp, _random_ddp_workers.random_ddp, "ember", SEEDS),
            spawn2(tmp, _random_ddp_workers.random_ddp, "torch", SEEDS))


def _tolerance(cfg):
    # fp16-compressed buckets round each gradient to half precision on both sides
    return (2e-3, 2e-4) if cfg["hook"].startswith("fp16") else (2e-4, 2e-5)


def same_steps(ours, theirs, cfg):
    """Assert one rank's record of a random DDP run equals torch's: the same error, or the
    same warnings, hook and, step by step, gradients, parameters and buffers (within the
    configuration's tolerance). Returns whether the runs trained (no error)."""
    assert ours.get("error") == theirs.get("error"), cfg
    if "error" in theirs:
        return False
    assert ours["warnings"] == theirs["warnings"], cfg
    assert ours["hook"] == theirs["hook"], cfg
    assert len(ours["steps"]) == len(theirs["steps"]), cfg
    rtol, atol = _tolerance(cfg)
    for i, (a, b) in enumerate(zip(ours["steps"], theirs["steps"])):
        for kind in ("grads", "params", "buffers"):
            assert a[kind].keys() == b[kind].keys(), (cfg, i, kind)
            for name, want in b[kind].items():
                got = a[kind][name]
                assert (got is None) == (want is None), (cfg, i, kind, name)
                if want is not None:
                    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol,
                                               err_msg=f"{cfg} step {i} {kind} {name}")
    return True


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("rank", [0, 1])
def test_random_ddp_matches_torch_gloo(runs, seed, rank):
    ours, theirs = runs[0][rank][seed], runs[1][rank][seed]
    cfg = _random_ddp_workers.config(seed)
    if not same_steps(ours, theirs, cfg):
        return
    # the bucket layout after the rebuild (sizes and parameter indices), every step
    # (not yet under no_sync: PyTorch rebuilds in the no_sync forward that follows the
    # first synchronized backward, and its record shows that one step before ember's)
    if not cfg["no_sync"]:
        assert ours["logs"] == theirs["logs"], cfg
    else:
        assert ours["logs"][-1] == theirs["logs"][-1], cfg
