"""ember.distributed.rpc in 2 processes against torch.distributed.rpc, same scenario."""

import numpy as np
import pytest

import ember.distributed.rpc as rpc
from tests.distributed import _rpc_workers
from tests.distributed.conftest import spawn2

try:
    import torch.distributed.rpc as trpc

    HAS_TORCH = trpc.is_available()
except ImportError:
    HAS_TORCH = False

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch with RPC not installed")


def _run(tmp, fw):
    # a file store: no port to pick, so no race with other tests for a free port
    return spawn2(tmp, _rpc_workers.scenario, fw, init_method=f"file://{tmp}/store")[0]


@pytest.fixture(scope="module")
def ours(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("rpc"), "ember")


@pytest.fixture(scope="module")
def theirs(tmp_path_factory):
    if not HAS_TORCH:
        pytest.skip("PyTorch with RPC not installed")
    return _run(tmp_path_factory.mktemp("rpc_torch"), "torch")


SAME = [
    "rpc_sync_tensor", "rpc_async_is_future", "rpc_async_value", "rpc_async_then", "kwargs",
    "to_id", "to_worker_info", "to_self", "builtin", "nested", "then_nested_rpc", "big_in_place",
    "big_unchanged_here", "remote_error",
    "async_error_type", "bad_name", "bad_id", "timeout", "worker_info", "rpc_timeout",
    "lambda_pickle", "remote_to_here", "remote_meta", "remote_user_repr",
    "local_value_on_user", "proxies", "rref_back_to_owner", "owner_rref", "owner_rref_to_user",
    "remote_error_to_here", "remote_self", "async_execution", "shutdown_waited",
    "after_shutdown", "ag_unknown_context", "ag_context_id", "ag_nested_context", "ag_grad_w",
    "ag_grad_p", "ag_not_scalar", "ag_no_grad_root", "ag_after_exit", "optimizer",
    "rref_backward_dist", "rref_backward_local", "rref_backward_user", "ag_remote_to_here",
    "ag_big_no_grad",
]


def _same(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.asarray(a).dtype == np.asarray(b).dtype and np.array_equal(a, b)
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


@needs_torch
@pytest.mark.parametrize("name", SAME)
def test_rpc_scenario_matches_torch(ours, theirs, name):
    assert _same(ours[name], theirs[name]), (ours[name], theirs[name])


def test_rpc_large_tensors_round_trip(ours, theirs):
    a, b = ours["big_tensors"], theirs["big_tensors"]
    assert a.keys() == b.keys()
    for k in a:
        assert a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]), k


def test_rpc_remote_rref_freed_when_user_drops_it(ours):
    assert ours["rref_freed"] == (1, 0)


def test_dist_autograd_gradients_match_hand_computed(ours):
    # loss = sum(z + y*w), y = w*p (worker1), z = y*y + p (square on worker0, via worker1)
    w, p = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0])
    y = w * p
    np.testing.assert_allclose(ours["ag_grad_w"][0], 2 * y * p + y + w * p)
    np.testing.assert_allclose(ours["ag_grad_p"][0], 2 * y * w + 1 + w * w)
    assert ours["ag_grad_w"][1] and ours["ag_grad_p"][1]  # .grad untouched


def test_dist_autograd_through_remote_and_to_here(ours):
    w, p = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0])
    grad_w, grad_p = ours["ag_remote_to_here"]  # loss = sum((w*p)**2)
    np.testing.assert_allclose(grad_w, 2 * w * p * p)
    np.testing.assert_allclose(grad_p, 2 * w * p * w)


def test_distributed_optimizer_steps_every_owner(ours):
    q, w = ours["optimizer"]
    np.testing.assert_allclose(q, [1.0 - 0.6, -2.0 - 0.8], rtol=1e-6)  # two SGD steps
    np.testing.assert_allclose(w, np.array([1.0, 2.0, 3.0]) * 0.64, rtol=1e-6)


def test_parameter_server_training_equals_local_training(ours):
    import ember

    nn = ember.nn
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 1))
    with ember.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(ember.tensor(_rpc_workers.ps_init(i, tuple(p.shape))))
    opt = ember.optim.SGD(model.parameters(), lr=_rpc_workers.PS_LR)
    x, y = ember.tensor(_rpc_workers.PS_X), ember.tensor(_rpc_workers.PS_Y)
    losses = []
    for _ in range(_rpc_workers.PS_STEPS):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    got_losses, got_params = ours["ps_training"]
    np.testing.assert_allclose(got_losses, losses, rtol=1e-6)
    for got, p in zip(got_params, model.parameters()):
        np.testing.assert_allclose(got, p.detach().numpy(), rtol=1e-6, atol=1e-7)


@needs_torch
def test_parameter_server_training_matches_torch(ours, theirs):
    (a_loss, a_params), (b_loss, b_params) = ours["ps_training"], theirs["ps_training"]
    np.testing.assert_allclose(a_loss, b_loss, rtol=1e-5)
    for a, b in zip(a_params, b_params):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_rpc_remote_confirmed_after_to_here(ours):
    assert ours["remote_confirmed"] is True


def test_init_rpc_twice_raises_runtime_error(ours):
    assert ours["init_twice"] == ("RuntimeError", "RPC is already initialized")


def test_rpc_shutdown_waits_for_outstanding_calls(ours):
    assert ours["shutdown_waited"] is True


def test_rpc_single_worker_calls_itself(monkeypatch):
    monkeypatch.delenv("RANK", raising=False)
    rpc.init_rpc("solo", rank=0, world_size=1)
    try:
        assert rpc.rpc_sync("solo", _rpc_workers.add, args=(2, 3)) == 5
        assert rpc.remote("solo", _rpc_workers.add, args=(1, 1)).to_here() == 2
        assert rpc.get_worker_info().name == "solo"
    finally:
        rpc.shutdown()
    assert rpc._AGENT[0] is None


@pytest.mark.parametrize("name", ["a b", "", "x" * 200])
def test_init_rpc_bad_name_raises_runtime_error(name):
    with pytest.raises(RuntimeError, match="Worker name must match"):
        rpc.init_rpc(name, rank=0, world_size=1)
    assert rpc._AGENT[0] is None


def test_init_rpc_bad_backend_raises_type_error():
    with pytest.raises(TypeError, match="BackendType"):
        rpc.init_rpc("w", backend="gloo", rank=0, world_size=1)


def test_rpc_before_init_raises_runtime_error():
    with pytest.raises(RuntimeError, match="RPC has not been initialized"):
        rpc.rpc_sync("worker1", _rpc_workers.add, args=(1, 2))
    with pytest.raises(RuntimeError, match="RPC has not been initialized"):
        rpc.shutdown()


@needs_torch
def test_backend_options_defaults_match_torch():
    a, b = rpc.TensorPipeRpcBackendOptions(), trpc.TensorPipeRpcBackendOptions()
    assert (a.num_worker_threads, a.rpc_timeout, a.init_method, a.device_maps, a.devices) == \
        (b.num_worker_threads, b.rpc_timeout, b.init_method, b.device_maps, b.devices)
    with pytest.raises(RuntimeError, match="num_worker_threads must be positive"):
        rpc.TensorPipeRpcBackendOptions(num_worker_threads=0)


@needs_torch
def test_worker_info_matches_torch():
    a, b = rpc.WorkerInfo("trainer", 3), trpc.WorkerInfo("trainer", 3)
    assert repr(a) == repr(b) and (a.name, a.id) == (b.name, b.id)
    assert (a == rpc.WorkerInfo("trainer", 4)) == (b == trpc.WorkerInfo("trainer", 4))


@needs_torch
def test_constants_match_torch():
    from torch.distributed.rpc import constants as tc

    for name in rpc.constants.__all__:
        assert getattr(rpc.constants, name) == getattr(tc, name)


@needs_torch
def test_backend_registry_matches_torch():
    from torch.distributed.rpc import backend_registry as tbr

    from ember.distributed.rpc import backend_registry as br

    assert [m.name for m in br.BackendType] == [m.name for m in tbr.BackendType]
    assert br.BackendValue._fields == tbr.BackendValue._fields
    ours = br.construct_rpc_backend_options(br.BackendType.TENSORPIPE, rpc_timeout=3,
                                            num_worker_threads=2)
    theirs = tbr.construct_rpc_backend_options(tbr.BackendType.TENSORPIPE, rpc_timeout=3,
                                               num_worker_threads=2)
    assert (ours.rpc_timeout, ours.num_worker_threads) == (theirs.rpc_timeout,
                                                            theirs.num_worker_threads)
    for mod in (br, tbr):
        with pytest.raises(RuntimeError, match="already registered"):
            mod.register_backend("TENSORPIPE", None, None)


def test_rpc_docstring_examples_pass():
    import doctest

    import ember
    import ember.distributed.autograd
    import ember.distributed.optim.optimizer
    from ember.distributed.rpc import backend_registry, functions, options

    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    failed = []
    for mod in (rpc, rpc.api, backend_registry, functions, options, rpc._rref, rpc._agent,
                ember.distributed.autograd, ember.distributed.optim.optimizer):
        for t in doctest.DocTestFinder().find(mod):
            t.globs.setdefault("ember", ember)
            if t.examples and runner.run(t, out=lambda s: None).failed:
                failed.append(t.name)
    assert not failed
