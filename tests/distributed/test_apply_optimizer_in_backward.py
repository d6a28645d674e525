"""distributed.optim's optimizer-in-backward: the same parameters as stepping the same
per-parameter optimizers after backward (importing torch's module here costs seconds of
TorchScript compilation, so the reference is ember's own ordinary loop, whose optimizers
are compared with torch's in tests/optim)."""

import numpy as np

import ember
from ember.distributed.optim.apply_optimizer_in_backward import (
    _apply_optimizer_in_backward, _get_in_backward_optimizers)


def _model():
    model = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.Tanh(), ember.nn.Linear(4, 1))
    with ember.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(ember.tensor(np.cos(np.arange(p.numel()) + i).reshape(tuple(p.shape)),
                                 dtype=ember.float32))
    return model


X = ember.tensor(np.sin(np.arange(15.0)).reshape(5, 3), dtype=ember.float32)
SGD, ADAM = {"lr": 0.1, "momentum": 0.9}, {"lr": 0.01}


def test_optimizer_in_backward_equals_stepping_after_backward():
    model = _model()
    first, *rest = list(model.parameters())
    _apply_optimizer_in_backward(ember.optim.SGD, [first], SGD)
    _apply_optimizer_in_backward(ember.optim.Adam, rest, ADAM)
    for _ in range(3):
        model(X).pow(2).mean().backward()

    ref = _model()
    first_r, *rest_r = list(ref.parameters())
    opts = [ember.optim.SGD([first_r], **SGD)] + [ember.optim.Adam([p], **ADAM) for p in rest_r]
    for _ in range(3):
        ref(X).pow(2).mean().backward()
        for o in opts:
            o.step()
            o.zero_grad()
    for a, b in zip(model.parameters(), ref.parameters()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6)
        assert a.grad is None
    assert len(_get_in_backward_optimizers(model)) == 4


def test_optimizer_in_backward_without_hook_leaves_grad():
    lin = ember.nn.Linear(2, 1)
    _apply_optimizer_in_backward(ember.optim.SGD, lin.parameters(), {"lr": 0.1},
                                 register_hook=False)
    lin(ember.ones(1, 2)).sum().backward()
    assert lin.weight.grad is not None and len(_get_in_backward_optimizers(lin)) == 2


def test_optimizer_in_backward_docstring_examples_pass():
    import doctest

    import ember.distributed.optim.apply_optimizer_in_backward as mod

    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for t in doctest.DocTestFinder().find(mod):
        t.globs.setdefault("ember", ember)
        assert not runner.run(t, out=lambda s: None).failed, t.name
