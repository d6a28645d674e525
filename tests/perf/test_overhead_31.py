"""Session 31 (issue 22): the Python overhead of a small training step, each shortcut
against the plain path it stands in for (bit for bit), and against PyTorch where installed.

- NOTE [ Small linear gradients ] and NOTE [ Small relu gradients ] in ember/_ops/nn_ops.py
- NOTE [ Flat step per-step cost ] in ember/optim/_flat.py
- NOTE [ Resetting gradients in place ] in ember/autograd/_engine.py
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember._ops import nn_ops


def _rand(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# ------------------------------------------------------------------------------------------------
# linear's gradients on the arrays


def _linear_grads(x, w, b, g, monkeypatch=None, plain=False):
    """Gradients of ``linear(x, w, b)`` for output gradient ``g`` (arrays), by the shortcut
    or (``plain``) by the op-by-op formula."""
    if plain:
        monkeypatch.setattr(nn_ops, "_small_linear_vjp", lambda *a: None)
    ex = ember.tensor(x, requires_grad=True)
    ew = ember.tensor(w, requires_grad=True)
    eb = None if b is None else ember.tensor(b, requires_grad=True)
    ember.nn.functional.linear(ex, ew, eb).backward(ember.tensor(g))
    if plain:
        monkeypatch.undo()
    return [None if t is None else t.grad.numpy() for t in (ex, ew, eb)]


_SHAPES = [(1, 64, 64), (3, 5, 7), (8, 16, 4), (1, 1, 1)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("rows,out_f,in_f", _SHAPES)
def test_small_linear_gradients_are_the_formulas_bits(monkeypatch, rows, out_f, in_f, dtype):
    x = _rand(rows, in_f, dtype=dtype)
    w = _rand(out_f, in_f, seed=1, dtype=dtype)
    b = _rand(out_f, seed=2, dtype=dtype)
    g = _rand(rows, out_f, seed=3, dtype=dtype)
    fast = _linear_grads(x, w, b, g)
    plain = _linear_grads(x, w, b, g, monkeypatch, plain=True)
    for f, p in zip(fast, plain):
        assert f.dtype == p.dtype and f.shape == p.shape
        np.testing.assert_array_equal(f, p)
        assert f.flags.c_contiguous == p.flags.c_contiguous


def test_small_linear_gradients_take_the_shortcut_only_without_a_graph(monkeypatch):
    calls = []
    real = nn_ops._small_linear_vjp

    def spy(*args):
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(nn_ops, "_small_linear_vjp", spy)
    x = ember.randn(2, 3, requires_grad=True)
    w = ember.randn(4, 3, requires_grad=True)
    ember.nn.functional.linear(x, w).sum().backward()
    assert len(calls) == 1
    # under create_graph the gradients are recorded: the formula runs op by op
    y = ember.nn.functional.linear(x, w)
    (gx,) = ember.autograd.grad(y.sum(), x, create_graph=True)
    assert len(calls) == 1 and gx.requires_grad


def test_small_linear_gradients_match_torch_with_needs():
    torch = pytest.importorskip("torch")
    x, w, b = _rand(2, 6), _rand(5, 6, seed=1), _rand(5, seed=2)
    for need in [(True, True, True), (False, True, True), (True, False, False),
                 (True, True, False)]:
        ts = [torch.tensor(a, requires_grad=r) for a, r in zip((x, w, b), need)]
        es = [ember.tensor(a, requires_grad=r) for a, r in zip((x, w, b), need)]
        (torch.nn.functional.linear(*ts) ** 2).sum().backward()
        (ember.nn.functional.linear(*es) ** 2).sum().backward()
        for t, e in zip(ts, es):
            assert (t.grad is None) == (e.grad is None)
            if t.grad is not None:
                np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-5,
                                           atol=1e-5)


def test_linear_gradients_of_strided_and_3d_input_match_torch():
    torch = pytest.importorskip("torch")
    x, w = _rand(6, 4), _rand(3, 6, seed=1)
    x3 = _rand(2, 3, 6, seed=2)
    for make in (lambda T, a: T.tensor(a).t(), lambda T, a: T.tensor(a)[:, ::2]):
        tx, ex = make(torch, x), make(ember, x)
        wide = tx.shape[1]
        tw = torch.tensor(w[:, :wide], requires_grad=True)
        ew = ember.tensor(w[:, :wide], requires_grad=True)
        tx.requires_grad_(True)
        ex.requires_grad_(True)
        torch.nn.functional.linear(tx, tw).pow(2).sum().backward()
        ember.nn.functional.linear(ex, ew).pow(2).sum().backward()
        np.testing.assert_allclose(ew.grad.numpy(), tw.grad.numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-5)
    tx, ex = torch.tensor(x3, requires_grad=True), ember.tensor(x3, requires_grad=True)
    tw, ew = torch.tensor(w, requires_grad=True), ember.tensor(w, requires_grad=True)
    torch.nn.functional.linear(tx, tw).pow(2).sum().backward()
    ember.nn.functional.linear(ex, ew).pow(2).sum().backward()
    np.testing.assert_allclose(ew.grad.numpy(), tw.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_linear_double_backward_matches_torch():
    torch = pytest.importorskip("torch")
    x, w, b = _rand(2, 3), _rand(4, 3, seed=1), _rand(4, seed=2)
    out = []
    for T in (torch, ember):
        tx, tw, tb = (T.tensor(a, requires_grad=True) for a in (x, w, b))
        y = T.nn.functional.linear(tx, tw, tb).tanh().sum()
        gx, gw = T.autograd.grad(y, (tx, tw), create_graph=True)
        (gx.pow(2).sum() + gw.pow(2).sum()).backward()
        out.append([t.grad.detach().numpy() for t in (tx, tw, tb)])
    for e, t in zip(out[1], out[0]):
        np.testing.assert_allclose(e, t, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------------------------
# relu's small gradients


def _special(n, dtype, seed=0):
    a = _rand(n, seed=seed, dtype=dtype)
    specials = np.array([0.0, -0.0, np.nan, np.inf, -np.inf], dtype)
    a[: min(n, 5)] = specials[: min(n, 5)]
    return a


@pytest.mark.parametrize("n", [1, 7, 64, 1023])
def test_small_relu_gradient_is_the_compiled_kernels_bits(n, numba_backend):
    g = _special(n, np.float32, seed=1)
    g[::3] = -0.0
    y = _special(n, np.float32, seed=2)
    small = nn_ops._small_relu_grad(g, y)
    kernel = nn_ops._kernels.threshold_backward(g, y, 0)
    assert small is not None and kernel is not None
    assert small.dtype == kernel.dtype and small.flags.c_contiguous
    np.testing.assert_array_equal(small.view(np.uint32), kernel.view(np.uint32))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64],
                         ids=lambda d: np.dtype(d).name)
def test_small_relu_gradient_is_numpys_where(dtype):
    g, y = _special(40, dtype, seed=1).reshape(5, 8), _special(40, dtype, seed=2).reshape(5, 8)
    want = np.where(y <= 0, np.zeros((), dtype), g)
    got = nn_ops._small_relu_grad(g, y)
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
    # other layouts, sizes and shapes are left to the kernel
    assert nn_ops._small_relu_grad(g.T, y.T) is None
    assert nn_ops._small_relu_grad(g, y[:, :4]) is None
    big = np.ones(nn_ops._SELECT_MIN, dtype)
    assert nn_ops._small_relu_grad(big, big) is None


@pytest.mark.parametrize("n", [5, 64, 2048])
def test_relu_backward_matches_torch_with_nans_and_zeros(n):
    torch = pytest.importorskip("torch")
    x = _special(n, np.float32)
    g = _rand(n, seed=3)
    tx, ex = torch.tensor(x, requires_grad=True), ember.tensor(x, requires_grad=True)
    torch.relu(tx).backward(torch.tensor(g))
    ember.relu(ex).backward(ember.tensor(g))
    np.testing.assert_array_equal(ex.grad.numpy().view(np.uint32),
                                  tx.grad.numpy().view(np.uint32))


def test_relu_double_backward_matches_torch():
    torch = pytest.importorskip("torch")
    x = _rand(6)
    res = []
    for T in (torch, ember):
        t = T.tensor(x, requires_grad=True)
        (g,) = T.autograd.grad((T.relu(t) * t).sum(), t, create_graph=True)
        g.sum().backward()
        res.append(t.grad.detach().numpy())
    np.testing.assert_array_equal(res[1], res[0])


# ------------------------------------------------------------------------------------------------
# the flat optimizer step


def _params(shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


_MIXED = [(8,), (3, 4), (), (2, 2, 2), (5,), (1,)]


@pytest.mark.parametrize("kind", ["sgd", "sgd_momentum", "adam"])
def test_flat_step_is_the_loops_bits(kind):
    values = _params(_MIXED)
    grads = _params(_MIXED, seed=1)
    runs = []
    for foreach in (None, False):
        ps = [ember.nn.Parameter(ember.tensor(v)) for v in values]
        opt = {"sgd": lambda: ember.optim.SGD(ps, lr=0.1, foreach=foreach),
               "sgd_momentum": lambda: ember.optim.SGD(ps, lr=0.1, momentum=0.9,
                                                       foreach=foreach),
               "adam": lambda: ember.optim.Adam(ps, lr=0.01, foreach=foreach)}[kind]()
        versions = []
        for step in range(3):
            for p, g in zip(ps, grads):
                p.grad = ember.tensor(g * (step + 1))
            opt.step()
            versions.append([p._version for p in ps])
        runs.append(([p.detach().numpy().copy() for p in ps], versions))
    for a, b in zip(runs[0][0], runs[1][0]):
        assert a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    assert runs[0][1] == runs[1][1]


def test_flat_step_matches_torch_sgd():
    torch = pytest.importorskip("torch")
    values, grads = _params(_MIXED), _params(_MIXED, seed=1)
    out = []
    for T in (torch, ember):
        ps = [T.nn.Parameter(T.tensor(v)) for v in values]
        opt = T.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=0.01)
        for _ in range(3):
            for p, g in zip(ps, grads):
                p.grad = T.tensor(g)
            opt.step()
        out.append([p.detach().numpy() for p in ps])
    for e, t in zip(out[1], out[0]):
        np.testing.assert_allclose(e, t, rtol=1e-6, atol=1e-6)


def test_flat_step_refuses_a_parameter_listed_twice_on_every_step():
    p = ember.nn.Parameter(ember.ones(3))
    q = ember.nn.Parameter(ember.ones(2))
    opt = ember.optim.SGD([{"params": [p]}, {"params": [q]}], lr=0.5)
    # the same tensor in two groups is PyTorch's error; a group may not hold it twice either
    with pytest.raises(ValueError):
        opt.add_param_group({"params": [p]})
    from ember.optim import _flat

    group = {"foreach": None, "differentiable": False}
    p.grad = ember.ones(3)
    for _ in range(2):  # the verdict is cached per list of parameters; it stays False
        assert not _flat._flat_eligible(opt, group, [p, p], [p.grad, p.grad])
    assert _flat._flat_eligible(opt, group, [p, q], [p.grad, ember.ones(2)])


def test_flat_step_takes_new_dtypes_of_the_same_parameters_into_account():
    from ember.optim import _flat

    p = ember.nn.Parameter(ember.ones(3))
    q = ember.nn.Parameter(ember.ones(2))
    opt = ember.optim.SGD([p, q], lr=0.5)
    group = opt.param_groups[0]
    assert _flat._flat_eligible(opt, group, [p, q], [ember.ones(3), ember.ones(2)])
    assert not _flat._flat_eligible(opt, group, [p, q],
                                    [ember.ones(3), ember.ones(2, dtype=ember.float64)])


# ------------------------------------------------------------------------------------------------
# zero_grad(set_to_none=False)


def _zeroed(T, how, make_grad):
    m = T.nn.Linear(3, 2)
    for p in m.parameters():
        p.grad = make_grad(T, p)
    grads = [p.grad for p in m.parameters()]
    before = [g._version for g in grads]
    if how == "module":
        m.zero_grad(set_to_none=False)
    else:
        T.optim.SGD(m.parameters(), lr=0.1).zero_grad(set_to_none=False)
    ps = list(m.parameters())
    return ([p.grad is g for p, g in zip(ps, grads)], [p.grad.numpy().tolist() for p in ps],
            [p.grad.requires_grad for p in ps], [p.grad.grad_fn is None for p in ps],
            [g._version - v for g, v in zip(grads, before)])


_GRADS = {
    "plain": lambda T, p: T.ones_like(p) * -1.5,
    "requires_grad": lambda T, p: T.ones_like(p).requires_grad_(),
    "with_history": lambda T, p: T.ones_like(p).requires_grad_() * 2,
    "view": lambda T, p: T.ones(p.numel() * 2)[::2].view(p.shape),
}


@pytest.mark.parametrize("how", ["module", "optimizer"])
@pytest.mark.parametrize("kind", sorted(_GRADS))
def test_zero_grad_in_place_matches_torch(how, kind):
    torch = pytest.importorskip("torch")
    got = _zeroed(ember, how, _GRADS[kind])
    want = _zeroed(torch, how, _GRADS[kind])
    assert got == want


def test_zero_grad_in_place_is_zero_s_result():
    from ember.autograd._engine import zero_grad_in_place

    a = ember.tensor([1.0, -2.0, np.nan])
    b = a.clone()
    assert zero_grad_in_place(a)
    b.zero_()
    np.testing.assert_array_equal(a.numpy().view(np.uint32), b.numpy().view(np.uint32))
    assert a._version == b._version
    # what the ops must see or handle stays with them
    assert not zero_grad_in_place(ember.ones(2, requires_grad=True))
    assert not zero_grad_in_place(ember.ones(4)[::2])
    assert not zero_grad_in_place(ember.ones(2, dtype=ember.int64))


def test_zero_grad_in_place_leaves_modes_their_op():
    from ember.utils._python_dispatch import TorchDispatchMode

    seen = []

    class Spy(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    m = ember.nn.Linear(2, 2)
    for p in m.parameters():
        p.grad = ember.ones_like(p)
    with Spy():
        m.zero_grad(set_to_none=False)
    assert any("zero" in s or "fill" in s for s in seen)
    assert all(float(p.grad.abs().sum()) == 0 for p in m.parameters())


# ------------------------------------------------------------------------------------------------
# linear's direct path


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("has_bias", [True, False])
@pytest.mark.parametrize("needs", [(True, True), (False, True), (False, False)])
def test_linear_direct_path_is_the_dispatchers(monkeypatch, dtype, has_bias, needs):
    x, w, b = _rand(3, 5, dtype=dtype), _rand(4, 5, seed=1, dtype=dtype), _rand(4, seed=2,
                                                                                dtype=dtype)
    runs = []
    for direct in (True, False):
        if not direct:
            monkeypatch.setattr(nn_ops.linear_op, "builtin_cpu", False)
        ex = ember.tensor(x, requires_grad=needs[0])
        ew = ember.tensor(w, requires_grad=needs[1])
        eb = ember.tensor(b, requires_grad=needs[1]) if has_bias else None
        y = ember.nn.functional.linear(ex, ew, eb)
        names = None
        if y.grad_fn is not None:
            names = (y.grad_fn.name(), [type(n).__name__ if n is not None else None
                                        for n, _ in y.grad_fn.next_functions])
            y.pow(2).sum().backward()
        runs.append((y.detach().numpy().copy(), y.requires_grad, names,
                     [None if t is None or t.grad is None else t.grad.numpy().copy()
                      for t in (ex, ew, eb)]))
        monkeypatch.undo()
    (y0, r0, n0, g0), (y1, r1, n1, g1) = runs
    np.testing.assert_array_equal(y0, y1)
    assert (r0, n0) == (r1, n1)
    for a, c in zip(g0, g1):
        assert (a is None) == (c is None)
        if a is not None:
            np.testing.assert_array_equal(a, c)


def test_linear_direct_path_matches_torch_graph():
    torch = pytest.importorskip("torch")
    x, w, b = _rand(2, 3), _rand(4, 3, seed=1), _rand(4, seed=2)
    names = []
    for T in (torch, ember):
        y = T.nn.functional.linear(T.tensor(x), T.tensor(w, requires_grad=True),
                                   T.tensor(b, requires_grad=True))
        names.append(y.grad_fn.name())
    assert names[0] == names[1]
