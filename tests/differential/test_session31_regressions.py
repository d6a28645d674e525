"""Regressions for session 31's differential run against PyTorch 2.13 (OpInfo cases, and the
random transform programs of tests/differential/programs_func.py): each case runs with
``T = ember`` and ``T = torch`` from the same values where torch is installed, and compares
values, gradients, or the exception raised (class and message)."""

import warnings

import numpy as np
import pytest

from tests.differential._cases import as_numpy as _np
from tests.differential._cases import both as _both
from tests.differential._cases import raised as _raised


def _outcome(f):
    """A library-neutral outcome of ``f()``: (class, message) of what it raised, or its
    tensors (a tuple of them, or one) as (dtype name, shape, values) with NaN kept."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # index_reduce's beta warning
        err = _raised(f)
        if err:
            return err[0], err[1].replace("torch", "ember")
        r = f()

    def one(t):
        return str(t.dtype).split(".")[-1], tuple(t.shape), np.round(_np(t), 10).tolist()

    return tuple(one(t) for t in r) if isinstance(r, tuple) else one(r)


def _same(a, b):
    """Outcomes equal, NaN equal to NaN."""
    return repr(a).replace("nan", "NaN") == repr(b).replace("nan", "NaN")


# ---- in-place ops whose other operand shares the written tensor's version counter: the
# saved operand was modified, and backward refuses it (NOTE [ In-place ops and autograd ])

_ALIASED = [
    "r[:, 0].mul_(r[:, 2])",
    "r.t()[0].mul_(r[:, 2])",
    "r[0].mul_(r[1])",
    "r[:, 0].div_(r[:, 2])",
    "r[:, 0].pow_(r[:, 2])",
    "r[:, 0].atan2_(r[:, 2])",
    "r[:, 0].addcmul_(r[:, 1], r[:, 2])",
    "r[:, 0].lerp_(r[:, 2], r[:, 1])",
    "r[:, 0].hypot_(r[:, 2])",
    "r.pow_(r.detach())",
]
#: the same shapes where nothing saved is overwritten (or the write saves nothing)
_NOT_ALIASED = [
    "r[:, 0].add_(r[:, 2])",
    "r[:, 0].mul_(x[:, 2])",
    "r.mul_(x)",
    "r.sin_()",
    "r[:, 1].copy_(r[:, 0] + 1)",
]


@pytest.mark.parametrize("src", _ALIASED + _NOT_ALIASED)
def test_inplace_with_an_aliased_operand_then_backward(src):
    E, T = _both()

    def run(L):
        x = L.tensor([[1.5, 2.0, 3.0], [3.0, 4.0, 0.5]], dtype=L.float64, requires_grad=True)
        r = x * 1
        exec(src, {"r": r, "x": x})
        return L.autograd.grad((r * r).sum(), x)[0]

    e, t = _outcome(lambda: run(E)), _outcome(lambda: run(T))
    if src in _ALIASED:
        assert e[0] == t[0] == "RuntimeError"
        assert "modified by an inplace operation" in e[1]
    else:
        assert _same(e, t)


def test_inplace_keeps_the_original_self_for_its_own_formula():
    # self itself is saved as a copy (torch's original_self): r.mul_(y)'s gradient in y is
    # the value r had before the write
    E, T = _both()

    def run(L):
        x = L.tensor([1.0, 2.0], dtype=L.float64, requires_grad=True)
        y = L.tensor([3.0, 4.0], dtype=L.float64, requires_grad=True)
        r = x * 1
        r.mul_(y)
        return L.autograd.grad(r.sum(), (x, y))

    assert _same(_outcome(lambda: run(E)), _outcome(lambda: run(T)))


# ---- hardtanh_ / relu6(inplace=True): hardtanh's gradient (0 at the bounds), not clamp_'s

@pytest.mark.parametrize("call", ["F.hardtanh_(y)", "F.hardtanh(y, inplace=True)",
                                  "F.relu6(y, inplace=True)", "F.hardtanh_(y, -0.5, 0.5)",
                                  "T.nn.ReLU6(inplace=True)(y)", "T.nn.Hardtanh(inplace=True)(y)"])
def test_inplace_hardtanh_gradient_at_its_bounds(call):
    E, T = _both()

    def run(L):
        x = L.tensor([-1.0, 1.0, 0.5, -0.5, 6.0, 0.0, 7.0], dtype=L.float64,
                     requires_grad=True)
        y = x * 1
        r = eval(call, {"F": L.nn.functional, "T": L, "y": y})
        assert r is y
        return (y.detach(),) + L.autograd.grad(r.sum(), x)

    assert _same(_outcome(lambda: run(E)), _outcome(lambda: run(T)))


@pytest.mark.parametrize("dtype", ["int64", "int8", "uint8"])
@pytest.mark.parametrize("call", ["F.hardtanh_(y)", "F.relu6(y, inplace=True)",
                                  "F.hardtanh_(y, -2.5, 3.7)"])
def test_inplace_hardtanh_of_integers(call, dtype):
    E, T = _both()

    def run(L):
        y = L.tensor([0, 2, 7, 100], dtype=getattr(L, dtype))
        return eval(call, {"F": L.nn.functional, "y": y}), y

    assert _same(_outcome(lambda: run(E)), _outcome(lambda: run(T)))


# ---- index_reduce's amax / amin of complex numbers: torch's missing kernel, named before
# the indices' range is looked at

@pytest.mark.parametrize("reduce", ["amax", "amin", "prod", "mean"])
@pytest.mark.parametrize("index", [[0, 1], [0, 7], []])
@pytest.mark.parametrize("form", ["function", "method_"])
def test_index_reduce_of_complex(reduce, index, form):
    E, T = _both()

    def run(L):
        x = L.ones(3, 2, dtype=L.complex64)
        i = L.tensor(index, dtype=L.int64)
        s = L.ones(len(index), 2, dtype=L.complex64)
        if form == "function":
            return L.index_reduce(x, 0, i, s, reduce)
        return x.index_reduce_(0, i, s, reduce)

    assert _same(_outcome(lambda: run(E)), _outcome(lambda: run(T)))


def test_index_reduce_of_complex_checks_the_source_shape_first():
    # (the class only: torch words this shape error its own way, not yet ember's)
    E, T = _both()

    def run(L):
        x = L.ones(3, 2, dtype=L.complex64)
        return L.index_reduce(x, 0, L.tensor([0, 9]), L.ones(2, 3, dtype=L.complex64), "amax")

    assert _outcome(lambda: run(E))[0] == _outcome(lambda: run(T))[0] == "RuntimeError"


# ---- NLL and cross entropy over zero classes: only ignored targets, each loss 0

@pytest.mark.parametrize("fn", ["nll_loss", "cross_entropy"])
@pytest.mark.parametrize("reduction", ["sum", "mean", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("target", [[4], [4, 4], [], [1], [4, 0]])
def test_class_losses_over_zero_classes(fn, reduction, weighted, target):
    E, T = _both()

    def run(L):
        x = L.empty(len(target), 0, dtype=L.float64, requires_grad=True)
        w = L.ones(0, dtype=L.float64) if weighted else None
        r = getattr(L.nn.functional, fn)(x, L.tensor(target, dtype=L.int64), weight=w,
                                         ignore_index=4, reduction=reduction)
        return r.detach(), L.autograd.grad(r.sum(), x)[0]

    assert _same(_outcome(lambda: run(E)), _outcome(lambda: run(T)))


def test_nll_loss_of_one_sample_over_zero_classes():
    E, T = _both()

    def run(L):
        return L.nn.functional.nll_loss(L.empty(0, dtype=L.float64), L.tensor(4),
                                        ignore_index=4)

    assert _same(_outcome(lambda: run(E)), _outcome(lambda: run(T)))


# ---- vmap: an in-place write into a view op's result inside a transformed function

_VIEWS = ["r.diagonal()", "r.select(1, 0)", "r.t()[0]", "r.unfold(1, 2, 2).select(-1, 0)",
          "r.unfold(1, 2, 2)", "r.narrow(1, 1, 2)", "r.view(8)[::3]", "r.transpose(0, 1)",
          "r.reshape(8)", "r.view(2, 2, 2)[:, 1]", "r.movedim(0, 1)", "r.unsqueeze(0)",
          "r.flatten()", "r.expand(1, 2, 4)[0]", "r.diagonal(1)", "r.swapaxes(0, 1)[1]",
          "r.unflatten(1, (2, 2))[:, 0]", "r[0]", "r.split(2, 1)[1]", "r.unbind(1)[2]",
          "r.chunk(2, 0)[0]"]


@pytest.mark.parametrize("view", _VIEWS)
def test_vmap_grad_through_an_inplace_write_into_a_view(view):
    E, T = _both()

    def run(L):
        def f(a):
            r = a * 1.0
            eval(view, {"r": r}).mul_(3)
            return (r * r).sum()

        x = L.tensor([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]], dtype=L.float64)
        return L.func.vmap(L.func.grad(f))(L.stack([x, x * 2]))

    e, t = _outcome(lambda: run(E)), _outcome(lambda: run(T))
    if t[0] == "RuntimeError":  # a view of several (split, unbind, chunk): refused
        assert e[0] == "RuntimeError" and "is a view and is being modified inplace" in e[1]
    else:
        assert _same(e, t)


def test_vmap_jacrev_through_an_inplace_write_into_a_view_of_a_view():
    E, T = _both()

    def run(L):
        def f(a):
            r = a.clone()
            r.unfold(1, 2, 2).select(-1, 0).div_(3)
            return r.mean(1)

        x = L.tensor([[0.5, -1.0, 2.0, 0.25], [1.5, 0.75, -0.5, 3.0]], dtype=L.float64)
        return L.func.vmap(L.func.jacrev(f))(L.stack([x, L.cos(x)]))

    assert _same(_outcome(lambda: run(E)), _outcome(lambda: run(T)))


def test_vmap_grad_of_pow_with_a_batched_scalar_exponent():
    # pow's derivative once read a batched 0-dim exponent's logical data (example 0's) as a
    # host number (ember/_ops/arithmetic.py, _nonzero_number)
    E, T = _both()

    def run(L):
        xb = L.tensor([[1.5, 2.0], [3.0, 4.0]], dtype=L.float64)
        yb = L.tensor([2.0, 3.0], dtype=L.float64)
        return L.func.vmap(L.func.grad(lambda a, b: (a ** b).sum()))(xb, yb)

    assert _same(_outcome(lambda: run(E)), _outcome(lambda: run(T)))


# ---- the version error names a written differentiable view as AsStrided, as PyTorch's
# regenerated grad_fn is

@pytest.mark.parametrize("src", [
    "v = r[0]; o = v.sin(); v.mul_(2)", "v = r[0]; o = v.sin(); r.mul_(2)",
    "v = r.t(); o = v.sin(); r.mul_(2)", "v = r.diagonal(); o = v.sin(); r[1].mul_(2)",
    "v = r.view(6); o = v.sin(); r.mul_(2)", "v = r[0]; o = v * r[1]; r[1].mul_(2)",
    "v = r.narrow(1, 0, 2); o = v.sin(); r.mul_(2)", "v = r; o = v.sin(); r.mul_(2)",
    "v = r[:, 1:]; o = v.exp(); r[0, 0].mul_(2)"])
def test_version_error_names_a_written_view(src):
    E, T = _both()

    def run(L):
        x = L.tensor([[1.5, 2.0, 3.0], [3.0, 4.0, 0.5]], dtype=L.float64, requires_grad=True)
        env = {"r": x * 1}
        exec(src, env)
        env["o"].sum().backward()
        return x.grad

    assert _outcome(lambda: run(E)) == _outcome(lambda: run(T))
