"""Regressions found by running public-style PyTorch programs (tests/compat/
test_research_repos_6.py) unchanged under ``python -m ember.compat.run``: each test is a
minimal program of our own that reproduces one failure, checked against torch where torch is
installed."""

import pytest

import ember

try:
    import torch
    HAS_TORCH = True
except ImportError:  # pragma: no cover
    torch = None
    HAS_TORCH = False

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")


# -- removing weight_norm's parametrization under no_grad leaves a buffer (locuslab TCN) --

def _removed_weight(lib, no_grad, frozen):
    conv = lib.nn.utils.parametrizations.weight_norm(lib.nn.Conv1d(2, 3, 2))
    if frozen:
        conv.requires_grad_(False)
    if no_grad:
        with lib.no_grad():
            lib.nn.utils.parametrize.remove_parametrizations(conv, "weight")
    else:
        lib.nn.utils.parametrize.remove_parametrizations(conv, "weight")
    return (type(conv.weight).__name__, conv.weight.requires_grad,
            sorted(n for n, _ in conv.named_parameters()),
            sorted(n for n, _ in conv.named_buffers()))


@pytest.mark.parametrize("no_grad", [False, True])
@pytest.mark.parametrize("frozen", [False, True])
def test_remove_multi_tensor_parametrization_follows_grad_mode(no_grad, frozen):
    got = _removed_weight(ember, no_grad, frozen)
    kept = not no_grad and not frozen
    assert got == (("Parameter", True, ["bias", "weight"], []) if kept
                   else ("Tensor", False, ["bias"], ["weight"]))
    if HAS_TORCH:
        assert got == _removed_weight(torch, no_grad, frozen)


# -- a Tensor lr steps every optimizer (optimizer-in-backward recipes, lr fill_ by schedulers) --

_OPTIMIZERS = ["SGD", "Adam", "AdamW", "NAdam", "RAdam", "Adamax", "Adagrad", "RMSprop",
               "ASGD", "Rprop", "Adadelta", "Adafactor"]


def _train_with_tensor_lr(lib, name, extra):
    lib.manual_seed(0)
    x, y = lib.randn(16, 4), lib.randn(16, 1)
    model = lib.nn.Linear(4, 1)
    opt = getattr(lib.optim, name)(model.parameters(), lr=lib.tensor(0.01), **extra)
    sched = lib.optim.lr_scheduler.StepLR(opt, 1, gamma=0.5)
    lr = opt.param_groups[0]["lr"]
    for _ in range(3):
        opt.zero_grad()
        lib.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        sched.step()
    assert opt.param_groups[0]["lr"] is lr  # the schedule writes into the same tensor
    return [p.detach().numpy().copy() for p in model.parameters()], float(lr)


@pytest.mark.parametrize("name", _OPTIMIZERS)
@pytest.mark.parametrize("extra", [{}, {"maximize": True}], ids=["plain", "maximize"])
def test_tensor_lr_steps_as_a_float_would(name, extra):
    import numpy as np

    got, lr = _train_with_tensor_lr(ember, name, extra)
    assert lr == pytest.approx(0.01 / 8)
    ember.manual_seed(0)
    x, y = ember.randn(16, 4), ember.randn(16, 1)
    model = ember.nn.Linear(4, 1)
    opt = getattr(ember.optim, name)(model.parameters(), lr=0.01, **extra)
    sched = ember.optim.lr_scheduler.StepLR(opt, 1, gamma=0.5)
    for _ in range(3):
        opt.zero_grad()
        ember.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        sched.step()
    for g, w in zip(got, model.parameters()):
        np.testing.assert_allclose(g, w.detach().numpy(), rtol=1e-6, atol=1e-7)
    if HAS_TORCH:
        want, _ = _train_with_tensor_lr(torch, name, extra)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("cls", ["Adam", "AdamW"])
def test_tensor_lr_refusals_match_torch(cls):
    p = [ember.nn.Parameter(ember.ones(2))]
    with pytest.raises(ValueError, match="lr as a Tensor is not supported for "
                                         "capturable=False and foreach=True"):
        getattr(ember.optim, cls)(p, lr=ember.tensor(0.1), foreach=True)
    with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
        getattr(ember.optim, cls)(p, lr=ember.tensor([0.1, 0.2]))
