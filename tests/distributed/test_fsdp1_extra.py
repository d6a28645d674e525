"""FSDP1's remaining surface: ``register_comm_hook`` with the default hooks and a hook of the
user's own, a weight tied inside one wrapped unit (2 ranks, against single-process
full-batch training and PyTorch's gloo run of tests/distributed/_fsdp1_extra_workers.py),
and ``rekey_optim_state_dict`` against PyTorch 2.13 (no process group needed)."""

import numpy as np
import pytest

import ember
import ember.distributed as dist
from ember.distributed.algorithms._comm_hooks import default_hooks as dh
from ember.distributed.fsdp import FullyShardedDataParallel as FSDP, OptimStateKeyType
from tests.distributed import _fsdp1_extra_workers as W
from tests.distributed.conftest import free_port, needs_mpi, spawn2

CASES = {c[0]: c for c in W.CASES}


def _reference(tied, lr_scale):
    """Full-batch SGD on one process; each step's loss on each rank's half of the batch.
    A summing hook doubles the gradient, which for SGD is a doubled learning rate."""
    net = W.model(ember, tied)
    opt = ember.optim.SGD(net.parameters(), lr=W.LR * lr_scale)
    x, y = (ember.tensor(a) for a in W.data())
    losses = [[], []]
    for _ in range(W.STEPS):
        with ember.no_grad():
            for r in range(2):
                rows = list(range(4 * r, 4 * r + 4))
                losses[r].append(float(((net(x[rows]) - y[rows]) ** 2).mean()))
        opt.zero_grad()
        ((net(x) - y) ** 2).mean().backward()
        opt.step()
    return losses, {k: v.numpy().copy() for k, v in net.state_dict().items()}


@pytest.fixture(scope="module")
def ember_runs(tmp_path_factory):
    return spawn2(tmp_path_factory.mktemp("fsdp1x_ember"), W.worker, "ember")


@pytest.fixture(scope="module")
def torch_runs(tmp_path_factory):
    pytest.importorskip("torch")
    return spawn2(tmp_path_factory.mktemp("fsdp1x_torch"), W.worker, "torch", W.TORCH_CASES)


@needs_mpi
@pytest.mark.parametrize("case", list(CASES))
def test_fsdp1_extra_equals_full_batch(ember_runs, case):
    _, strategy, uop, hook, tied = CASES[case]
    losses, full = _reference(tied, 2.0 if hook == "sum" else 1.0)
    tol = 2e-3 if hook == "fp16" else 1e-5  # the fp16 hook sums in half precision
    for r in range(2):
        got = ember_runs[r][case]
        np.testing.assert_allclose(got["losses"], losses[r], rtol=tol)
        assert got["full"].keys() == full.keys()
        for k in full:
            np.testing.assert_allclose(got["full"][k], full[k], rtol=tol, atol=tol, err_msg=k)
    if tied:  # still one weight after the steps
        np.testing.assert_array_equal(ember_runs[0][case]["full"]["emb.weight"],
                                      ember_runs[0][case]["full"]["out.weight"])


@needs_mpi
@pytest.mark.parametrize("case", W.TORCH_CASES)
def test_fsdp1_extra_equals_torch_gloo(ember_runs, torch_runs, case):
    for r in range(2):
        e, t = ember_runs[r][case], torch_runs[r][case]
        assert e["names"] == t["names"]
        np.testing.assert_allclose(e["losses"], t["losses"], rtol=1e-5)
        assert e["full"].keys() == t["full"].keys()
        for k in e["full"]:
            np.testing.assert_allclose(e["full"][k], t["full"][k], rtol=1e-5, atol=1e-6,
                                       err_msg=k)


def test_default_state_splits_the_division_as_torch():
    pytest.importorskip("torch")
    from torch.distributed.algorithms._comm_hooks.default_hooks import DefaultState

    for size in (1, 2, 3, 4, 6, 8, 12, 16, 64):
        assert dh.DefaultState._get_gradient_predivide_factor(size) == \
            DefaultState._get_gradient_predivide_factor(size)


# -- a world of one --------------------------------------------------------------------------------

@pytest.fixture
def world1():
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0,
                            world_size=1)
    yield
    dist.destroy_process_group()


def test_register_comm_hook_twice_raises(world1):
    m = FSDP(W.model(ember, False))
    m.register_comm_hook(dh.DefaultState(dist.group.WORLD), dh.allreduce_hook)
    with pytest.raises(AssertionError, match="already registered"):
        m.register_comm_hook(dh.DefaultState(dist.group.WORLD), dh.allreduce_hook)


def test_register_comm_hook_on_a_non_root_raises(world1):
    net = W.model(ember, False)
    net.mid = FSDP(net.mid)
    m = FSDP(net)
    with pytest.raises(AssertionError, match="root"):
        m.mid.register_comm_hook(None, dh.allreduce_hook)


def test_comm_hook_replaces_the_reduction(world1):
    calls = []

    def hook(state, grad):
        calls.append(state)
        grad.mul_(3.0)

    m = FSDP(W.model(ember, False), use_orig_params=True)
    m.register_comm_hook("s", hook)
    m(ember.ones(2, 4)).sum().backward()
    ref = W.model(ember, False)
    ref(ember.ones(2, 4)).sum().backward()
    assert calls == ["s"] * 4  # one call per parameter (each its own flat tensor)
    got = {n.replace("_fsdp_wrapped_module.", ""): p.grad for n, p in m.named_parameters()}
    for n, p in ref.named_parameters():
        np.testing.assert_allclose(got[n].numpy(), 3.0 * p.grad.numpy(), rtol=1e-6)


# what PyTorch 2.13 (gloo, world size 1, device_id=cpu) gives for the tied model
_TORCH_TIED_NAMES = {False: ["_fsdp_wrapped_module._flat_param"],
                     True: ["_fsdp_wrapped_module.emb.weight", "_fsdp_wrapped_module.mid.weight",
                            "_fsdp_wrapped_module.mid.bias"]}


@pytest.mark.parametrize("uop", [False, True])
def test_tied_weight_names_as_torch(world1, uop):
    m = FSDP(W.model(ember, True), use_orig_params=uop)
    assert [n for n, _ in m.named_parameters()] == _TORCH_TIED_NAMES[uop]
    assert list(m.state_dict()) == ["emb.weight", "mid.weight", "mid.bias", "out.weight"]
    opt = ember.optim.Adam(m.parameters(), lr=0.1)
    m(ember.ones(2, 4)).sum().backward()
    opt.step()
    assert sorted(FSDP.optim_state_dict(m, opt)["state"]) == ["emb.weight", "mid.bias",
                                                              "mid.weight"]
    sd = m.state_dict()
    np.testing.assert_array_equal(sd["emb.weight"].numpy(), sd["out.weight"].numpy())


# -- rekey_optim_state_dict ------------------------------------------------------------------------

def _trained(fw, grouped):
    net = W.model(fw, False)
    if grouped:  # groups listing the parameters in another order than the model
        opt = fw.optim.Adam([{"params": [net.out.weight, net.mid.bias]},
                             {"params": [net.emb.weight, net.mid.weight], "lr": 0.5}])
    else:
        opt = fw.optim.Adam(net.parameters(), lr=0.1)
    net(fw.ones(2, 4)).sum().backward()
    opt.step()
    return net, opt


def _keys(osd):
    return list(osd["state"]), [g["params"] for g in osd["param_groups"]]


@pytest.mark.parametrize("grouped", [False, True])
@pytest.mark.parametrize("pass_optim", [False, True])
def test_rekey_optim_state_dict_matches_torch(grouped, pass_optim):
    torch = pytest.importorskip("torch")
    from torch.distributed.fsdp import (FullyShardedDataParallel as TFSDP,
                                        OptimStateKeyType as TKey)

    out = []
    for fw, F, K in ((ember, FSDP, OptimStateKeyType), (torch, TFSDP, TKey)):
        net, opt = _trained(fw, grouped)
        extra = {"optim": opt} if pass_optim else {}
        by_name = F.rekey_optim_state_dict(opt.state_dict(), K.PARAM_NAME, net, **extra)
        by_id = F.rekey_optim_state_dict(by_name, K.PARAM_ID, net, **extra)
        same = F.rekey_optim_state_dict(by_id, K.PARAM_ID, net, **extra)
        exp_avg = {k: v["exp_avg"].numpy().copy() for k, v in by_name["state"].items()}
        out.append((_keys(by_name), _keys(by_id), same is by_id, exp_avg))
    assert out[0][:3] == out[1][:3]
    for k in out[1][3]:
        np.testing.assert_allclose(out[0][3][k], out[1][3][k], rtol=1e-6)


def test_rekey_loads_into_a_plain_optimizer(world1):
    m = FSDP(W.model(ember, False))
    opt = ember.optim.Adam(m.parameters(), lr=0.1)
    m(ember.ones(2, 4)).sum().backward()
    opt.step()
    full = FSDP.full_optim_state_dict(m, opt)
    net, plain = _trained(ember, False)
    plain.load_state_dict(FSDP.rekey_optim_state_dict(full, OptimStateKeyType.PARAM_ID, net))
    for name, p in net.named_parameters():
        np.testing.assert_allclose(plain.state[p]["exp_avg"].numpy(),
                                   full["state"][name]["exp_avg"].numpy(), rtol=1e-6)


def test_rekey_by_name_of_a_flat_parameter_raises(world1):
    m = FSDP(W.model(ember, False))
    opt = ember.optim.Adam(m.parameters(), lr=0.1)
    m(ember.ones(2, 4)).sum().backward()
    opt.step()
    with pytest.raises(RuntimeError, match="only map to one parameter name"):
        FSDP.rekey_optim_state_dict(opt.state_dict(), OptimStateKeyType.PARAM_NAME, m)
