"""The element-wise losses that are one op each (smooth_l1_loss, huber_loss, soft_margin_loss,
binary_cross_entropy, binary_cross_entropy_with_logits; NOTE [ Element-wise losses as single
ops ] in ember/_ops/nn_loss.py): values, gradients and second derivatives equal torch's at
every pair of edge values (0, +-inf, NaN, the kinks; 0 and 1 and their neighbours for the
binary cross-entropy), every reduction, torch's node names, half inputs and bad input."""

import math
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

_SPECIAL = [-math.inf, -2.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.0, math.inf, math.nan]
_PAIRS = ([a for a in _SPECIAL for _ in _SPECIAL], [b for _ in _SPECIAL for b in _SPECIAL])
_PROBS = [0.0, 1e-50, 1e-13, 0.3, 0.5, 1 - 1e-13, 1.0]
_PROB_PAIRS = ([a for a in _PROBS for _ in _PROBS], [b for _ in _PROBS for b in _PROBS])


def _weights(T, n, dtype, reverse=False):
    w = np.linspace(0.5, 2.0, n)
    return T.tensor(w[::-1].copy() if reverse else w, dtype=dtype)


_LOSSES = {
    "smooth_l1_loss": (lambda T, F, x, t, r: F.smooth_l1_loss(x, t, reduction=r, beta=0.5),
                       _PAIRS, True, "SmoothL1LossBackward0"),
    "huber_loss": (lambda T, F, x, t, r: F.huber_loss(x, t, reduction=r, delta=0.5),
                   _PAIRS, True, "HuberLossBackward0"),
    "soft_margin_loss": (lambda T, F, x, t, r: F.soft_margin_loss(x, t, reduction=r),
                         _PAIRS, False, "SoftMarginLossBackward0"),
    "bce_with_logits": (lambda T, F, x, t, r: F.binary_cross_entropy_with_logits(
        x, t, reduction=r), _PAIRS, True, "BinaryCrossEntropyWithLogitsBackward0"),
    "bce_with_logits_weights": (lambda T, F, x, t, r: F.binary_cross_entropy_with_logits(
        x, t, reduction=r, weight=_weights(T, x.numel(), x.dtype, True),
        pos_weight=_weights(T, x.numel(), x.dtype)), _PAIRS, True,
        "BinaryCrossEntropyWithLogitsBackward0"),
    "bce": (lambda T, F, x, t, r: F.binary_cross_entropy(x, t, reduction=r), _PROB_PAIRS, True,
            "BinaryCrossEntropyBackward0"),
    "bce_weight": (lambda T, F, x, t, r: F.binary_cross_entropy(
        x, t, reduction=r, weight=_weights(T, x.numel(), x.dtype)), _PROB_PAIRS, True,
        "BinaryCrossEntropyBackward0"),
}


def _run(T, name, dtype, reduction, create_graph=False):
    f, (xs, ts), target_grad, _ = _LOSSES[name]
    dt = getattr(T, dtype)
    x = T.tensor(xs, dtype=dt, requires_grad=True)
    t = T.tensor(ts, dtype=dt, requires_grad=target_grad)
    y = f(T, T.nn.functional, x, t, reduction)
    w = _weights(T, len(xs), dt) if reduction == "none" else T.tensor(1.5, dtype=dt)
    inputs = (x, t) if target_grad else (x,)
    grads = T.autograd.grad((y * w).sum(), inputs, create_graph=create_graph)
    return y, grads, inputs


def _close(a, b, rtol):
    np.testing.assert_allclose(a.detach().double().numpy(), b.detach().double().numpy(),
                               rtol=rtol, atol=1e-30, equal_nan=True)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("name", sorted(_LOSSES))
def test_values_gradients_and_node_at_edges_as_torch(name, reduction):
    ey, eg, _ = _run(ember, name, "float64", reduction)
    ty, tg, _ = _run(torch, name, "float64", reduction)
    assert ey.grad_fn.name() == ty.grad_fn.name() == _LOSSES[name][3]
    _close(ey, ty, 1e-12)
    for a, b in zip(eg, tg):
        _close(a, b, 1e-12)


@pytest.mark.parametrize("name", sorted(_LOSSES))
def test_float32_values_and_gradients_as_torch(name):
    ey, eg, _ = _run(ember, name, "float32", "none")
    ty, tg, _ = _run(torch, name, "float32", "none")
    _close(ey, ty, 2e-5)  # log-sigmoid's last bits, amplified where the loss cancels
    for a, b in zip(eg, tg):
        _close(a, b, 1e-6)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", sorted(_LOSSES))
def test_half_inputs_as_torch(name, dtype):
    for reduction in ("none", "sum"):
        ey, eg, _ = _run(ember, name, dtype, reduction)
        ty, tg, _ = _run(torch, name, dtype, reduction)
        assert ey.dtype == ember.float16 if dtype == "float16" else ember.bfloat16
        _close(ey, ty, 1e-2)
        for a, b in zip(eg, tg):
            _close(a, b, 1e-2)


@pytest.mark.parametrize("name", ["smooth_l1_loss", "huber_loss", "soft_margin_loss",
                                  "bce_with_logits", "bce_with_logits_weights"])
def test_second_derivatives_at_edges_as_torch(name):
    def run(T):
        _, grads, inputs = _run(T, name, "float64", "mean", create_graph=True)
        w = _weights(T, inputs[0].numel(), T.float64)
        return T.autograd.grad(sum((g * w).sum() for g in grads), inputs, allow_unused=True)
    for a, b in zip(run(ember), run(torch)):
        assert (a is None) == (b is None)
        if a is not None:
            _close(a, b, 1e-12)


@pytest.mark.parametrize("reduction", ["none", "mean"])
def test_bce_second_derivatives_as_torch(reduction):
    # torch's own second derivatives (NOTE [ Binary cross-entropy's second derivatives ]),
    # at the clamp (0, 1 and within 1e-12 of them) and away from it
    def run(T):
        x = T.tensor([0.0, 1e-13, 0.05, 0.3, 0.5, 0.7, 1 - 1e-13, 1.0], dtype=T.float64,
                     requires_grad=True)
        t = T.tensor([0.4, 0.3, 0.0, 1.0, 0.2, 0.5, 0.2, 0.9], dtype=T.float64,
                     requires_grad=True)
        w = _weights(T, 8, T.float64)
        y = T.nn.functional.binary_cross_entropy(x, t, weight=w, reduction=reduction)
        g = _weights(T, 8, T.float64, True).requires_grad_() if reduction == "none" else \
            T.tensor(1.5, dtype=T.float64, requires_grad=True)
        (gx,) = T.autograd.grad(y, x, g, create_graph=True)
        assert gx.grad_fn.name() == "BinaryCrossEntropyBackwardBackward0"
        return T.autograd.grad((gx * _weights(T, 8, T.float64)).sum(), (x, t, g))
    for a, b in zip(run(ember), run(torch)):
        _close(a, b, 1e-10)


@pytest.mark.parametrize("name", ["smooth_l1_loss", "huber_loss", "bce_with_logits", "bce"])
def test_forward_mode_matches_reverse_mode(name):
    from ember.autograd import forward_ad as fwAD

    f, _, _, _ = _LOSSES[name]
    rng = np.random.default_rng(1)
    x = ember.tensor(rng.uniform(0.1, 0.9, 6), dtype=ember.float64)
    t = ember.tensor(rng.uniform(0.1, 0.9, 6), dtype=ember.float64)
    x_dot = ember.tensor(rng.uniform(-1, 1, 6), dtype=ember.float64)
    t_dot = ember.tensor(rng.uniform(-1, 1, 6), dtype=ember.float64)
    with fwAD.dual_level():
        y = f(ember, ember.nn.functional, fwAD.make_dual(x, x_dot), fwAD.make_dual(t, t_dot),
              "sum")
        tangent = fwAD.unpack_dual(y).tangent
    xr, tr = x.clone().requires_grad_(), t.clone().requires_grad_()
    gx, gt = ember.autograd.grad(f(ember, ember.nn.functional, xr, tr, "sum"), (xr, tr))
    assert math.isclose(tangent.item(), ((gx * x_dot).sum() + (gt * t_dot).sum()).item(),
                        rel_tol=1e-10)


def test_huber_and_smooth_l1_broadcast_with_a_warning_as_torch():
    for T in (ember, torch):
        x = T.tensor([[1.0, -2.0, 0.3]], requires_grad=True)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            y = T.nn.functional.smooth_l1_loss(x, T.tensor([[0.0], [1.0]]), reduction="sum")
            z = T.nn.functional.huber_loss(x, T.tensor([[0.0], [1.0]]), reduction="sum")
        assert len(w) == 2
        (g,) = T.autograd.grad(y + z, x)
        if T is ember:
            mine = (y.item(), z.item(), g.numpy())
        else:
            np.testing.assert_allclose(mine[2], g.numpy(), rtol=1e-6)
            assert math.isclose(mine[0], y.item(), rel_tol=1e-6)
            assert math.isclose(mine[1], z.item(), rel_tol=1e-6)


@pytest.mark.parametrize("call", [
    lambda T: T.nn.functional.huber_loss(T.ones(2), T.zeros(2), delta=0.0),
    lambda T: T.nn.functional.huber_loss(T.ones(2), T.zeros(2), weight=T.ones(3)),
    lambda T: T.nn.functional.smooth_l1_loss(T.ones(2), T.zeros(2), beta=-1.0),
    lambda T: T.nn.functional.soft_margin_loss(T.ones(3, 1), T.ones(3)),
    lambda T: T.nn.functional.soft_margin_loss(T.ones(3), T.ones(2)),
    lambda T: T.nn.functional.soft_margin_loss(T.ones(3, dtype=T.int64), T.ones(3)),
    lambda T: T.nn.functional.soft_margin_loss(T.ones(3), T.ones(3, requires_grad=True)),
    lambda T: T.nn.functional.binary_cross_entropy(T.tensor([0.5, 1.5]), T.ones(2)),
    lambda T: T.nn.functional.binary_cross_entropy(T.ones(2), T.tensor([0.5, math.nan])),
    lambda T: T.nn.functional.binary_cross_entropy(T.ones(2), T.ones(2, dtype=T.float64)),
    lambda T: T.nn.functional.binary_cross_entropy(T.ones(2, dtype=T.int64),
                                                   T.ones(2, dtype=T.int64)),
    lambda T: T.nn.functional.binary_cross_entropy(T.ones(2), T.ones(2),
                                                   weight=T.ones(2, requires_grad=True)),
], ids=["huber_delta", "huber_weight_shape", "smooth_l1_beta", "soft_margin_broadcast",
        "soft_margin_shapes", "soft_margin_int", "soft_margin_target_grad", "bce_input_range",
        "bce_target_nan", "bce_dtypes", "bce_int", "bce_weight_grad"])
def test_bad_input_raises_as_torch(call):
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(Exception) as mine:
        call(ember)
    assert type(mine.value) is type(theirs.value), (mine.value, theirs.value)


def test_result_dtypes_as_torch():
    F, TF = ember.nn.functional, torch.nn.functional
    for a, b in (("float32", "float64"), ("float64", "float32"), ("float32", "int64")):
        def call(T, G, fn):
            return fn(G, T.ones(3, dtype=getattr(T, a)), T.ones(3, dtype=getattr(T, b)))
        for fn in (lambda G, x, t: G.soft_margin_loss(x, t),
                   lambda G, x, t: G.smooth_l1_loss(x, t),
                   lambda G, x, t: G.huber_loss(x, t),
                   lambda G, x, t: G.binary_cross_entropy_with_logits(x, t)):
            try:
                expected = str(call(torch, TF, fn).dtype).replace("torch.", "")
            except RuntimeError:
                with pytest.raises(RuntimeError):
                    call(ember, F, fn)
                continue
            assert call(ember, F, fn).dtype.name == expected


def test_empty_input_mean_is_nan_as_torch():
    for name in ("smooth_l1_loss", "huber_loss", "soft_margin_loss", "binary_cross_entropy",
                 "binary_cross_entropy_with_logits"):
        e = getattr(ember.nn.functional, name)(ember.empty(0), ember.empty(0))
        t = getattr(torch.nn.functional, name)(torch.empty(0), torch.empty(0))
        assert math.isnan(e.item()) and math.isnan(t.item())
        assert getattr(ember.nn.functional, name)(ember.empty(0), ember.empty(0),
                                                  reduction="sum").item() == 0.0


def test_margin_ranking_loss_graph_as_torch():
    for T in (ember, torch):
        x = T.ones(3, requires_grad=True)
        y = T.nn.functional.margin_ranking_loss(x, x * 2, T.tensor([1.0, -1.0, 1.0]),
                                                reduction="none")
        assert y.grad_fn.name() == "ClampMinBackward0"
        assert y.grad_fn.next_functions[0][0].name() == "AddBackward1"


def _same_outcome(call):
    """``call(T)`` gives torch's dtype and values, or raises torch's exception type."""
    try:
        theirs = call(torch)
    except Exception as e:  # noqa: BLE001 - compared below
        with pytest.raises(type(e)):
            call(ember)
        return
    mine = call(ember)
    assert mine.dtype.name == str(theirs.dtype).replace("torch.", "")
    np.testing.assert_allclose(mine.detach().numpy(), theirs.detach().numpy(), rtol=1e-6,
                               equal_nan=True)


@pytest.mark.parametrize("call", [
    # an infinite input must not make the other branch NaN; uint8 compares with 255
    lambda T: T.hinge_embedding_loss(T.tensor([-1.7976931348623157e308, float("inf"), 0.5],
                                              dtype=T.float64),
                                     T.tensor([0.0, 1.0, -1.0], dtype=T.float64), 0.5, 1),
    lambda T: T.hinge_embedding_loss(T.tensor([[0, 1, 0], [1, 0, 0]], dtype=T.uint8),
                                     T.tensor([[1, 255, 1], [255, 255, 1]], dtype=T.uint8), 1.0,
                                     0),
    lambda T: T.nn.functional.binary_cross_entropy_with_logits(
        T.tensor([-2.3, 0.4], dtype=T.float64), T.tensor([0.6, 0.1], dtype=T.complex64)),
    lambda T: T.nn.functional.binary_cross_entropy_with_logits(
        T.tensor([-2.3, 0.4], dtype=T.float64), T.tensor([0.6, 0.1], dtype=T.complex128),
        pos_weight=T.tensor([1.5, 2.0], dtype=T.float64)),
    lambda T: T.nn.functional.binary_cross_entropy_with_logits(
        T.tensor([-2.3, 0.4]), T.tensor([True, False])),
    lambda T: T.nn.functional.binary_cross_entropy_with_logits(
        T.tensor([-2.3, 0.4]), T.tensor([0.2, 1.0]), pos_weight=T.tensor([True, False])),
    lambda T: T.nn.functional.binary_cross_entropy(T.tensor([0.3], dtype=T.int64),
                                                   T.tensor([0.5])),
    lambda T: T.nn.functional.soft_margin_loss(T.tensor([1, 2]), T.tensor([1, -1])),
    lambda T: T.nn.functional.soft_margin_loss(T.tensor([True, False]), T.tensor([1.0, -1.0])),
    lambda T: T.nn.functional.huber_loss(T.tensor([True, False]), T.tensor([1, 0])),
], ids=["hinge_inf", "hinge_uint8", "bce_logits_complex_target",
        "bce_logits_complex_pos_weight", "bce_logits_bool_target", "bce_logits_bool_pos_weight",
        "bce_check_order",
        "soft_margin_int", "soft_margin_bool", "huber_cast_first"])
def test_dtype_and_edge_outcomes_as_torch(call):
    _same_outcome(call)


@pytest.mark.parametrize("opset", [11, 18])
def test_onnx_export_of_the_single_ops(opset):
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    F = ember.nn.functional

    class M(ember.nn.Module):
        def forward(self, x, t):
            p = x.sigmoid()
            a = F.prelu(x, ember.tensor([0.1, 0.2, 0.3, 0.4])) + F.hardshrink(x, 0.7)
            a = a + F.softshrink(x, 0.7) + F.threshold(x, 0.3, -2.0) + F.rrelu(x, 0.1, 0.3)
            a = a.sum() + F.glu(x, 1).sum()
            for r in ("mean", "sum"):
                a = a + F.smooth_l1_loss(x, t, reduction=r, beta=0.5)
                a = a + F.huber_loss(x, t, reduction=r, delta=0.5)
                a = a + F.soft_margin_loss(x, t.sign(), reduction=r)
                a = a + F.binary_cross_entropy(p, t, reduction=r)
                a = a + F.binary_cross_entropy_with_logits(x, t, reduction=r,
                                                           pos_weight=t + 1)
            return a + F.binary_cross_entropy(p, t, weight=t, reduction="none").sum()

    x, t = ember.randn(2, 4, 3) * 2, ember.rand(2, 4, 3)
    proto = ember.onnx.export(M(), (x, t), opset_version=opset).model_proto
    types = {n.op_type for n in proto.graph.node}
    assert {"PRelu", "Shrink", "Split"} <= types
    options = ort.SessionOptions()
    options.log_severity_level = 3
    sess = ort.InferenceSession(proto.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])
    (got,) = sess.run(None, {i.name: a.numpy() for i, a in zip(sess.get_inputs(), (x, t))})
    np.testing.assert_allclose(got, M()(x, t).numpy(), rtol=1e-4)
