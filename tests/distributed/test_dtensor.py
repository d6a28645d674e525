"""DTensor (ember.distributed.tensor), tensor parallelism and fully_shard's DTensor
parameters: one 2-rank run of tests/distributed/_dtensor_workers.py by ember and one by
PyTorch (gloo), compared entry by entry; plus the placements' value semantics, which need
no process group."""

import warnings

import numpy as np
import pytest

import ember
import ember.distributed.checkpoint as dcp
from ember.distributed.tensor import Partial, Replicate, Shard
from ember.distributed.tensor import parallel as etp
from ember.distributed.tensor.placement_types import chunk_bounds
from tests.distributed import _dtensor_workers
from tests.distributed.conftest import needs_mpi, spawn2

torch = pytest.importorskip("torch")
import torch.distributed.tensor as tdt  # noqa: E402
import torch.distributed.tensor.parallel as ttp  # noqa: E402


# -- placements and styles: values, no process group --------------------------------------------

@pytest.mark.parametrize("make", [lambda m: m.Shard(0), lambda m: m.Shard(-1),
                                  lambda m: m.Replicate(), lambda m: m.Partial(),
                                  lambda m: m.Partial("avg"), lambda m: m.Partial("max")])
def test_placement_repr_and_str_match_torch(make):
    ours, theirs = make(ember.distributed.tensor), make(tdt)
    assert (repr(ours), str(ours)) == (repr(theirs), str(theirs))


def test_placement_equality_and_hash_by_value():
    assert Shard(1) == Shard(1) and Shard(1) != Shard(0) and Replicate() == Replicate()
    assert len({Shard(0), Shard(0), Replicate(), Partial(), Partial("sum")}) == 3


def test_placement_predicates_match_torch():
    for ours, theirs in [(Shard(1), tdt.Shard(1)), (Replicate(), tdt.Replicate()),
                         (Partial(), tdt.Partial())]:
        got = (ours.is_shard(), ours.is_shard(1), ours.is_replicate(), ours.is_partial())
        assert got == (theirs.is_shard(), theirs.is_shard(1), theirs.is_replicate(),
                       theirs.is_partial())


@pytest.mark.parametrize("n,parts", [(5, 2), (4, 2), (1, 2), (7, 3), (0, 2), (2, 4)])
def test_chunk_bounds_cut_as_torch_chunk(n, parts):
    pieces = torch.arange(n).chunk(parts)
    sizes = [len(p) for p in pieces] + [0] * (parts - len(pieces))
    assert [b - a for a, b in (chunk_bounds(n, parts, i) for i in range(parts))] == sizes


@pytest.mark.parametrize("make", [
    lambda m: m.ColwiseParallel(), lambda m: m.RowwiseParallel(),
    lambda m: m.RowwiseParallel(output_layouts=m_shard(m, 1), use_local_output=False),
    lambda m: m.SequenceParallel(),
    lambda m: m.PrepareModuleInput(input_layouts=(m_shard(m, 0),),
                                   desired_input_layouts=(m_rep(m),)),
    lambda m: m.PrepareModuleOutput(output_layouts=m_shard(m, 0),
                                    desired_output_layouts=m_rep(m))])
def test_parallel_style_repr_matches_torch(make):
    assert repr(make(etp)) == repr(make(ttp))


def m_shard(m, d):
    return (ember.distributed.tensor if m is etp else tdt).Shard(d)


def m_rep(m):
    return (ember.distributed.tensor if m is etp else tdt).Replicate()


def test_old_tensor_path_names_the_same_objects_as_torch_does():
    import ember.distributed._tensor as old
    import torch.distributed._tensor as told

    assert old.DTensor is ember.distributed.tensor.DTensor and old.Shard is Shard
    assert old.device_mesh.init_device_mesh is ember.distributed.device_mesh.init_device_mesh
    assert told.DTensor is tdt.DTensor  # PyTorch keeps the same alias


def test_partial_refuses_unknown_reduction():
    with pytest.raises(ValueError):
        Partial("median")


# -- two ranks ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dtensor")
    ours = spawn2(tmp, _dtensor_workers.run, "ember")
    theirs = spawn2(tmp, _dtensor_workers.run, "torch")
    return ours, theirs, tmp


def _same(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.allclose(np.asarray(a), np.asarray(b), atol=1e-5)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


_AS_TORCH = ["shard0", "shard_neg", "s0_to_s1", "s0_to_r", "r_to_s0", "sum", "sum_dim1", "mean0",
             "mean_uneven", "amax", "pointwise", "partial_scaled", "view", "view_values",
             "mm_colwise", "mm_rowwise", "softmax", "mixed", "to_partial", "zeros", "param",
             "from_local", "tp_layouts", "tp_matches", "tp_output_type", "tp_state_dict",
             "sp_output", "fsdp_state_dict", "fsdp_grad", "fsdp_reload", "fsdp_mixed",
             "loss_parallel", "mesh_repr", "mesh_2d", "tp_wildcard", "distribute_module",
             "getitem", "linear_grads", "sp_grads", "pickle_dtensor", "pickle_reduces",
             "pickle_param", "save_load", "save_load_forward", "deepcopy_module",
             "deepcopy_grads", "deepcopy_fsdp"]


@needs_mpi
@pytest.mark.parametrize("key", _AS_TORCH)
def test_dtensor_two_ranks_match_torch(runs, key):
    ours, theirs, _ = runs
    for rank in range(2):
        assert _same(ours[rank][key], theirs[rank][key]), (rank, ours[rank][key],
                                                           theirs[rank][key])


@needs_mpi
def test_dtensor_gradients_equal_single_process(runs):
    for r in runs[0]:
        assert r["linear_grads"][2:] == (True, True) and r["sp_grads"][1] is True


@needs_mpi
def test_saved_dtensor_pieces_load_in_a_process_without_their_group(runs):
    # each rank saved its piece of a colwise-parallel Linear (weights_only load, as torch)
    tmp = runs[2]
    whole = np.arange(12.0).reshape(4, 3) / 10 - 0.5
    for rank in range(2):
        ours = ember.load(tmp / "ember" / f"tp_state{rank}.pt")["weight"]
        theirs = torch.load(tmp / "torch" / f"tp_state{rank}.pt")["weight"]
        assert type(ours).__name__ == type(theirs).__name__ == "DTensor"
        assert [repr(p) for p in ours.placements] == [repr(p) for p in theirs.placements]
        assert tuple(ours.shape) == tuple(theirs.shape) == (4, 3)
        assert np.allclose(ours.to_local().numpy(), whole[2 * rank:2 * rank + 2])
        assert np.allclose(theirs.to_local().numpy(), whole[2 * rank:2 * rank + 2])


def test_pickled_dtensor_with_unknown_placement_is_refused():
    from ember.distributed.tensor._api import _rebuild_dtensor

    with pytest.raises(ValueError, match="unknown placement"):
        _rebuild_dtensor(ember.ones(2), ("cpu", [0], None, None), [("Scatter", 0)], (2,),
                         False, False)


# -- layouts of joins, norms, attention; gradients kept unsummed ----------------------------------

# PyTorch lays a leaf's gradient out as its backward ops leave it; ember lays it out as the
# leaf (values equal): these cases differ in the gradients' placements only
_GRAD_LAYOUT_DIFFERS = {"cat_s0_dim0", "cat_s1_r", "layer_norm_s2"}
_RULES = ["cat_s0_dim1", "cat_s0_dim0", "cat_s1_r", "stack_s0_dim0", "stack_s1_dim2",
          "layer_norm_s0", "layer_norm_s1", "layer_norm_s2", "rms_norm_s1"]


@needs_mpi
@pytest.mark.parametrize("case", _RULES)
def test_dtensor_join_and_norm_layouts_match_torch(runs, case):
    ours, theirs, _ = runs
    for rank in range(2):
        a, b = ours[rank]["rules"][case], theirs[rank]["rules"][case]
        assert a[0] == b[0] and _same(a[1], b[1])
        for (pa, ga), (pb, gb) in zip(a[2], b[2]):
            assert _same(ga, gb)
            assert pa == pb or case in _GRAD_LAYOUT_DIFFERS


@needs_mpi
@pytest.mark.parametrize("case", ["sdpa_heads", "sdpa_batch", "sdpa_causal_heads"])
def test_dtensor_attention_runs_on_head_or_batch_pieces(runs, case):
    # PyTorch has rules for its CUDA attention kernels only (on CPU it raises); ember keeps
    # the heads or batch sharding, and the values are the whole tensors' (replicated case)
    ours, theirs, _ = runs
    assert theirs[0]["rules"][case][0] == "raises"
    placement = "Shard(dim=1)" if "heads" in case else "Shard(dim=0)"
    for r in ours:
        got, whole = r["rules"][case], r["rules"]["sdpa_replicated" if "causal" not in case
                                                   else case]
        assert got[0] == [placement] and [g[0] for g in got[2]] == [[placement]] * 3
        assert _same(got[1], whole[1])


def test_dtensor_attention_values_equal_torch_whole():
    import torch.nn.functional as tF

    from tests.distributed import _rules_workers as w

    q, k, v = (w._data(torch, 2, 4, 6, 8, seed=s) for s in (6, 7, 8))
    expected = tF.scaled_dot_product_attention(q, k, v, is_causal=True)
    eq, ek, ev = (w._data(ember, 2, 4, 6, 8, seed=s) for s in (6, 7, 8))
    got = ember.nn.functional.scaled_dot_product_attention(eq, ek, ev, is_causal=True)
    assert np.allclose(got.numpy(), expected.numpy(), atol=1e-5)


@needs_mpi
def test_replicated_leaf_gradient_kept_partial_as_torch(runs):
    ours, theirs, _ = runs
    for r in range(2):
        assert ours[r]["partial_grads"]["linear_x_grad"][0] == ["Partial(sum)"]
        assert theirs[r]["partial_grads"]["linear_x_grad"][0] == ["Partial(sum)"]
        assert ours[r]["partial_grads"]["sp_grad_layout"] == ["Partial(sum)"]


@needs_mpi
def test_partial_gradients_sum_to_single_process_values(runs):
    from tests.distributed import _rules_workers as w

    ref = w.partial_grads_reference(ember)
    for r in runs[0]:
        pg = r["partial_grads"]
        assert np.allclose(pg["linear_x_grad"][1], ref["linear_x_grad"], atol=1e-5)
        assert np.allclose(pg["mixed_x_grad"][1], ref["mixed_x_grad"], atol=1e-5)


@needs_mpi
def test_leaf_read_both_ways_gets_summed_gradient(runs):
    # a share and a whole gradient cannot be added unsummed: ember sums (PyTorch shows
    # Partial(sum) there; the values are the same)
    for r in runs[0]:
        assert r["partial_grads"]["mixed_x_grad"][0] == ["Replicate()"]


@needs_mpi
def test_optimizer_and_clipping_over_partial_gradients_equal_single_process(runs):
    from tests.distributed import _rules_workers as w

    ref = w.partial_grads_reference(ember)
    for r in runs[0]:
        pg = r["partial_grads"]
        assert abs(pg["clip_total"] - ref["clip_total"]) < 1e-4
        assert all(np.allclose(p, q, atol=1e-5) for p, q in zip(pg["sp_trained"],
                                                                 ref["sp_trained"]))


@needs_mpi
def test_tensor_parallel_training_equals_single_process(runs):
    assert all(r["tp_matches"] for r in runs[0])


@needs_mpi
def test_fully_shard_dtensor_checkpoint_loads_whole_in_one_process(runs):
    ours, _, tmp = runs
    full = ours[0]["fsdp_full"]
    sd = {"model": {k: ember.zeros(*v.shape) for k, v in full.items()}}
    dcp.load(sd, checkpoint_id=tmp / "ember" / "fsdp")
    for k, v in sd["model"].items():
        np.testing.assert_array_equal(v.numpy(), full[k])


@needs_mpi
def test_fully_shard_dtensor_checkpoint_loads_in_torch(runs):
    import torch.distributed.checkpoint as tdcp

    ours, _, tmp = runs
    full = ours[0]["fsdp_full"]
    sd = {"model": {k: torch.zeros(*v.shape) for k, v in full.items()}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: "assuming ... a single process"
        tdcp.load(sd, checkpoint_id=tmp / "ember" / "fsdp")
    for k, v in sd["model"].items():
        np.testing.assert_array_equal(v.numpy(), full[k])


@needs_mpi
def test_torch_fully_shard_checkpoint_loads_whole_in_ember(runs):
    _, theirs, tmp = runs
    full = theirs[0]["fsdp_full"]
    sd = {"model": {k: ember.zeros(*v.shape) for k, v in full.items()}}
    dcp.load(sd, checkpoint_id=tmp / "torch" / "fsdp")
    for k, v in sd["model"].items():
        np.testing.assert_array_equal(v.numpy(), full[k])


@needs_mpi
def test_dtensor_setitem_and_index_fill_on_a_sharded_tensor_write_the_right_rows(runs):
    # PyTorch has no sharding rule for these (NotImplementedError); ember runs them on the
    # whole tensor and keeps each rank's rows
    for r in runs[0]:
        assert r["setitem_sharded"] == (["Shard(dim=0)"], True, True)
