"""Adafactor and Muon against PyTorch: trajectories, state, checkpoints, argument errors."""

import copy

import numpy as np
import pytest

import ember

try:
    import torch

    HAS_TORCH = True
except ImportError:
    HAS_TORCH = False

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")


def _params(mod, shapes, seed=0):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    x = rng.standard_normal((4, shapes[0][0])).astype(np.float32)
    return [mod.nn.Parameter(mod.from_numpy(a)) for a in arrays], mod.from_numpy(x)


def _loss(params, x):
    h = x @ params[0]
    if len(params) > 1:
        h = h + params[1]
    return (h.tanh() ** 2).sum()


def _run(mod, name, kwargs, shapes, steps=6):
    params, x = _params(mod, shapes)
    opt = getattr(mod.optim, name)(params, **kwargs)
    for _ in range(steps):
        opt.zero_grad()
        _loss(params, x).backward()
        opt.step()
    return [p.detach().numpy().copy() for p in params], opt


ADAFACTOR_CASES = [
    {},
    {"lr": 0.05, "weight_decay": 0.1},
    {"maximize": True, "eps": (1e-30, 1e-3), "d": 2.0, "beta2_decay": -0.5},
]


@needs_torch
@pytest.mark.parametrize("kwargs", ADAFACTOR_CASES)
def test_adafactor_trajectory_matches_torch(kwargs):
    shapes = [(5, 3), (3,)]
    ours, eopt = _run(ember, "Adafactor", kwargs, shapes)
    theirs, topt = _run(torch, "Adafactor", kwargs, shapes)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@needs_torch
def test_adafactor_state_matches_torch():
    _, eopt = _run(ember, "Adafactor", {}, [(5, 3), (3,)], steps=2)
    _, topt = _run(torch, "Adafactor", {}, [(5, 3), (3,)], steps=2)
    esd, tsd = eopt.state_dict(), topt.state_dict()
    assert list(esd["param_groups"][0]) == list(tsd["param_groups"][0])
    for k in tsd["state"]:
        assert set(esd["state"][k]) == set(tsd["state"][k])
        for name, value in tsd["state"][k].items():
            np.testing.assert_allclose(esd["state"][k][name].numpy(), value.numpy(),
                                       rtol=1e-5, atol=1e-7)
            assert tuple(esd["state"][k][name].shape) == tuple(value.shape)


@needs_torch
def test_adafactor_rank3_factors_last_two_dims():
    p = ember.nn.Parameter(ember.ones(2, 3, 4))
    opt = ember.optim.Adafactor([p])
    (p * p).sum().backward()
    opt.step()
    assert tuple(opt.state[p]["row_var"].shape) == (2, 3, 1)
    assert tuple(opt.state[p]["col_var"].shape) == (2, 1, 4)


def _load_torch_state(tmp_path, name, kwargs, shapes):
    _, topt = _run(torch, name, kwargs, shapes, steps=3)
    path = tmp_path / "opt.pt"
    torch.save(topt.state_dict(), path)
    params, x = _params(ember, shapes)
    eopt = getattr(ember.optim, name)(params, **kwargs)
    eopt.load_state_dict(ember.load(path))
    return eopt, topt


@needs_torch
@pytest.mark.parametrize("name,kwargs,shapes", [
    ("Adafactor", {"lr": 0.02}, [(5, 3), (3,)]),
    ("Muon", {"lr": 0.02}, [(5, 3)]),
])
def test_load_torch_state_dict_restores_state(tmp_path, name, kwargs, shapes):
    eopt, topt = _load_torch_state(tmp_path, name, kwargs, shapes)
    tsd = topt.state_dict()
    esd = eopt.state_dict()
    assert esd["param_groups"][0]["lr"] == tsd["param_groups"][0]["lr"]
    for k, entries in tsd["state"].items():
        for key, value in entries.items():
            np.testing.assert_array_equal(esd["state"][k][key].numpy(), value.numpy())


@pytest.mark.parametrize("name,shapes", [("Adafactor", [(5, 3), (3,)]), ("Muon", [(5, 3)])])
def test_state_dict_round_trip_continues_identically(name, shapes):
    params, x = _params(ember, shapes)
    opt = getattr(ember.optim, name)(params, lr=0.02)
    for _ in range(2):
        opt.zero_grad()
        _loss(params, x).backward()
        opt.step()
    clones = [ember.nn.Parameter(p.detach().clone()) for p in params]
    twin = getattr(ember.optim, name)(clones, lr=0.02)
    twin.load_state_dict(copy.deepcopy(opt.state_dict()))
    for ps, o in ((params, opt), (clones, twin)):
        o.zero_grad()
        _loss(ps, x).backward()
        o.step()
    for a, b in zip(params, clones):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


@needs_torch
@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (16, 16)])
def test_muon_orthogonalize_matches_torch(shape):
    from torch.optim._muon import _zeropower_via_newtonschulz

    from ember.optim.muon import _orthogonalize

    a = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    coeffs = (3.4445, -4.775, 2.0315)
    ours = _orthogonalize(ember.from_numpy(a), coeffs, 5, 1e-7).float().numpy()
    theirs = _zeropower_via_newtonschulz(torch.from_numpy(a), coeffs, 5, 1e-7).float().numpy()
    # bfloat16 matmuls may round one ulp apart where accumulation orders differ
    np.testing.assert_allclose(ours, theirs, atol=8e-3)


@needs_torch
@pytest.mark.parametrize("kwargs", [
    {"lr": 0.02},
    {"lr": 0.02, "nesterov": False, "adjust_lr_fn": "match_rms_adamw", "weight_decay": 0.0},
])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5)])
def test_muon_trajectory_matches_torch(kwargs, shape):
    ours, _ = _run(ember, "Muon", kwargs, [shape], steps=4)
    theirs, _ = _run(torch, "Muon", kwargs, [shape], steps=4)
    # the Newton-Schulz iteration runs in bfloat16 (as torch's does): a float32 ulp in the
    # momentum can flip a bfloat16 rounding, worth lr * 2**-8 per step
    np.testing.assert_allclose(ours[0], theirs[0], atol=4 * 0.02 * 2 ** -7)


def test_muon_rejects_non_matrix_parameters():
    with pytest.raises(ValueError, match="Muon only supports 2D parameters"):
        ember.optim.Muon([ember.nn.Parameter(ember.ones(3))])


@pytest.mark.parametrize("name,kwargs,message", [
    ("Adafactor", {"lr": -1.0}, "Learning rate should be >= 0"),
    ("Adafactor", {"beta2_decay": 0.5}, "beta2_decay should be <= 0"),
    ("Adafactor", {"d": 0.5}, "Clipping threshold d should be >= 1"),
    ("Adafactor", {"eps": (-1.0, 1e-3)}, "epsilon1 should be >= 0"),
    ("Muon", {"momentum": -0.1}, "momentum should be >= 0"),
    ("Muon", {"adjust_lr_fn": "nope"}, "Adjust learning rate function nope"),
])
def test_bad_hyperparameters_raise_value_error(name, kwargs, message):
    with pytest.raises(ValueError, match=message):
        getattr(ember.optim, name)([ember.nn.Parameter(ember.ones(2, 2))], **kwargs)


@needs_torch
def test_named_parameters_give_param_names_like_torch():
    em, tm = ember.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    esd = ember.optim.Adafactor(em.named_parameters()).state_dict()
    tsd = torch.optim.Adafactor(tm.named_parameters()).state_dict()
    assert esd["param_groups"] == tsd["param_groups"]


def test_named_and_unnamed_parameters_mixed_raise_value_error():
    m = ember.nn.Linear(3, 2)
    with pytest.raises(ValueError, match="with/without names"):
        ember.optim.SGD([("weight", m.weight), m.bias], lr=0.1)
