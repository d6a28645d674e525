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


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    return spawn2(tmp_path_factory.mktemp("ddp_train"), _workers.train_ddp, "ember")


@pytest.mark.parametrize("config", ["default", "small_buckets", "no_sync",
                                    "bucket_view_no_sync", "fsdp"])
def test_ddp_training_equals_full_batch(trained, config):
    _assert_params_close([r[config] for r in trained], _workers.train_single("ember"))


def test_fully_shard_keeps_one_shard_per_rank(trained):
    # the MLP's Linear(6, 16) and Linear(16, 3): rows split 8/8 and 2/1
    assert trained[0]["fsdp"]["shards"] == [(8, 6), (8,), (2, 16), (2,)]
    assert trained[1]["fsdp"]["shards"] == [(8, 6), (8,), (1, 16), (1,)]


def test_ddp_state_dict_keys_prefixed_module(trained):
    assert trained[0]["default"]["keys"] == ["module.0.weight", "module.0.bias",
                                             "module.2.weight", "module.2.bias"]
    assert trained[0]["default"]["module_is_net"]


@pytest.fixture(scope="module")
def features(tmp_path_factory):
    """ember's and PyTorch's results of ``_workers.ddp_features`` (one 2-process run each)."""
    tmp = tmp_path_factory.mktemp("ddp_features")
    ours = spawn2(tmp, _workers.ddp_features, "ember")
    theirs = spawn2(tmp, _workers.ddp_features, "torch") if HAS_TORCH else None
    return ours, theirs


def _close(a, b, tol):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, rtol=tol, atol=tol)


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch not installed")
@pytest.mark.parametrize("name", ["plain", "hook_allreduce", "hook_fp16", "hook_fp16_wrapper",
                                  "bucket_view", "static_graph", "find_unused", "join",
                                  "join_active"])
def test_ddp_feature_matches_torch_gloo(features, name):
    ours, theirs = features
    for rank in range(2):
        _close(ours[rank][name], theirs[rank][name], 1e-5)


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch not installed")
@pytest.mark.parametrize("name", ["static_graph_never_grad", "find_unused_never_grad",
                                  "bucket_view_grad_is_view", "join_throw"])
def test_ddp_feature_flag_matches_torch_gloo(features, name):
    ours, theirs = features
    assert [r[name] for r in ours] == [r[name] for r in theirs]


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch not installed")
def test_ddp_find_unused_parameters_matches_torch(features):
    ours, theirs = features
    for o, t in zip(ours, theirs):
        o, t = o["unused_grads"], t["unused_grads"]
        assert o.keys() == t.keys()
        for k in o:
            assert (o[k] is None) == (t[k] is None), k
            if o[k] is not None:
                np.testing.assert_allclose(o[k], t[k], rtol=1e-6)


@pytest.mark.parametrize("name", ["hook_bf16", "hook_bf16_wrapper"])
def test_ddp_bf16_hooks_close_to_plain(features, name):
    # torch refuses bf16 hooks without CUDA/NCCL; ember runs them on CPU
    ours, _ = features
    for rank in range(2):
        _close(ours[rank][name], ours[rank]["plain"], 2e-2)
        _close(ours[rank][name], ours[1 - rank][name], 0)


def test_ddp_buckets_rebuilt_in_ready_order(features):
    before, after = features[0][0]["buckets"]
    assert before == [["body.bias", "body.weight", "head.bias", "head.weight"]]
    assert [n for b in after for n in b][:2] == ["head.weight", "head.bias"]
    assert len(after) == 4 and features[0][1]["buckets"] == features[0][0]["buckets"]


@pytest.mark.parametrize("name", ["powersgd", "batched_powersgd"])
def test_ddp_powersgd_ranks_agree_and_compress(features, name):
    (p0, iters, rate), (p1, _, _) = (r[name] for r in features[0])
    _close(p0, p1, 0)
    assert iters == 3 and rate > 1
    assert not all(np.allclose(a, b) for a, b in zip(p0, features[0][0]["plain"]))


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch not installed")
@pytest.mark.parametrize("name", ["zero_share", "zero_unconsolidated", "zero_groups",
                                  "zero_loaded_lr"])
def test_zero_redundancy_optimizer_matches_torch(features, name):
    ours, theirs = features
    for rank in range(2):
        assert ours[rank].get(name) == theirs[rank].get(name)


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch not installed")
def test_zero_redundancy_optimizer_trains_and_consolidates_as_torch(features):
    ours, theirs = features
    for rank in range(2):
        _close(ours[rank]["zero"], theirs[rank]["zero"], 1e-5)
    o, t = ours[0]["zero_state"], theirs[0]["zero_state"]
    assert o.keys() == t.keys() == {0, 1, 2, 3}
    for k in o:
        assert o[k].keys() == t[k].keys()
        for n in o[k]:
            assert np.shape(o[k][n]) == np.shape(t[k][n])
            np.testing.assert_allclose(o[k][n], t[k][n], rtol=1e-5, atol=1e-7)
