"""DistributedDataParallel in 2 processes equals single-process full-batch training."""

import numpy as np
import pytest

from tests.distributed import _workers
from tests.distributed.conftest import needs_mpi, spawn2

try:
    import torch  # noqa: F401

    HAS_TORCH = True
except ImportError:
    HAS_TORCH = False

pytestmark = needs_mpi


def _assert_params_close(results, reference):
    for r in results:
        for got, want in zip(r["params"], reference):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_ddp_training_equals_full_batch(tmp_path):
    results = spawn2(tmp_path, _workers.train_ddp, "ember")
    _assert_params_close(results, _workers.train_single("ember"))


def test_ddp_small_buckets_equal_full_batch(tmp_path):
    results = spawn2(tmp_path, _workers.train_ddp, "ember", 4, 0.0001)
    _assert_params_close(results, _workers.train_single("ember"))


def test_ddp_no_sync_accumulation_equals_full_batch(tmp_path):
    results = spawn2(tmp_path, _workers.train_ddp, "ember", 4, None, True)
    _assert_params_close(results, _workers.train_single("ember"))


def test_ddp_state_dict_keys_prefixed_module(tmp_path):
    results = spawn2(tmp_path, _workers.train_ddp, "ember", 1)
    assert results[0]["keys"] == ["module.0.weight", "module.0.bias", "module.2.weight",
                                  "module.2.bias"]
    assert results[0]["module_is_net"]


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch not installed")
def test_ddp_find_unused_parameters_matches_torch(tmp_path):
    ours = spawn2(tmp_path, _workers.unused_params, "ember")
    theirs = spawn2(tmp_path, _workers.unused_params, "torch")
    for o, t in zip(ours, theirs):
        assert o.keys() == t.keys()
        for k in o:
            assert (o[k] is None) == (t[k] is None), k
            if o[k] is not None:
                np.testing.assert_allclose(o[k], t[k], rtol=1e-6)
