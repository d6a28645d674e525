"""Public multi-process idioms on 2 processes (tests/distributed/_session27_workers.py):
``fully_shard`` across a group's teardown and a new group, and what DDP/FSDP scripts write
(``record``, device meshes and DTensors, distributed checkpoints, ZeRO, the distributed
sampler, object gathers, differentiable all-reduce) compared with PyTorch's gloo, and FSDP1
with a wrap policy and state-dict types compared with one process's training."""

import numpy as np
import pytest

import ember
from tests.distributed import _session27_workers as W
from tests.distributed.conftest import free_port, needs_mpi, spawn2


@pytest.fixture(scope="module")
def idioms(tmp_path_factory):
    pytest.importorskip("torch")
    tmp = tmp_path_factory.mktemp("idioms")
    return spawn2(tmp, W.idioms, "ember"), spawn2(tmp, W.idioms, "torch")


@needs_mpi
def test_fully_shard_after_a_new_process_group(tmp_path):
    # the second round used to reach the first group's freed communicators
    ranks = spawn2(tmp_path, W.regroup, "ember", f"tcp://127.0.0.1:{free_port()}")
    for rounds in ranks:
        assert len(rounds) == 2
        for a, b in zip(rounds[0], rounds[1]):
            np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(ranks[0][1][0], ranks[1][1][0])
    # the weight's gradient averages the two ranks' (inputs 1 and 2: 1.5 per row, 2 rows),
    # the bias's is 2; the norm over the group clips both
    norm = np.sqrt(16 * 3.0 ** 2 + 4 * 2.0 ** 2)
    assert ranks[0][0][2] == pytest.approx(norm, rel=1e-6)
    np.testing.assert_allclose(ranks[0][0][1], np.full((4, 4), 3.0 / norm), rtol=1e-5)


def _assert_same(a, b, path=""):
    if isinstance(a, dict):
        assert sorted(a, key=str) == sorted(b, key=str), path
        for k in a:
            _assert_same(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, (list, tuple)) and not isinstance(a, str):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_same(x, y, f"{path}[{i}]")
    elif isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6,
                                   err_msg=path)
    else:
        assert a == b, path


@needs_mpi
@pytest.mark.parametrize("part", ["dtensor", "sampler", "objects", "nn_all_reduce",
                                  "zero_params"])
def test_idioms_match_torch(idioms, part):
    ours, theirs = idioms
    for rank in range(2):
        _assert_same(ours[rank][part], theirs[rank][part], part)


@needs_mpi
def test_zero_consolidated_state_dict_matches_torch(idioms):
    ours, theirs = idioms
    assert "zero" not in ours[1] and "zero" not in theirs[1]
    _assert_same(ours[0]["zero"], theirs[0]["zero"], "zero")


@needs_mpi
def test_distributed_checkpoint_of_fully_shard_round_trips_as_torch(idioms):
    ours, theirs = idioms
    for rank in range(2):
        saved, loaded = ours[rank]["dcp"]
        _assert_same(saved, loaded, "loaded")
        _assert_same(saved, theirs[rank]["dcp"][0], "saved vs torch")


def _fsdp1_reference():
    model = W.fsdp1_model(ember)
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    batch = ember.cat([W.fsdp1_batch(ember, r) for r in range(2)])
    for _ in range(2):
        opt.zero_grad()
        model(batch).pow(2).mean().backward()
        opt.step()
    return {k: v.detach().numpy() for k, v in model.state_dict().items()}


@needs_mpi
def test_fsdp1_auto_wrap_and_state_dict_types_equal_one_process(tmp_path):
    ranks = spawn2(tmp_path, W.fsdp1, "ember")
    assert ranks[0]["units"] == ranks[1]["units"] == 3  # the root and both linears
    assert ranks[1]["full"] == {}  # rank0_only
    want = _fsdp1_reference()
    _assert_same(ranks[0]["full"], want, "full")
    for r in range(2):
        assert ranks[r]["sharded"] == {"0.weight": ((8, 4), (4, 4)), "0.bias": ((8,), (4,)),
                                       "2.weight": ((2, 8), (1, 8)), "2.bias": ((2,), (1,))}
