"""Every optimizer against PyTorch: same start, same gradients, same trajectory."""

import numpy as np
import pytest

import ember
from tests.conftest import HAS_TORCH

pytestmark = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")

CASES = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.3, "maximize": True}),
    ("Adam", {"lr": 0.01}),
    ("Adam", {"lr": 0.01, "amsgrad": True, "weight_decay": 0.1}),
    ("AdamW", {"lr": 0.01}),
    ("Adamax", {"lr": 0.01, "weight_decay": 0.1}),
    ("NAdam", {"lr": 0.01}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("RAdam", {"lr": 0.01}),
    ("RAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("RMSprop", {"lr": 0.01}),
    ("RMSprop", {"lr": 0.01, "centered": True, "momentum": 0.5, "weight_decay": 0.1}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.01, "initial_accumulator_value": 0.1}),
    ("Adadelta", {"lr": 1.0, "weight_decay": 0.1}),
    ("ASGD", {"lr": 0.05, "t0": 3}),
    ("Rprop", {"lr": 0.05}),
]


def _run(mod, name, kwargs, steps=8, device="cpu"):
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal((3, 4))
    b0 = rng.standard_normal(4)
    target = rng.standard_normal((3, 4))
    if mod.__name__ == "torch":
        w = mod.nn.Parameter(mod.from_numpy(w0.copy()))
        b = mod.nn.Parameter(mod.from_numpy(b0.copy()))
        t = mod.from_numpy(target)
    else:
        w = ember.nn.Parameter(ember.from_numpy(w0.copy()).to(device))
        b = ember.nn.Parameter(ember.from_numpy(b0.copy()).to(device))
        t = ember.from_numpy(target).to(device)
    opt = getattr(mod.optim, name)([w, b], **kwargs)
    for _ in range(steps):
        opt.zero_grad()
        loss = (((w * b - t) ** 2).sum() + (w.sin() * b).sum())
        loss.backward()
        opt.step()
    return w.detach().cpu().numpy().copy(), b.detach().cpu().numpy().copy(), opt


@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{i}" for i, (n, _) in
                                                    enumerate(CASES)])
def test_trajectory_matches_torch(name, kwargs, device):
    import torch

    ew, eb, eopt = _run(ember, name, kwargs, device=device)
    tw, tb, topt = _run(torch, name, kwargs)
    assert np.allclose(ew, tw, rtol=1e-6, atol=1e-8), name
    assert np.allclose(eb, tb, rtol=1e-6, atol=1e-8), name
    esd, tsd = eopt.state_dict(), topt.state_dict()
    assert esd["param_groups"][0].keys() == tsd["param_groups"][0].keys()
    assert esd["state"].keys() == tsd["state"].keys()
    for k in tsd["state"]:
        assert set(esd["state"][k]) == set(tsd["state"][k]), (name, k)
        for key, v in esd["state"][k].items():
            # the step count may stay on the CPU (as torch's does, unless capturable)
            if isinstance(v, ember.Tensor) and v.dim():
                assert v.device.type == ember.device(device).type, (name, key, v.device)


def test_lbfgs_with_strong_wolfe_matches_torch():
    import torch

    def run(mod):
        x = mod.nn.Parameter(mod.tensor([-1.5, 2.0], dtype=mod.float64))
        opt = mod.optim.LBFGS([x], lr=1, max_iter=30, line_search_fn="strong_wolfe")

        def closure():
            opt.zero_grad()
            loss = (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2  # Rosenbrock
            loss.backward()
            return loss

        for _ in range(3):
            opt.step(closure)
        return x.detach().numpy().copy(), opt.state[x]["func_evals"]

    ex, ev = run(ember)
    tx, tv = run(torch)
    assert np.allclose(ex, tx, atol=1e-8) and ev == tv
    assert np.allclose(ex, [1.0, 1.0], atol=1e-5)


def test_lbfgs_without_line_search_matches_torch():
    import torch

    def run(mod):
        x = mod.nn.Parameter(mod.tensor([0.5, -0.3, 2.0], dtype=mod.float64))
        opt = mod.optim.LBFGS([x], lr=0.5, max_iter=10, history_size=3)

        def closure():
            opt.zero_grad()
            loss = ((x - 1) ** 4).sum() + (x ** 2).sum()
            loss.backward()
            return loss

        opt.step(closure)
        return x.detach().numpy().copy()

    assert np.allclose(run(ember), run(torch), atol=1e-10)


def test_state_dict_round_trip_through_torch_format():
    import torch

    _, _, eopt = _run(ember, "Adam", {"lr": 0.01}, steps=3)
    _, _, topt = _run(torch, "Adam", {"lr": 0.01}, steps=3)
    sd = eopt.state_dict()
    w = ember.nn.Parameter(ember.zeros(3, 4, dtype=ember.float64))
    b = ember.nn.Parameter(ember.zeros(4, dtype=ember.float64))
    fresh = ember.optim.Adam([w, b], lr=0.5)
    fresh.load_state_dict(sd)
    assert fresh.param_groups[0]["lr"] == 0.01
    assert np.allclose(fresh.state[w]["exp_avg"].numpy(),
                       topt.state_dict()["state"][0]["exp_avg"].numpy())
    assert fresh.state[w]["step"].item() == 3


def test_hyperparameter_errors():
    p = [ember.nn.Parameter(ember.ones(2))]
    with pytest.raises(ValueError, match="Invalid learning rate"):
        ember.optim.SGD(p, lr=-1)
    with pytest.raises(ValueError, match="Invalid beta parameter"):
        ember.optim.Adam(p, betas=(1.0, 0.9))
    with pytest.raises(ValueError, match="Nesterov"):
        ember.optim.SGD(p, lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="empty parameter list"):
        ember.optim.SGD([], lr=0.1)
    with pytest.raises(TypeError):
        ember.optim.SGD(ember.ones(2), lr=0.1)
    with pytest.raises(ValueError, match="more than one parameter group"):
        ember.optim.SGD([{"params": p}, {"params": p}], lr=0.1)


def test_param_groups_and_hooks():
    a, b = ember.nn.Parameter(ember.ones(2)), ember.nn.Parameter(ember.ones(2))
    opt = ember.optim.SGD([{"params": [a]}, {"params": [b], "lr": 1.0}], lr=0.1)
    calls = []
    opt.register_step_pre_hook(lambda o, args, kw: calls.append("pre"))
    opt.register_step_post_hook(lambda o, args, kw: calls.append("post"))
    a.grad, b.grad = ember.ones(2), ember.ones(2)
    opt.step()
    assert np.allclose(a.tolist(), [0.9, 0.9]) and b.tolist() == [0.0, 0.0]
    assert calls == ["pre", "post"]
    opt.add_param_group({"params": [ember.nn.Parameter(ember.ones(1))]})
    assert opt.param_groups[2]["lr"] == 0.1
    opt.zero_grad()
    assert a.grad is None


def test_sparse_adam_updates_only_touched_rows():
    emb = ember.nn.Embedding(5, 2, sparse=True)  # (dense gradients are refused, as in torch)
    before = emb.weight.detach().clone()
    opt = ember.optim.SparseAdam(emb.parameters(), lr=0.1)
    emb(ember.tensor([1, 3])).sum().backward()
    opt.step()
    changed = (emb.weight.detach() != before).any(1).tolist()
    assert changed == [False, True, False, True, False]
