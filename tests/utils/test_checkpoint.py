"""ember.utils.checkpoint against the unchecked run and against torch.utils.checkpoint."""


import numpy as np
import pytest

import ember
import ember.utils.checkpoint as cp

try:
    import torch
    import torch.utils.checkpoint as tcp

    HAS_TORCH = True
except ImportError:
    HAS_TORCH = False


def _net(lib, seed=0):
    lib.manual_seed(seed)
    net = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.Dropout(0.5), lib.nn.Tanh(),
                            lib.nn.Linear(8, 2))
    w = np.random.default_rng(seed)
    with lib.no_grad():
        for p in net.parameters():
            p.copy_(lib.tensor(w.standard_normal(tuple(p.shape)).astype(np.float32)))
    return net


def _grads(net, x, run):
    for p in net.parameters():
        p.grad = None
    x.grad = None
    ember.manual_seed(7)
    run(net, x).pow(2).sum().backward()
    return [p.grad.numpy().copy() for p in net.parameters()] + [x.grad.numpy().copy()]


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_grads_equal_unchecked_with_dropout(use_reentrant):
    net = _net(ember)
    x = ember.randn(3, 4, requires_grad=True)
    ref = _grads(net, x, lambda n, t: n(t))
    got = _grads(net, x, lambda n, t: cp.checkpoint(n, t, use_reentrant=use_reentrant))
    for a, b in zip(ref, got):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_sequential_grads_equal_unchecked(use_reentrant):
    net = _net(ember)
    x = ember.randn(3, 4, requires_grad=True)
    ref = _grads(net, x, lambda n, t: n(t))
    got = _grads(net, x, lambda n, t: cp.checkpoint_sequential(
        n, 2, t, use_reentrant=use_reentrant))
    for a, b in zip(ref, got):
        np.testing.assert_array_equal(a, b)


@pytest.mark.skipif(not HAS_TORCH, reason="torch not installed")
@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_grads_match_torch(use_reentrant):
    xs = np.random.default_rng(3).standard_normal((3, 4)).astype(np.float32)
    out = []
    for lib, mod in ((ember, cp), (torch, tcp)):
        lib.manual_seed(0)
        net = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.Tanh(), lib.nn.Linear(8, 2))
        w = np.random.default_rng(0)
        with lib.no_grad():
            for p in net.parameters():
                p.copy_(lib.tensor(w.standard_normal(tuple(p.shape)).astype(np.float32)))
        x = lib.tensor(xs, requires_grad=True)
        mod.checkpoint(net, x, use_reentrant=use_reentrant).pow(2).sum().backward()
        out.append([x.grad.numpy()] + [p.grad.numpy() for p in net.parameters()])
    for a, b in zip(*out):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_checkpoint_without_use_reentrant_warns_and_is_reentrant():
    x = ember.ones(2, requires_grad=True)
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed"):
        y = cp.checkpoint(lambda t: t.sin(), x)
    assert type(y.grad_fn).__name__ != "SinBackward0"


def test_checkpoint_sequential_without_use_reentrant_warns():
    with pytest.warns(UserWarning, match="checkpoint_sequential: the use_reentrant"):
        cp.checkpoint_sequential([ember.nn.Linear(2, 2)], 1, ember.ones(1, 2))


def test_checkpoint_reentrant_no_grad_inputs_warns():
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        y = cp.checkpoint(lambda t: t * 2, ember.ones(2), use_reentrant=True)
    assert not y.requires_grad


def test_checkpoint_reentrant_keyword_arguments_raise_value_error():
    with pytest.raises(ValueError, match="Unexpected keyword arguments: foo"):
        cp.checkpoint(lambda t, foo: t, ember.ones(1), use_reentrant=True, foo=1)


def test_checkpoint_reentrant_context_fn_raises_value_error():
    with pytest.raises(ValueError, match="context_fn"):
        cp.checkpoint(lambda t: t, ember.ones(1), use_reentrant=True,
                      context_fn=cp.noop_context_fn.__call__)


def test_checkpoint_non_reentrant_kwargs_and_non_tensor_outputs():
    x = ember.ones(3, requires_grad=True)

    def f(t, *, scale):
        return {"y": t * scale, "n": 3}

    out = cp.checkpoint(f, x, scale=2.0, use_reentrant=False)
    assert out["n"] == 3
    out["y"].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])


def test_checkpoint_non_reentrant_works_with_autograd_grad():
    x = ember.ones(3, requires_grad=True)
    y = cp.checkpoint(lambda t: (t * t).sin(), x, use_reentrant=False)
    (g,) = ember.autograd.grad(y.sum(), x)
    np.testing.assert_allclose(g.numpy(), (2 * np.cos(np.ones(3))), rtol=1e-6)


def test_checkpoint_non_reentrant_backward_twice_with_retain_graph():
    x = ember.ones(2, requires_grad=True)
    y = cp.checkpoint(lambda t: t.exp(), x, use_reentrant=False).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.e * np.ones(2), rtol=1e-6)


def test_checkpoint_bad_determinism_check_raises_value_error():
    with pytest.raises(ValueError, match="determinism_check"):
        cp.checkpoint(lambda t: t, ember.ones(1), use_reentrant=False, determinism_check="x")


def test_checkpoint_nondeterministic_block_raises_checkpoint_error():
    calls = []

    def f(t):
        calls.append(1)
        return (t * t).sum() if len(calls) == 1 else (t * t * t).sum()

    x = ember.ones(2, requires_grad=True)
    y = cp.checkpoint(f, x, use_reentrant=False)
    with pytest.raises(cp.CheckpointError):
        y.backward()


def test_checkpoint_under_autocast_recomputes_in_autocast():
    lin = ember.nn.Linear(3, 3)
    x = ember.ones(2, 3, requires_grad=True)
    with ember.autocast("cpu"):
        y = cp.checkpoint(lin, x, use_reentrant=True)
    assert y.dtype == ember.bfloat16
    y.float().sum().backward()
    assert lin.weight.grad.dtype == ember.float32


def test_selective_checkpoint_grads_are_right():
    from functools import partial

    calls = []
    ctx_fn = partial(cp.create_selective_checkpoint_contexts, [ember.ops.aten.exp.default])

    def f(t):
        calls.append(1)
        return t.exp().sin()

    a = ember.ones(2, requires_grad=True)
    y = cp.checkpoint(f, a, use_reentrant=False, context_fn=ctx_fn)
    y.sum().backward()
    assert len(calls) == 2
    np.testing.assert_allclose(a.grad.numpy(), np.cos(np.e) * np.e * np.ones(2), rtol=1e-5)


def test_detach_variable_keeps_requires_grad():
    x = ember.ones(2, requires_grad=True)
    (y, n) = cp.detach_variable((x * 2, 3))
    assert y.requires_grad and y.grad_fn is None and n == 3
