"""Regressions for what backward nodes keep (issue 16): writing in place into an op's input
or output after the call, then calling backward, raises "modified by an inplace operation"
in ember exactly where it does in torch. Nodes whose formulas read only an input's shape keep
a data-free stand-in (``Op.shape_only``); fused nodes keep only the outputs their formulas
read (``Op.saved_outputs``). Each program runs with ``T = ember`` and ``T = torch``."""

import numpy as np
import pytest

import ember
from tests.conftest import HAS_TORCH

pytestmark = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")


def _leaves(T, shapes):
    g = np.random.default_rng(0)
    return [T.tensor(g.standard_normal(s), dtype=T.float64, requires_grad=True)
            for s in shapes]


def _run(T, fn, shapes, write, which):
    """fn(*clones) then ``write`` in place into clone ``which`` (``write='out'``: into the
    output ``which``); backward of the sum; the leaves' gradients, or the exception type."""
    leaves = _leaves(T, shapes)
    clones = [x.clone() for x in leaves]
    out = fn(T, *clones)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    with T.no_grad() if write == "in" else _Null():
        (clones[which] if write == "in" else outs[which]).mul_(2)
    try:
        sum(o.real.sum() if o.is_complex() else o.sum()
            for o in outs if o.requires_grad).backward()
    except RuntimeError as e:
        return type(e).__name__
    return [None if x.grad is None else x.grad.detach().numpy().copy() for x in leaves]


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def _same(fn, shapes, write="in", which=0):
    import torch

    e = _run(ember, fn, shapes, write, which)
    t = _run(torch, fn, shapes, write, which)
    assert type(e) is type(t), (e, t)
    if isinstance(t, str):
        assert e == t
        return
    for a, b in zip(e, t):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


# inputs read only for their shapes: torch keeps ``self_sym_sizes``, never raises
@pytest.mark.parametrize("name,fn,shapes,which", [
    ("trace", lambda T, a: T.trace(a), [(3, 4)], 0),
    ("block_diag", lambda T, a, b: T.block_diag(a, b), [(2, 2), (1, 3)], 1),
    ("cartesian_prod", lambda T, a, b: T.cartesian_prod(a, b), [(2,), (3,)], 0),
    ("diff", lambda T, a: T.diff(a, dim=1), [(3, 4)], 0),
    ("unfold", lambda T, a: T.nn.functional.unfold(a, 2), [(1, 2, 4, 4)], 0),
    ("masked_scatter_source",
     lambda T, a, s: a.masked_scatter(T.tensor([True, False, True]), s), [(3,), (4,)], 1),
])
def test_inplace_into_input_kept_for_shape_no_raise(name, fn, shapes, which):
    _same(fn, shapes, "in", which)


def test_inplace_into_input_still_raises_where_value_is_kept():
    # masked_scatter's mask and trace's stand-in leave the real saves alone: mul keeps ``b``
    _same(lambda T, a, b: a * b, [(3,), (3,)], "in", 1)


def test_shape_only_node_exposes_sizes_not_tensor():
    import torch

    for T in (ember, torch):
        x = T.zeros(3, 4, requires_grad=True)
        fn = T.trace(x).grad_fn
        assert tuple(fn._saved_self_sym_sizes) == (3, 4)
        assert not hasattr(fn, "_saved_self")
        assert "_saved_self_sym_sizes" in dir(fn)


def test_shape_only_node_with_saved_tensor_hooks_packs_nothing():
    import torch

    counts = []
    for T in (ember, torch):
        packed = []
        x = T.ones(2, 2, requires_grad=True)
        with T.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t,
                                                  lambda t: t):
            y = T.block_diag(x, x.clone())
        y.sum().backward()
        counts.append((len(packed), x.grad.tolist()))
    assert counts[0] == counts[1]


def test_shape_only_double_backward():
    x = ember.randn(3, 3, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradgradcheck(lambda a: ember.diff(a * a, dim=0), (x,))
    assert ember.autograd.gradgradcheck(lambda a: ember.trace(a * a), (x,))


# polar keeps its result, as torch: gradients from sgn(result) (zero at abs 0, reversed for
# a negative abs), and a write into the inputs leaves backward valid
@pytest.mark.parametrize("write,which", [("in", 0), ("in", 1), ("out", 0)])
def test_polar_keeps_result(write, which):
    _same(lambda T, r, t: T.polar(r, t), [(4,), (4,)], write, which)


def test_polar_gradient_at_zero_and_negative_abs():
    import torch

    res = []
    for T in (ember, torch):
        r = T.tensor([0.0, -2.0, 1.5], dtype=T.float64, requires_grad=True)
        t = T.tensor([1.0, 0.5, -0.3], dtype=T.float64, requires_grad=True)
        z = T.polar(r, t)
        (z * T.tensor([1 + 2j, 2 + 0.3j, -1 + 1j], dtype=T.complex128)).real.sum().backward()
        res.append((r.grad.tolist(), t.grad.tolist()))
    np.testing.assert_allclose(res[0], res[1], rtol=1e-12, atol=1e-15)


# fused nodes: only the outputs the formula reads are kept
@pytest.mark.parametrize("which", [0, 1])
def test_lstm_cell_write_into_outputs_no_raise(which):
    def fn(T, x, h, c, wi, wh):
        return T.lstm_cell(x, (h, c), wi, wh)

    _same(fn, [(2, 3), (2, 4), (2, 4), (16, 3), (16, 4)], "out", which)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_ctc_loss_write_into_reduced_loss_no_raise(reduction):
    def fn(T, lp):
        return T.nn.functional.ctc_loss(lp.log_softmax(2), T.tensor([[1, 2], [1, 1]]),
                                        [5, 5], [2, 2], reduction=reduction)

    _same(fn, [(5, 2, 4)], "out", 0)


# second derivatives through backward kernels that take the forward input (pools,
# reflect/replicate padding, nll_loss): zeros for that input, as torch, never absent
_GG = {
    "max_pool1d": (lambda T, x: T.nn.functional.max_pool1d(x, 2), (2, 3, 6)),
    "max_pool2d": (lambda T, x: T.nn.functional.max_pool2d(x, 2), (2, 3, 4, 4)),
    "avg_pool2d": (lambda T, x: T.nn.functional.avg_pool2d(x, 2), (2, 3, 4, 4)),
    "adaptive_avg_pool2d": (lambda T, x: T.nn.functional.adaptive_avg_pool2d(x, 3),
                            (2, 3, 7, 5)),
    "adaptive_max_pool1d": (lambda T, x: T.nn.functional.adaptive_max_pool1d(x, 3), (2, 3, 7)),
    "pad_reflect": (lambda T, x: T.nn.functional.pad(x, (1, 1), mode="reflect"), (1, 2, 4)),
    "pad_circular": (lambda T, x: T.nn.functional.pad(x, (1, 1), mode="circular"), (1, 2, 4)),
    "nll_loss": (lambda T, x: T.nn.functional.nll_loss(x, T.tensor([0, 2, 1])), (3, 4)),
}


def _double_backward(T, fn, shape):
    g = np.random.default_rng(1)
    x = T.tensor(g.standard_normal(shape), dtype=T.float64, requires_grad=True)
    out = fn(T, x)
    w = T.tensor(g.standard_normal(tuple(out.shape)), dtype=T.float64)
    gx, = T.autograd.grad((out * w).sum(), x, create_graph=True)
    if not gx.requires_grad:
        return "no graph"
    ggx, = T.autograd.grad((gx * gx).sum(), x, allow_unused=True)
    return None if ggx is None else ggx.detach().numpy(force=True) \
        if T is not ember else ggx.detach().numpy()


@pytest.mark.parametrize("name", sorted(_GG))
def test_double_backward_through_backward_kernel_matches_torch(name):
    import torch

    fn, shape = _GG[name]
    e, t = _double_backward(ember, fn, shape), _double_backward(torch, fn, shape)
    assert type(e) is type(t), (e, t)
    if isinstance(t, np.ndarray):
        np.testing.assert_array_equal(e, t)


def test_gradient_penalty_through_max_pool_runs():
    x = ember.randn(2, 1, 4, 4, requires_grad=True)
    g, = ember.autograd.grad(ember.nn.functional.max_pool2d(x.tanh(), 2).sum(), x,
                             create_graph=True)
    (g * g).sum().backward()
    assert x.grad is not None and x.grad.shape == x.shape
