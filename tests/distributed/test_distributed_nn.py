"""``distributed.nn.functional`` (collectives with gradients) against PyTorch's gloo, and
``algorithms._checkpoint.checkpoint_wrapper`` against torch's."""

import numpy as np
import pytest

import ember

from ._dnn_workers import differentiable
from .conftest import needs_mpi, spawn2

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dnn")
    return spawn2(tmp, differentiable, "ember"), spawn2(tmp, differentiable, "torch")


@needs_mpi
@pytest.mark.parametrize("name", ["all_gather", "all_reduce", "broadcast", "reduce_scatter",
                                  "all_to_all_single", "all_to_all"])
def test_gradients_through_collectives_match_gloo(results, name):
    ours, theirs = results
    for rank in range(2):
        for a, b in zip(ours[rank][name], theirs[rank][name]):
            np.testing.assert_allclose(a, b, rtol=1e-6, err_msg=f"{name} rank {rank}")


def test_world_of_one(tmp_path):
    import ember.distributed as dist
    import ember.distributed.nn.functional as F

    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0,
                            world_size=1)
    try:
        x = ember.tensor([1.0, 2.0], requires_grad=True)
        (y,) = F.all_gather(x)
        (F.all_reduce(y) * 3).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])
    finally:
        dist.destroy_process_group()


def _model(T):
    T.manual_seed(0)
    return T.nn.Sequential(T.nn.Linear(4, 8), T.nn.GELU(), T.nn.Linear(8, 2))


def test_checkpoint_wrapper_matches_torch():
    out = []
    for T in (ember, torch):
        cw = __import__(f"{T.__name__}.distributed.algorithms._checkpoint.checkpoint_wrapper",
                        fromlist=["x"])
        m = _model(T)
        sd = {k: v.detach().clone() for k, v in m.state_dict().items()}
        cw.apply_activation_checkpointing(m, check_fn=lambda x, T=T: isinstance(x, T.nn.Linear))
        assert type(m[0]).__name__ == "CheckpointWrapper"
        assert list(m.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]
        assert [n for n, _ in m.named_parameters()][0] == "0._checkpoint_wrapped_module.weight"
        assert [n for n, _ in m[0].named_parameters()] == ["weight", "bias"]
        m.load_state_dict(sd)
        assert m[0].in_features == 4  # attributes reach the wrapped module
        x = T.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4), requires_grad=True)
        m(x).pow(2).sum().backward()
        reentrant = cw.checkpoint_wrapper(T.nn.Linear(4, 4),
                                          checkpoint_impl=cw.CheckpointImpl.REENTRANT)
        assert reentrant(T.ones(1, 4)).shape == (1, 4)
        out.append((x.grad.numpy(), m[0].weight.grad.numpy()))
    for a, b in zip(*out):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    from ember.distributed.algorithms._checkpoint.checkpoint_wrapper import (
        apply_activation_checkpointing)
    from ember.distributed.fsdp.wrap import ModuleWrapPolicy

    m = _model(ember)
    apply_activation_checkpointing(m, auto_wrap_policy=ModuleWrapPolicy({ember.nn.Linear}))
    assert [type(c).__name__ for c in m] == ["CheckpointWrapper", "GELU", "CheckpointWrapper"]


@needs_mpi
def test_sharded_grad_scaler_and_sync_module_states_match_gloo(tmp_path):
    from ._dnn_workers import scaler_and_sync

    ours = spawn2(tmp_path, scaler_and_sync, "ember")
    theirs = spawn2(tmp_path, scaler_and_sync, "torch")
    for rank in range(2):
        for name in ("after_overflow", "synced"):
            a, b = ours[rank][name], theirs[rank][name]
            for x, y in zip(a, b):
                np.testing.assert_allclose(x, y, err_msg=f"{name} rank {rank}")
    # the overflow on rank 1 made both ranks skip the step and halve the scale
    assert ours[0]["after_overflow"][1] == 4.0
    np.testing.assert_array_equal(ours[0]["after_overflow"][0], [1.0, 1.0, 1.0])
