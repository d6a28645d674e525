"""ember._foreach_* against torch._foreach_*: every name, every operand form."""

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

SHAPES = [(3,), (2, 2), ()]
UNARY = ("abs acos asin atan ceil cos cosh erf erfc exp expm1 floor frac lgamma log log10 "
         "log1p log2 neg reciprocal round rsqrt sigmoid sign sin sinh sqrt tan tanh "
         "trunc").split()
BINARY = ["add", "sub", "mul", "div", "clamp_max", "clamp_min", "maximum", "minimum"]


def _lists(seed=0, positive=False, n=3, dtype=np.float32):
    rng = np.random.default_rng(seed)
    arrays = [rng.uniform(0.1 if positive else -2, 2, s).astype(dtype) for s in SHAPES[:n]]
    return [ember.tensor(a) for a in arrays], [torch.tensor(a) for a in arrays]


def _check(e, t):
    assert type(e) is type(t), (type(e), type(t))
    assert len(e) == len(t)
    for a, b in zip(e, t):
        assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=2e-6, atol=1e-6, equal_nan=True)


def test_every_torch_foreach_name_exists():
    names = [n for n in dir(torch) if n.startswith("_foreach")]
    assert len(names) > 80
    assert [n for n in names if not hasattr(ember, n)] == []


@pytest.mark.parametrize("name", UNARY)
def test_unary(name):
    positive = name in ("log", "log10", "log2", "rsqrt", "sqrt", "lgamma", "acos", "asin")
    e, t = _lists(1, positive=positive)
    if name in ("acos", "asin"):
        e, t = [x / 3 for x in e], [x / 3 for x in t]
    _check(getattr(ember, f"_foreach_{name}")(e), getattr(torch, f"_foreach_{name}")(t))
    re, rt = getattr(ember, f"_foreach_{name}_")(e), getattr(torch, f"_foreach_{name}_")(t)
    assert re is e and rt is t
    _check(list(e), list(t))


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("form", ["scalar", "scalarlist", "tensorlist", "tensor"])
def test_binary(name, form):
    e, t = _lists(2)
    oe, ot = _lists(3, positive=True)
    other = {"scalar": (1.5, 1.5), "scalarlist": ([0.5, 2, -1.0], [0.5, 2, -1.0]),
             "tensorlist": (oe, ot), "tensor": (ember.tensor(0.75), torch.tensor(0.75))}[form]
    if form == "tensor":
        for T, x in ((ember, e), (torch, t)):
            bad = (TypeError, RuntimeError)
            with pytest.raises(bad):  # a single tensor operand must be 0-dim
                getattr(T, f"_foreach_{name}")(x, T.ones(1))
            if name != "add":
                with pytest.raises(TypeError):  # alpha: with a list of tensors only
                    getattr(T, f"_foreach_{name}")(x, T.tensor(0.5), alpha=2)
    _check(getattr(ember, f"_foreach_{name}")(e, other[0]),
           getattr(torch, f"_foreach_{name}")(t, other[1]))
    if (name, form) in (("add", "tensorlist"), ("sub", "tensorlist"), ("add", "tensor")):
        _check(getattr(ember, f"_foreach_{name}")(e, other[0], alpha=-2),
               getattr(torch, f"_foreach_{name}")(t, other[1], alpha=-2))
    getattr(ember, f"_foreach_{name}_")(e, other[0])
    getattr(torch, f"_foreach_{name}_")(t, other[1])
    _check(list(e), list(t))


@pytest.mark.parametrize("name", ["addcmul", "addcdiv"])
def test_pointwise3(name):
    e, t = _lists(4)
    e1, t1 = _lists(5)
    e2, t2 = _lists(6, positive=True)
    for v in (1, 0.5, [0.5, -1, 2.0]):
        _check(getattr(ember, f"_foreach_{name}")(e, e1, e2, v),
               getattr(torch, f"_foreach_{name}")(t, t1, t2, v))
    _check(getattr(ember, f"_foreach_{name}")(e, e1, e2, ember.tensor([0.5, -1, 2.0])),
           getattr(torch, f"_foreach_{name}")(t, t1, t2, torch.tensor([0.5, -1, 2.0])))
    _check(getattr(ember, f"_foreach_{name}")(e, e1, e2, value=3),
           getattr(torch, f"_foreach_{name}")(t, t1, t2, value=3))
    getattr(ember, f"_foreach_{name}_")(e, e1, e2, -0.25)
    getattr(torch, f"_foreach_{name}_")(t, t1, t2, -0.25)
    _check(list(e), list(t))


def test_lerp_pow_and_reductions():
    e, t = _lists(7, positive=True)
    e1, t1 = _lists(8)
    _check(ember._foreach_lerp(e, e1, 0.3), torch._foreach_lerp(t, t1, 0.3))
    _check(ember._foreach_lerp(e, e1, [0.1, 0.5, 0.9]), torch._foreach_lerp(t, t1, [0.1, 0.5, 0.9]))
    _check(ember._foreach_lerp(e, e1, [x.abs() / 3 for x in e1]),
           torch._foreach_lerp(t, t1, [x.abs() / 3 for x in t1]))
    _check(ember._foreach_pow(e, 2), torch._foreach_pow(t, 2))
    _check(ember._foreach_pow(e, [1, 2, 0.5]), torch._foreach_pow(t, [1, 2, 0.5]))
    _check(ember._foreach_pow(e, e1), torch._foreach_pow(t, t1))
    _check(ember._foreach_pow(2.0, e1), torch._foreach_pow(2.0, t1))
    for ord_ in (1, 2, 3, float("inf")):
        _check(ember._foreach_norm(e1, ord_), torch._foreach_norm(t1, ord_))
        _check(ember._foreach_powsum(e1, ord_ if ord_ != float("inf") else 4),
               torch._foreach_powsum(t1, ord_ if ord_ != float("inf") else 4))
    _check(ember._foreach_norm(e1, 2, dtype=ember.float64),
           torch._foreach_norm(t1, 2, dtype=torch.float64))
    _check(ember._foreach_max(e1), torch._foreach_max(t1))
    _check(ember._foreach_clone(e1), torch._foreach_clone(t1))
    m = np.arange(6, dtype=np.float32).reshape(2, 3)
    _check(ember._foreach_mm([ember.tensor(m)], [ember.tensor(m.T.copy())]),
           torch._foreach_mm([torch.tensor(m)], [torch.tensor(m.T.copy())]))
    r = ember._foreach_copy_(e, e1)
    torch._foreach_copy_(t, t1)
    assert r is e
    _check(e, t)
    assert ember._foreach_zero_(e) is e
    assert all(float(x.abs().sum()) == 0 for x in e)


def test_integer_lists_promote_as_torch():
    ints = [np.array([1, 2]), np.array([3])]
    e = [ember.tensor(a) for a in ints]
    t = [torch.tensor(a) for a in ints]
    _check(ember._foreach_add(e, 1.5), torch._foreach_add(t, 1.5))
    _check(ember._foreach_div(e, 2), torch._foreach_div(t, 2))
    for T, x in ((ember, e), (torch, t)):
        with pytest.raises(RuntimeError):
            T._foreach_add_(x, 1.5)


def test_errors_match_torch():
    for T in (ember, torch):
        a = [T.ones(2)]
        with pytest.raises(RuntimeError, match="same number of elements as scalar list"):
            T._foreach_add(a, [1, 2])
        with pytest.raises(RuntimeError, match="same number of tensors"):
            T._foreach_add(a, [T.ones(2), T.ones(2)])
        with pytest.raises(RuntimeError, match="at least one tensor"):
            T._foreach_add([], 1)
        with pytest.raises(TypeError):
            T._foreach_add(T.ones(2), 1)
        with pytest.raises(RuntimeError):
            T._foreach_add(a, [T.ones(3)])
        with pytest.raises(RuntimeError, match="empty tensor"):
            T._foreach_max([T.ones(0)])
        leaf = [T.ones(2, requires_grad=True)]
        with pytest.raises(RuntimeError, match="leaf Variable"):
            T._foreach_mul_(leaf, 3)


def test_autograd_through_foreach():
    grads = []
    for T in (ember, torch):
        x = [T.tensor([1.0, 2.0], requires_grad=True), T.tensor([3.0], requires_grad=True)]
        y = T._foreach_addcmul(T._foreach_mul(x, 3), x, x, 0.5)
        z = T._foreach_norm(T._foreach_exp(y))
        sum(z).backward()
        grads.append([g.grad.numpy() for g in x])
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-5)


def test_an_adamw_step_written_with_foreach_matches_torch():
    """The step timm's AdamW writes with foreach ops (decay, moments, bias correction)."""
    rng = np.random.default_rng(11)
    shapes = [(4, 3), (3,), (2, 2, 2)]
    data = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    grads = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    final = []
    for T in (ember, torch):
        params = [T.tensor(d) for d in data]
        gs = [T.tensor(g) for g in grads]
        m = [T.zeros_like(p) for p in params]
        v = [T.zeros_like(p) for p in params]
        lr, b1, b2, eps, wd = 1e-2, 0.9, 0.999, 1e-8, 0.05
        for step in range(1, 4):
            T._foreach_mul_(params, 1 - lr * wd)
            T._foreach_lerp_(m, gs, 1 - b1)
            T._foreach_mul_(v, b2)
            T._foreach_addcmul_(v, gs, gs, 1 - b2)
            bc1, bc2 = 1 - b1 ** step, 1 - b2 ** step
            denom = T._foreach_sqrt(v)
            T._foreach_div_(denom, bc2 ** 0.5)
            T._foreach_add_(denom, eps)
            T._foreach_addcdiv_(params, m, denom, -lr / bc1)
            T._foreach_maximum_(v, T._foreach_mul(v, 0.5))
        final.append([p.numpy() for p in params])
    for a, b in zip(*final):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
