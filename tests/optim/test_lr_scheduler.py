"""Learning-rate schedules against PyTorch: identical lr trajectories and state_dicts."""

import math

import numpy as np
import pytest

import ember
from tests.conftest import HAS_TORCH

pytestmark = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")


def _opt(mod, name="SGD", **kw):
    p = mod.nn.Parameter(mod.zeros(2))
    q = mod.nn.Parameter(mod.zeros(2))
    defaults = {"lr": 0.1, "momentum": 0.9} if name == "SGD" else {"lr": 0.1}
    defaults.update(kw)
    return getattr(mod.optim, name)([{"params": [p]}, {"params": [q], "lr": 0.05}],
                                    **defaults)


def _trajectory(mod, make, steps=40, metric=None):
    opt = _opt(mod)
    sched = make(mod, opt)
    lrs = []
    for i in range(steps):
        opt.step()
        if metric is not None:
            sched.step(metric(i))
        else:
            sched.step()
        lrs.append([g["lr"] for g in opt.param_groups] + [g.get("momentum", 0)
                                                          for g in opt.param_groups])
    return np.array(lrs), sched


S = "optim.lr_scheduler"
CASES = {
    "LambdaLR": lambda m, o: m.optim.lr_scheduler.LambdaLR(o, lambda e: 0.95 ** e),
    "MultiplicativeLR": lambda m, o: m.optim.lr_scheduler.MultiplicativeLR(o, lambda e: 0.9),
    "StepLR": lambda m, o: m.optim.lr_scheduler.StepLR(o, 7, gamma=0.5),
    "MultiStepLR": lambda m, o: m.optim.lr_scheduler.MultiStepLR(o, [3, 10, 10, 25]),
    "ConstantLR": lambda m, o: m.optim.lr_scheduler.ConstantLR(o, 0.3, 6),
    "LinearLR": lambda m, o: m.optim.lr_scheduler.LinearLR(o, 0.2, 0.9, 12),
    "ExponentialLR": lambda m, o: m.optim.lr_scheduler.ExponentialLR(o, 0.93),
    "PolynomialLR": lambda m, o: m.optim.lr_scheduler.PolynomialLR(o, 20, 2.0),
    "CosineAnnealingLR": lambda m, o: m.optim.lr_scheduler.CosineAnnealingLR(o, 9, 0.001),
    "CosineAnnealingWarmRestarts": lambda m, o: m.optim.lr_scheduler.
    CosineAnnealingWarmRestarts(o, 5, 2, 0.001),
    "CyclicLR": lambda m, o: m.optim.lr_scheduler.CyclicLR(o, 0.01, 0.1, 4, 6,
                                                           mode="triangular2"),
    "CyclicLR-exp": lambda m, o: m.optim.lr_scheduler.CyclicLR(o, [0.01, 0.02], 0.1, 5,
                                                               mode="exp_range", gamma=0.97),
    "OneCycleLR": lambda m, o: m.optim.lr_scheduler.OneCycleLR(o, 0.5, total_steps=41),
    "OneCycleLR-3": lambda m, o: m.optim.lr_scheduler.OneCycleLR(
        o, [0.5, 0.2], total_steps=41, three_phase=True, anneal_strategy="linear"),
    "SequentialLR": lambda m, o: m.optim.lr_scheduler.SequentialLR(
        o, [m.optim.lr_scheduler.LinearLR(o, 0.1, 1.0, 5),
            m.optim.lr_scheduler.ExponentialLR(o, 0.9)], [5]),
    "ChainedScheduler": lambda m, o: m.optim.lr_scheduler.ChainedScheduler(
        [m.optim.lr_scheduler.ConstantLR(o, 0.5, 4),
         m.optim.lr_scheduler.ExponentialLR(o, 0.95)]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_schedule_matches_torch(name):
    import torch

    e, es = _trajectory(ember, CASES[name])
    t, ts = _trajectory(torch, CASES[name])
    assert np.allclose(e, t, rtol=1e-10, atol=1e-12), name
    assert np.allclose(es.get_last_lr(), ts.get_last_lr())


def test_reduce_on_plateau_matches_torch():
    import torch

    metric = lambda i: 1.0 if i < 5 else 1.0 + 0.01 * (i % 3)  # noqa: E731
    make = lambda m, o: m.optim.lr_scheduler.ReduceLROnPlateau(  # noqa: E731
        o, patience=2, cooldown=1, min_lr=[0.001, 0.002])
    e, _ = _trajectory(ember, make, metric=metric)
    t, _ = _trajectory(torch, make, metric=metric)
    assert np.allclose(e, t)


def test_scheduler_state_dict_round_trip():
    opt = _opt(ember)
    s = ember.optim.lr_scheduler.StepLR(opt, 3)
    for _ in range(5):
        opt.step()
        s.step()
    sd = s.state_dict()
    assert "optimizer" not in sd and sd["last_epoch"] == 5
    opt2 = _opt(ember)
    s2 = ember.optim.lr_scheduler.StepLR(opt2, 3)
    s2.load_state_dict(sd)
    assert s2.last_epoch == 5


def test_swa_averaged_model_and_swalr():
    model = ember.nn.Linear(2, 1)
    swa = ember.optim.swa_utils.AveragedModel(model)
    weights = []
    for k in range(3):
        with ember.no_grad():
            model.weight.fill_(float(k))
        swa.update_parameters(model)
        weights.append(float(k))
    assert math.isclose(swa.module.weight[0, 0].item(), sum(weights) / 3)
    assert swa.n_averaged.item() == 3
    ema = ember.optim.swa_utils.AveragedModel(
        model, multi_avg_fn=ember.optim.swa_utils.get_ema_multi_avg_fn(0.5))
    with ember.no_grad():
        model.weight.fill_(4.0)
    ema.update_parameters(model)
    ema.update_parameters(model)
    assert math.isclose(ema.module.weight[0, 0].item(), 4.0)
    opt = ember.optim.SGD(model.parameters(), lr=1.0)
    sched = ember.optim.swa_utils.SWALR(opt, swa_lr=0.1, anneal_epochs=3)
    for _ in range(5):
        opt.step()
        sched.step()
    assert math.isclose(opt.param_groups[0]["lr"], 0.1)


def test_swalr_matches_torch():
    import torch

    make = lambda m, o: m.optim.swa_utils.SWALR(o, swa_lr=0.01, anneal_epochs=5)  # noqa: E731
    e, _ = _trajectory(ember, make, steps=10)
    t, _ = _trajectory(torch, make, steps=10)
    assert np.allclose(e, t)


def test_update_bn_recomputes_running_stats():
    model = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.BatchNorm1d(4))
    data = [ember.randn(8, 3) for _ in range(4)]
    ember.optim.swa_utils.update_bn(data, model)
    bn = model[1]
    with ember.no_grad():
        feats = model[0](ember.cat(data))
    assert np.allclose(bn.running_mean.numpy(), feats.mean(0).numpy(), atol=1e-5)
