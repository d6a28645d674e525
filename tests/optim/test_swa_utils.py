"""optim.swa_utils against PyTorch: averaged weights, buffers, SWALR lrs, update_bn."""

import numpy as np
import pytest

import ember

try:
    import torch

    HAS_TORCH = True
except ImportError:
    HAS_TORCH = False

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")


def _model(mod):
    mod.manual_seed(0)
    return mod.nn.Sequential(mod.nn.Linear(3, 4), mod.nn.BatchNorm1d(4), mod.nn.ReLU(),
                             mod.nn.Linear(4, 2))


def _same_weights(em, tm):
    sd = {k: ember.from_numpy(v.detach().numpy().copy()) for k, v in tm.state_dict().items()}
    em.load_state_dict(sd)


def _average(mod, model, make_avg, steps=4):
    swa = make_avg(mod, model)
    opt = mod.optim.SGD(model.parameters(), lr=0.1)
    rng = np.random.default_rng(0)
    for _ in range(steps):
        x = mod.from_numpy(rng.standard_normal((5, 3)).astype(np.float32))
        opt.zero_grad()
        model(x).pow(2).sum().backward()
        opt.step()
        swa.update_parameters(model)
    return {k: v.detach().numpy().copy() for k, v in swa.state_dict().items()}


def _su(mod):
    return mod.optim.swa_utils


AVERAGERS = {
    "swa": lambda m, model: _su(m).AveragedModel(model),
    "swa-buffers": lambda m, model: _su(m).AveragedModel(model, use_buffers=True),
    "ema-multi": lambda m, model: _su(m).AveragedModel(
        model, multi_avg_fn=_su(m).get_ema_multi_avg_fn(0.9)),
    "ema-multi-buffers": lambda m, model: _su(m).AveragedModel(
        model, multi_avg_fn=_su(m).get_ema_multi_avg_fn(0.9), use_buffers=True),
    "swa-multi": lambda m, model: _su(m).AveragedModel(
        model, multi_avg_fn=_su(m).get_swa_multi_avg_fn()),
    "ema-avg": lambda m, model: _su(m).AveragedModel(model, avg_fn=_su(m).get_ema_avg_fn(0.8)),
    "swa-avg": lambda m, model: _su(m).AveragedModel(model, avg_fn=_su(m).get_swa_avg_fn()),
}


@needs_torch
@pytest.mark.parametrize("name", list(AVERAGERS))
def test_averaged_model_matches_torch(name):
    tm, em = _model(torch), _model(ember)
    _same_weights(em, tm)
    ours = _average(ember, em, AVERAGERS[name])
    theirs = _average(torch, tm, AVERAGERS[name])
    assert list(ours) == list(theirs)
    for k in theirs:
        np.testing.assert_allclose(ours[k], theirs[k], rtol=1e-5, atol=1e-6, err_msg=k)


def test_averaged_model_both_fns_raise_assertion_error():
    su = ember.optim.swa_utils
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
        su.AveragedModel(ember.nn.Linear(2, 2), avg_fn=su.get_swa_avg_fn(),
                         multi_avg_fn=su.get_swa_multi_avg_fn())


@pytest.mark.parametrize("factory", ["get_ema_avg_fn", "get_ema_multi_avg_fn"])
def test_ema_decay_out_of_range_raises_value_error(factory):
    with pytest.raises(ValueError, match=r"Invalid decay value 1.5"):
        getattr(ember.optim.swa_utils, factory)(1.5)


def test_averaged_model_forward_runs_the_copy():
    model = ember.nn.Linear(3, 2)
    swa = ember.optim.swa_utils.AveragedModel(model)
    x = ember.ones(4, 3)
    np.testing.assert_array_equal(swa(x).detach().numpy(), model(x).detach().numpy())


def _swalr(mod, steps=14, **kwargs):
    p = mod.nn.Parameter(mod.zeros(2))
    q = mod.nn.Parameter(mod.zeros(2))
    opt = mod.optim.SGD([{"params": [p]}, {"params": [q], "lr": 0.5}], lr=1.0)
    sched = mod.optim.swa_utils.SWALR(opt, **kwargs)
    lrs = []
    for _ in range(steps):
        opt.step()
        sched.step()
        lrs.append([g["lr"] for g in opt.param_groups])
    return np.array(lrs), sched


@needs_torch
@pytest.mark.parametrize("kwargs", [
    {"swa_lr": 0.05},
    {"swa_lr": [0.05, 0.2], "anneal_epochs": 4, "anneal_strategy": "linear"},
    {"swa_lr": 0.1, "anneal_epochs": 0},
])
def test_swalr_trajectory_matches_torch(kwargs):
    ours, esched = _swalr(ember, **kwargs)
    theirs, tsched = _swalr(torch, **kwargs)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    assert esched.get_last_lr() == pytest.approx(tsched.get_last_lr())


@pytest.mark.parametrize("kwargs,message", [
    ({"anneal_strategy": "exp"}, "anneal_strategy must be one of 'cos' or 'linear'"),
    ({"anneal_epochs": -1}, "anneal_epochs must be equal or greater than 0"),
    ({"swa_lr": [0.1, 0.2, 0.3]}, "swa_lr must have the same length"),
])
def test_swalr_bad_arguments_raise_value_error(kwargs, message):
    opt = ember.optim.SGD([ember.nn.Parameter(ember.zeros(1))], lr=1.0)
    kwargs = {"swa_lr": 0.1, **kwargs}
    with pytest.raises(ValueError, match=message):
        ember.optim.swa_utils.SWALR(opt, **kwargs)


@needs_torch
def test_update_bn_matches_torch():
    tm, em = _model(torch), _model(ember)
    _same_weights(em, tm)
    rng = np.random.default_rng(3)
    batches = [rng.standard_normal((6, 3)).astype(np.float32) for _ in range(3)]
    tm.eval()
    em.eval()
    torch.optim.swa_utils.update_bn([(torch.from_numpy(b), 0) for b in batches], tm)
    ember.optim.swa_utils.update_bn([(ember.from_numpy(b), 0) for b in batches], em)
    assert not em.training
    assert em[1].momentum == tm[1].momentum
    for key in ("running_mean", "running_var", "num_batches_tracked"):
        np.testing.assert_allclose(em[1].state_dict()[key].numpy(),
                                   tm[1].state_dict()[key].numpy(), rtol=1e-5, atol=1e-6)


def test_update_bn_without_batchnorm_is_a_no_op():
    model = ember.nn.Linear(2, 2)
    ember.optim.swa_utils.update_bn([ember.ones(1, 2)], model)
    assert model.training
