"""ember.nn.parallel on a machine without GPUs, vs a CPU-only PyTorch."""

import numpy as np
import pytest

import ember

try:
    import torch

    HAS_TORCH = True
except ImportError:
    HAS_TORCH = False

needs_torch = pytest.mark.skipif(not HAS_TORCH or torch.cuda.is_available()
                                 or ember.cuda.is_available(), reason="needs CPU-only setups")


@needs_torch
def test_data_parallel_matches_torch_without_gpu():
    tnet = torch.nn.Linear(2, 3)
    enet = ember.nn.Linear(2, 3)
    enet.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in
                          tnet.state_dict().items()})
    tdp, edp = torch.nn.DataParallel(tnet), ember.nn.DataParallel(enet, device_ids=[0])
    assert edp.device_ids == tdp.device_ids == []
    assert list(edp.state_dict()) == list(tdp.state_dict())
    assert repr(edp) == repr(tdp)
    x = np.ones((4, 2), dtype=np.float32)
    np.testing.assert_allclose(edp(ember.tensor(x)).detach().numpy(),
                               tdp(torch.tensor(x)).detach().numpy(), rtol=1e-6)


def test_data_parallel_is_in_nn_namespace():
    assert ember.nn.DataParallel is ember.nn.parallel.DataParallel


@needs_torch
def test_distributed_data_parallel_without_process_group_matches_torch():
    with pytest.raises(ValueError) as theirs:
        torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(1, 1))
    with pytest.raises(ValueError) as ours:
        ember.nn.parallel.DistributedDataParallel(ember.nn.Linear(1, 1))
    assert str(ours.value) == str(theirs.value)


@needs_torch
def test_replicate_and_gather_match_torch_without_gpu():
    assert ember.nn.parallel.replicate(ember.nn.Linear(1, 1), []) == []
    with pytest.raises(AssertionError):
        ember.nn.parallel.replicate(ember.nn.Linear(1, 1), [0])
    with pytest.raises(AssertionError):
        ember.nn.parallel.gather([ember.ones(1)], 0)


@needs_torch
def test_parallel_apply_without_accelerator_raises_runtime_error():
    with pytest.raises(RuntimeError) as theirs:
        torch.nn.parallel.parallel_apply([torch.nn.Identity()], [torch.ones(1)])
    with pytest.raises(RuntimeError) as ours:
        ember.nn.parallel.parallel_apply([ember.nn.Identity()], [ember.ones(1)])
    assert str(ours.value) == str(theirs.value)
