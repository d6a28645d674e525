"""2-D parallelism: ``fully_shard`` over ``mesh["dp"]`` of a tensor-parallel model on
``mesh["tp"]``, on a 2x2 mesh of 4 ranks, as PyTorch's FSDP2 + TP tutorial writes it
(tests/distributed/_fsdp_tp_workers.py); compared with the same training in one process and
with PyTorch's placements."""

import numpy as np
import pytest

import ember
from ember.distributed.tensor.placement_types import Shard, _StridedShard
from tests.distributed import _fsdp_tp_workers
from tests.distributed.conftest import needs_mpi

torch = pytest.importorskip("torch")

# what PyTorch 2.13 (gloo, 2x2 mesh) reports for the same program: parameter placements
# after fully_shard (the TP-sharded rows get a strided dp placement)
_TORCH_LAYOUTS = {
    "inp.weight": ["Shard(dim=0)"], "out.bias": ["Shard(dim=0)"],
    "layers.0.w1.weight": ["_StridedShard(dim=0, sf=2)", "Shard(dim=0)"],
    "layers.0.w1.bias": ["_StridedShard(dim=0, sf=2)", "Shard(dim=0)"],
    "layers.0.w2.weight": ["Shard(dim=0)", "Shard(dim=1)"],
    "layers.0.w2.bias": ["Shard(dim=0)", "Replicate()"],
    "layers.1.norm.weight": ["Shard(dim=0)"],
}


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    return _fsdp_tp_workers.spawn(tmp_path_factory.mktemp("fsdp_tp"), "ember", 4, 2, 2)


def test_strided_shard_repr_matches_torch():
    from torch.distributed.tensor.placement_types import _StridedShard as TS

    ours, theirs = _StridedShard(0, split_factor=2), TS(0, split_factor=2)
    assert (repr(ours), str(ours), ours.is_shard()) == (repr(theirs), str(theirs),
                                                          theirs.is_shard())
    assert ours != Shard(0) and ours == _StridedShard(0, sf=2)


@needs_mpi
def test_fsdp_tp_placements_match_torch(ranks):
    layouts = {n: pl for n, _, pl, _, _ in ranks[0]["layouts"]}
    assert {n: layouts[n] for n in _TORCH_LAYOUTS} == _TORCH_LAYOUTS


@needs_mpi
def test_fully_shard_refuses_tp_parameter_of_another_mesh_changing_nothing(ranks):
    assert all(r["refused_unchanged"] is True for r in ranks)


@needs_mpi
def test_fsdp_tp_local_pieces_are_quarters_of_tp_weights(ranks):
    shapes = {n: (shape, local) for n, _, _, shape, local in ranks[0]["layouts"]}
    assert shapes["layers.0.w1.weight"] == ([16, 8], [4, 8])
    assert shapes["layers.0.w2.weight"] == ([8, 16], [4, 8])


@needs_mpi
def test_fsdp_tp_gradients_laid_out_as_parameters(ranks):
    grads = dict(ranks[0]["grad_layouts"])
    assert all(grads[n] == pl for n, _, pl, _, _ in ranks[0]["layouts"])


@needs_mpi
def test_fsdp_tp_training_equals_one_process(ranks):
    losses, params = _fsdp_tp_workers.single_process(ember, 2)
    for r, res in enumerate(ranks):
        assert np.allclose(res["losses"], [step[r // 2] for step in losses], atol=1e-5)
        assert all(np.allclose(res["params"][k], v, atol=1e-5) for k, v in params.items())


@needs_mpi
def test_fsdp_tp_checkpoint_loads_whole_in_one_process(ranks):
    import ember.distributed.checkpoint as dcp

    params = ranks[0]["params"]
    sd = {"model": {k: ember.zeros(*v.shape) for k, v in params.items()}}
    dcp.load(sd, checkpoint_id=ranks[0]["checkpoint"])
    for k, v in sd["model"].items():
        np.testing.assert_array_equal(v.numpy(), params[k])


@needs_mpi
def test_fsdp_tp_full_state_dict_is_whole_and_sets_back(ranks):
    for r in ranks:
        params = r["params"]
        assert r["full_sd"].keys() == params.keys()
        assert all(np.array_equal(r["full_sd"][k], v) for k, v in params.items())
        assert all(np.array_equal(r["round_trip"][k], v) for k, v in params.items())
        shapes = dict(r["full_osd_shapes"])
        assert shapes["layers.0.w1.weight"] == [16, 8] and shapes["layers.0.w2.weight"] == [8, 16]


@needs_mpi
def test_fsdp_tp_checkpoint_loads_in_torch(ranks):
    import warnings

    import torch.distributed.checkpoint as tdcp

    params = ranks[0]["params"]
    sd = {"model": {k: torch.zeros(*v.shape) for k, v in params.items()}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: "assuming ... a single process"
        tdcp.load(sd, checkpoint_id=ranks[0]["checkpoint"])
    for k, v in sd["model"].items():
        np.testing.assert_array_equal(v.numpy(), params[k])


@needs_mpi
def test_fsdp_tp_training_equals_torch(ranks):
    losses, params = _fsdp_tp_workers.single_process(torch, 2)
    for r, res in enumerate(ranks):
        assert np.allclose(res["losses"], [step[r // 2] for step in losses], atol=1e-5)
    assert all(np.allclose(ranks[0]["params"][k], v, atol=1e-5) for k, v in params.items())


class _Mesh:
    """A stand-in mesh: sizes and a coordinate, no process group."""

    def __init__(self, shape, coordinate):
        self._shape, self._coordinate = shape, coordinate

    def size(self, m):
        return self._shape[m]

    def get_coordinate(self):
        return self._coordinate


@pytest.mark.parametrize("dp,tp", [(0, 0), (0, 1), (1, 0), (1, 1)])
def test_strided_shard_piece_is_tp_piece_cut_again(dp, tp):
    from ember.distributed.tensor._redistribute import local_layout

    size, offset = local_layout((16, 8), _Mesh((2, 2), (dp, tp)),
                                (_StridedShard(0, split_factor=2), Shard(0)))
    assert size == (4, 8) and offset == (8 * tp + 4 * dp, 0)
