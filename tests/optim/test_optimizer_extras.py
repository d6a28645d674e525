"""Optimizer hooks, swap_in_optimizer_params_and_state and scheduler warnings vs PyTorch."""

import importlib
import warnings

import numpy as np
import pytest

import ember
from tests.conftest import needs_torch_2_13

try:
    import torch

    HAS_TORCH = True
except ImportError:
    HAS_TORCH = False

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")


def _hook_order(mod):
    om = importlib.import_module(mod.__name__ + ".optim.optimizer")
    log = []
    p = mod.nn.Parameter(mod.ones(2))
    opt = mod.optim.SGD([p], lr=0.1)
    opt.register_step_pre_hook(lambda o, a, k: log.append("pre"))
    opt.register_step_post_hook(lambda o, a, k: log.append("post"))
    opt.register_state_dict_pre_hook(lambda o: log.append("sd_pre"))
    opt.register_state_dict_post_hook(lambda o, sd: log.append("sd_post"))
    opt.register_load_state_dict_pre_hook(lambda o, sd: log.append("load_pre"))
    opt.register_load_state_dict_post_hook(lambda o: log.append("load_post"))
    handles = [om.register_optimizer_step_pre_hook(lambda o, a, k: log.append("global_pre")),
               om.register_optimizer_step_post_hook(lambda o, a, k: log.append("global_post"))]
    try:
        p.grad = mod.ones(2)
        opt.step()
        opt.load_state_dict(opt.state_dict())
    finally:
        for h in handles:
            h.remove()
    return log


@needs_torch
def test_optimizer_hooks_run_in_torch_order():
    assert _hook_order(ember) == _hook_order(torch)


def test_state_dict_post_hook_can_replace_the_dict():
    opt = ember.optim.SGD([ember.nn.Parameter(ember.ones(2))], lr=0.1)
    opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
    assert opt.state_dict()["extra"] == 1


def _swap_in(mod):
    w = mod.nn.Parameter(mod.ones(2))
    opt = mod.optim.SGD([w], lr=0.1, momentum=0.9)
    w.grad = mod.ones(2)
    opt.step()
    other = mod.zeros(2)
    other.grad = mod.ones(2)
    swapped = opt.state_dict()
    with mod.optim.swap_in_optimizer_params_and_state(opt, {"w": other}, swapped):
        opt.step()
    return (other.numpy().copy(), w.detach().numpy().copy(),
            opt.state[w]["momentum_buffer"].numpy().copy(), opt.param_groups[0]["params"][0]
            is w)


@needs_torch
@needs_torch_2_13
def test_swap_in_optimizer_params_and_state_matches_torch():
    ours, theirs = _swap_in(ember), _swap_in(torch)
    for a, b in zip(ours[:3], theirs[:3]):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    assert ours[3] and theirs[3]


def test_swap_in_requires_initialized_state():
    opt = ember.optim.SGD([ember.nn.Parameter(ember.ones(2))], lr=0.1)
    with pytest.raises(RuntimeError, match="requires initialized optimizer state"):
        with ember.optim.swap_in_optimizer_params_and_state(opt, {}, opt.state_dict()):
            pass


def _scheduler_warnings(mod, scheduler_first):
    p = mod.nn.Parameter(mod.zeros(2))
    opt = mod.optim.SGD([p], lr=0.1)
    sched = mod.optim.lr_scheduler.StepLR(opt, 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if scheduler_first:
            sched.step()
        opt.step()
        sched.step()
        sched.get_lr()
    return [str(w.message)[:60] for w in caught]


@needs_torch
@pytest.mark.parametrize("scheduler_first", [True, False])
def test_scheduler_warnings_match_torch(scheduler_first):
    assert _scheduler_warnings(ember, scheduler_first) == _scheduler_warnings(
        torch, scheduler_first)


@needs_torch
def test_lr_scheduler_constants_match_torch():
    assert ember.optim.lr_scheduler.EPOCH_DEPRECATION_WARNING == \
        torch.optim.lr_scheduler.EPOCH_DEPRECATION_WARNING
    assert ember.optim.lr_scheduler.inf == torch.optim.lr_scheduler.inf
