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
    # one bucket in registration order (as torch's reducer), then buckets of at least the
    # cap (104 bytes) in the order the gradients became ready: a linear layer's bias
    # before its weight, as torch's addmm hands them on (NOTE [ Edge order ])
    before, after = features[0][0]["buckets"]
    assert before == [["head.weight", "head.bias", "body.weight", "body.bias"]]
    assert after == [["head.bias", "head.weight"], ["body.bias", "body.weight"]]
    assert features[0][1]["buckets"] == features[0][0]["buckets"]


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


# -- post-local SGD and model averaging (run inside ddp_features) --------------------------------

@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch not installed")
@pytest.mark.parametrize("name", ["hook_subgroup", "hook_no_grad_allreduce", "optimizer",
                                  "hierarchical"])
def test_post_local_sgd_steps_match_torch_gloo(features, name):
    ours, theirs = features
    for rank in range(2):
        for got, want in zip(ours[rank]["avg_" + name], theirs[rank]["avg_" + name]):
            _close(got, want, 1e-5)


@pytest.mark.parametrize("name,averaged_at", [("hook_subgroup", [0, 1, 2, 4]),
                                              ("hierarchical", [3])])
def test_post_local_sgd_replicas_agree_only_when_averaged(features, name, averaged_at):
    # warm-up steps average gradients globally; later only steps the averager picks agree
    ours, _ = features
    a, b = ours[0]["avg_" + name], ours[1]["avg_" + name]
    same = [all(np.array_equal(x, y) for x, y in zip(a[i], b[i])) for i in range(len(a))]
    assert [i for i, s in enumerate(same) if s] == averaged_at


def test_post_local_sgd_optimizer_leaves_params_without_grad(features):
    ours, _ = features
    last0, last1 = ours[0]["avg_optimizer"][-1], ours[1]["avg_optimizer"][-1]
    # body, head parameters averaged at step 4 (period 3 after 1 warm-up step); the
    # never-used layer (the last two) keeps its per-rank value
    _close(last0[:4], last1[:4], 0)
    assert not np.allclose(last0[4], last1[4])


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch not installed")
@pytest.mark.parametrize("name", ["hook_subgroup_iter", "hook_no_grad_allreduce_iter",
                                  "optimizer_sd", "optimizer_load_no_step", "optimizer_load_step",
                                  "hierarchical_periods", "hook_default_subgroup"])
def test_post_local_sgd_state_matches_torch_gloo(features, name):
    ours, theirs = features
    assert [r["avg_" + name] for r in ours] == [r["avg_" + name] for r in theirs]


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch not installed")
def test_model_averaging_bad_arguments_raise_as_torch(features):
    ours, theirs = features
    o, t = ours[0]["avg_bad_arguments"], theirs[0]["avg_bad_arguments"]
    assert o.keys() == t.keys()
    for k in o:
        assert str(o[k]).replace("ember.Tensor", "torch.Tensor") == str(t[k]), k


# -- ZeroRedundancyOptimizer(overlap_with_ddp=True) (run inside ddp_features) -------------------

@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch not installed")
@pytest.mark.parametrize("name", ["step", "step_shard", "interleaved", "interleaved_shard"])
def test_zero_overlap_with_ddp_equals_torch_adam_after_two_iterations(features, name):
    # torch refuses the overlap on gloo; the overlap skips two iterations' updates, so it
    # must equal torch's DDP + Adam over the remaining batches
    ours, theirs = features
    for rank in range(2):
        _close(ours[rank]["zo_" + name][0], theirs[rank]["zo_expected"], 1e-5)


# (the buckets: head's bias and weight, then body's, in the order torch's reducer sees the
# gradients ready: NOTE [ Edge order ] in ember/autograd/_engine.py)
@pytest.mark.parametrize("name,shares", [("step", [2, 2]), ("step_shard", [3, 1]),
                                         ("interleaved", [4, 0]),
                                         ("interleaved_shard", [3, 1])])
def test_zero_overlap_shares_follow_ddp_buckets(features, name, shares):
    ours, _ = features
    assert [r["zo_" + name][1] for r in ours] == shares


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch not installed")
@pytest.mark.parametrize("name", ["zo_gloo", "zo_not_overlap", "zo_no_functional",
                                  "zo_step_returns"])
def test_zero_overlap_refusals_match_torch(features, name):
    ours, theirs = features
    assert [r[name] for r in ours] == [r[name] for r in theirs]


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch not installed")
def test_zero_overlap_with_static_graph_skips_three_iterations_as_torch(features):
    ours, theirs = features
    for rank in range(2):
        _close(ours[rank]["zo_step_static"], theirs[rank]["zo_expected_static"], 1e-5)


# -- the logging record and bucket layouts (tests/distributed/_ddp_logging_workers.py) ----------

@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch not installed")
@pytest.mark.parametrize("name", ["log_plain", "log_static", "log_static_unused",
                                  "log_find_unused", "log_cap_list"])
def test_ddp_logging_data_matches_torch(features, name):
    ours, theirs = features
    for rank in range(2):
        for it, (o, t) in enumerate(zip(ours[rank][name]["records"],
                                        theirs[rank][name]["records"])):
            assert o == t, (rank, it, {k: (o[k], t[k]) for k in o if o[k] != t[k]})


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch not installed")
@pytest.mark.parametrize("name", ["log_plain", "log_static", "log_static_unused"])
def test_ddp_has_rebuilt_buckets_after_each_forward_matches_torch(features, name):
    ours, theirs = features
    assert [r[name]["rebuilt"] for r in ours] == [r[name]["rebuilt"] for r in theirs]


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch not installed")
def test_ddp_logging_timings_are_integers_as_torch(features):
    ours, theirs = features
    assert ours[0]["log_plain"]["timings"] == theirs[0]["log_plain"]["timings"]


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch not installed")
@pytest.mark.parametrize("name", ["buckets_initial", "buckets_find_unused",
                                  "buckets_cap_list", "log_bad_rate"])
def test_ddp_bucket_layout_matches_torch(features, name):
    ours, theirs = features
    assert [r[name] for r in ours] == [r[name] for r in theirs]


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch not installed")
def test_ddp_ignored_params_and_buffers_stay_local_as_torch(features):
    ours, theirs = features
    for rank in range(2):
        _close(ours[rank]["ignored"][0], theirs[rank]["ignored"][0], 1e-5)
        assert ours[rank]["ignored"][1:] == theirs[rank]["ignored"][1:] == (True, True)


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch not installed")
def test_ddp_static_graph_under_join_matches_torch(features):
    ours, theirs = features
    for rank in range(2):
        for o, t in zip(ours[rank]["join_static"], theirs[rank]["join_static"]):
            _close(o, t, 1e-5)
