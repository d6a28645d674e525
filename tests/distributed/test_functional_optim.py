"""distributed.optim's functional optimizers: stepping with gradients passed in equals the
ordinary optimizer stepping from ``.grad`` (whose updates tests/optim compares with torch;
importing torch's functional optimizers costs seconds of TorchScript compilation)."""

import numpy as np
import pytest

import ember
from ember.distributed.optim import as_functional_optim, utils

NAMES = ["SGD", "Adam", "AdamW", "Adagrad", "Adadelta", "Adamax", "RMSprop", "Rprop"]
KWARGS = {"SGD": {"lr": 0.1, "momentum": 0.9}, "Adam": {"lr": 0.01}, "AdamW": {"lr": 0.01},
          "Adagrad": {"lr": 0.1}, "Adadelta": {"lr": 1.0}, "Adamax": {"lr": 0.01},
          "RMSprop": {"lr": 0.01}, "Rprop": {"lr": 0.01}}


def _grads(step):
    return [ember.tensor(np.cos(np.arange(3.0) + step), dtype=ember.float32),
            ember.tensor(np.sin(np.arange(2.0) * step), dtype=ember.float32)]


def _params():
    return [ember.tensor([1.0, -2.0, 0.5]), ember.tensor([0.25, 3.0])]


@pytest.mark.parametrize("name", NAMES)
def test_functional_optimizer_equals_ordinary(name):
    cls = getattr(ember.optim, name)
    ours = _params()
    fopt = utils.functional_optim_map[cls](ours, **KWARGS[name])
    ref = [p.clone().requires_grad_() for p in _params()]
    opt = cls(ref, **KWARGS[name])
    for step in range(3):
        fopt.step(_grads(step))
        for p, g in zip(ref, _grads(step)):
            p.grad = g
        opt.step()
    for a, b in zip(ours, ref):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-6)
        assert a.grad is None


def test_as_functional_optim_step_param_equals_step():
    one = as_functional_optim(ember.optim.Adam, lr=0.01)
    a = _params()
    both = utils.functional_optim_map[ember.optim.Adam](b := _params(), lr=0.01)
    for step in range(3):
        for p, g in zip(a, _grads(step)):
            one.step_param(p, g)
        both.step(_grads(step))
    for x, y in zip(a, b):
        np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-6)
    assert len(one.state) == 2


def test_functional_optimizer_errors():
    with pytest.raises(ValueError, match="empty parameter list"):
        utils.functional_optim_map[ember.optim.SGD]([])
    with pytest.raises(ValueError, match="does not equal to the size of the parameters"):
        utils.functional_optim_map[ember.optim.SGD](_params()).step([])
    with pytest.raises(ValueError, match="does not have a functional counterpart"):
        as_functional_optim(ember.optim.LBFGS)


def test_functional_optimizer_none_gradient_leaves_param():
    p = _params()
    utils.functional_optim_map[ember.optim.SGD](p, lr=0.1).step([None, _grads(1)[1]])
    np.testing.assert_array_equal(p[0].numpy(), _params()[0].numpy())


def test_functional_optim_docstring_examples_pass():
    import doctest

    import ember.distributed.optim as o

    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for mod in (o.utils, o._functional, o.functional_sgd, o.functional_adam):
        for t in doctest.DocTestFinder().find(mod):
            t.globs.setdefault("ember", ember)
            assert not runner.run(t, out=lambda s: None).failed, t.name
