"""Regressions for session 23's differential work: CTC's loss and gradient with infinite
losses and log-probabilities outside (-inf, 0] as torch's CPU kernel computes them, int64
average pooling that wraps at INT64_MIN, and the harness rules for what torch leaves
unspecified. Each repro runs with ``T = ember`` and ``T = torch`` where torch is installed;
the expectations are torch 2.13's."""

import numpy as np
import pytest

import ember


def _torch():
    return pytest.importorskip("torch")


def _np(t):
    t = t.detach()
    if t.is_conj():
        t = t.resolve_conj()
    return t.numpy()


def _same(a, b, rtol=1e-6):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape
    ok = (a == b) | (np.isnan(a) & np.isnan(b)) | np.isclose(a, b, rtol=rtol, atol=0)
    assert ok.all(), (a[~ok][:5], b[~ok][:5])


def _both(fn):
    """``fn(T)`` with ember and with torch."""
    return fn(ember), fn(_torch())


def _raises(fn):
    """The exception type and message ``fn(T)`` raises with ember and with torch."""
    out = []
    for T in (ember, _torch()):
        with pytest.raises(Exception) as info:
            fn(T)
        out.append((info.type.__name__, str(info.value)))
    return out


BIG = 1.7976931348623157e308
INF = float("inf")
NAN = float("nan")
I64_MIN = -9223372036854775808


# ------------------------------------------------------------------------------------------------
# CTC


def _ctc_run(T, lp, targets, il, tl, reduction, zero_infinity, dtype="float64"):
    x = T.tensor(lp, dtype=getattr(T, dtype)).requires_grad_()
    loss = T.nn.functional.ctc_loss(x, T.tensor(targets), il, tl, reduction=reduction,
                                    zero_infinity=zero_infinity)
    w = T.arange(loss.numel(), dtype=loss.dtype).reshape(loss.shape) % 3 - 1.5
    g, = T.autograd.grad((loss * w).sum(), [x])
    return _np(loss), _np(g)


_LP = np.log(np.random.default_rng(0).dirichlet(np.ones(3), size=(4, 2)))


@pytest.mark.parametrize("zero_infinity", [False, True])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_ctc_infeasible_target_loss_and_gradient(reduction, zero_infinity):
    # sequence 0 needs 5 steps for [1, 1, 1] and has 4: its loss is inf and, without
    # zero_infinity, its gradient NaN (torch: exp(ab + nll - lp) with nll = inf); with it, zeros
    # for that sequence only
    r = _both(lambda T: _ctc_run(T, _LP, [[1, 1, 1], [2, 1, 0]], [4, 4], [3, 2], reduction,
                                 zero_infinity))
    _same(r[0][0], r[1][0])
    _same(r[0][1], r[1][1])


@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_nan_log_prob_is_not_zeroed_by_zero_infinity(zero_infinity):
    # zero_infinity replaces inf only: a NaN in a used class gives a NaN loss either way
    lp = _LP.copy()
    lp[1, 0, 1] = NAN
    lp[2, 1, 2] = NAN  # unused class of sequence 1: its loss stays finite, that entry's grad NaN
    r = _both(lambda T: _ctc_run(T, lp, [[1, 1], [1, 1]], [4, 4], [2, 1], "none",
                                 zero_infinity))
    assert np.isnan(r[0][0][0]) and np.isfinite(r[0][0][1])
    _same(r[0][0], r[1][0])
    _same(r[0][1], r[1][1])


def test_ctc_minus_inf_log_prob_of_an_unused_class_has_nan_gradient():
    lp = _LP.copy()
    lp[1, :, 2] = -INF
    r = _both(lambda T: _ctc_run(T, lp, [[1], [1]], [4, 4], [1, 1], "sum", False))
    _same(r[0][0], r[1][0])
    _same(r[0][1], r[1][1])
    assert np.isnan(r[0][1][1, :, 2]).all()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("big", [1.0, 1e30, "max", INF])
def test_ctc_log_probs_above_zero(dtype, big):
    # log-probabilities far above 0 overflow torch's sums inside its own dtype
    top = np.finfo(dtype).max if big == "max" else big
    lp = _LP.copy()
    lp[0, 0, 0] = top
    lp[2, 1, 1] = top
    lp[3, 0, 2] = -top
    r = _both(lambda T: _ctc_run(T, lp, [[1, 2], [1, 1]], [4, 3], [2, 1], "none", False,
                                 dtype))
    _same(r[0][0], r[1][0], rtol=1e-5)
    _same(r[0][1], r[1][1], rtol=1e-5)


@pytest.mark.parametrize("tl", [0, 1])
def test_ctc_zero_input_length(tl):
    # nothing to align: -0.0 for an empty target, inf otherwise; the gradient is zero
    r = _both(lambda T: _ctc_run(T, _LP, [[1], [1]], [0, 4], [tl, 1], "none", False))
    _same(r[0][0], r[1][0])
    assert np.signbit(r[0][0][0]) == np.signbit(r[1][0][0])
    _same(r[0][1], r[1][1])


def test_ctc_label_equal_to_blank_at_the_last_step():
    # the label's end position is assigned after the blank's: with label == blank it wins
    r = _both(lambda T: _ctc_run(T, _LP, [[0, 1], [0, 0]], [4, 4], [1, 2], "none", False))
    _same(r[0][0], r[1][0])
    _same(r[0][1], r[1][1])


def test_harness_ctc_nan_class_and_strided_concatenated_targets_are_unspecified():
    H = pytest.importorskip("tests.differential.harness")
    C = type("C", (), {})
    c = C()
    c.op_id, c.kwargs = "ctc_loss", {}
    lp = H.TensorSpec(_LP.copy(), "float64")
    c.args = [lp, H.TensorSpec(np.array([1.0, NAN, 1.0]), "float32"), [4, 4], [2, 1]]
    assert H._torch_wrong(c, "ember_raises")
    c.args[1] = H.TensorSpec(np.array([1, 0, 1, 0, 0, 0])[::2].copy(), "int64", layout="step")
    assert H._torch_wrong(c, "values")
    c.args[1] = H.TensorSpec(np.array([1, 1, 0]), "int64")
    assert not H._torch_wrong(c, "values")


# ------------------------------------------------------------------------------------------------
# pooling


def test_avg_pool_int64_wraps_and_truncates_toward_zero():
    # the window sum wraps in int64 (INT64_MIN + INT64_MIN is 0); the quotient truncates
    x = [[[I64_MIN, I64_MIN, -2, 7, -8, 9, I64_MIN, 1, 2, 5, -7, 3]]]

    def f(T):
        t = T.tensor(x)
        F = T.nn.functional
        return [F.avg_pool1d(t, 3).tolist(),
                F.avg_pool1d(t, 2, padding=1).tolist(),
                F.avg_pool2d(t[None], (1, 3), divisor_override=2).tolist(),
                F.avg_pool2d(t[None], (1, 3), divisor_override=-2).tolist()]

    e, t = _both(f)
    assert e == t


# ------------------------------------------------------------------------------------------------
# histograms at the dtype's extremes (NOTE [ Histogram bins as torch's CPU kernel finds them ])

M32 = 3.4028234663852886e38


def _hist_lists(r):
    r = r if isinstance(r, tuple) else (r,)
    return [np.asarray(_np(t.float() if t.dtype.itemsize == 2 else t), np.float64).tolist()
            for t in r]


@pytest.mark.parametrize("dtype,v", [("float32", M32), ("float32", -M32), ("float32", 1e30),
                                     ("float32", 2.0 ** 30), ("float32", 1e8),
                                     ("float64", BIG), ("float64", 2.0 ** 60),
                                     ("float16", 4096.0), ("bfloat16", 300.0)])
@pytest.mark.parametrize("bins", [1, 5, 100])
def test_histc_of_one_value_that_widening_cannot_separate(dtype, v, bins):
    e, t = _both(lambda T: T.histc(T.tensor([v, v], dtype=getattr(T, dtype)), bins))
    assert _hist_lists(e) == _hist_lists(t)


@pytest.mark.parametrize("dtype,v", [("float32", M32), ("float32", 1e30), ("float64", -BIG)])
def test_histogram_of_one_value_that_widening_cannot_separate(dtype, v):
    e, t = _both(lambda T: T.histogram(T.tensor([v], dtype=getattr(T, dtype)), 5))
    assert _hist_lists(e) == _hist_lists(t)


def test_histogram_whose_quotient_overflows():
    # (2e38 + 1e38) * 5 is inf in float32: torch's search then only looks at edges[0:2]
    x = [-1e38, 0.0, 2e38]
    e, t = _both(lambda T: T.histogram(T.tensor(x), 5))
    assert _hist_lists(e) == _hist_lists(t)
    e, t = _both(lambda T: T.histc(T.tensor(x), 5))
    assert _hist_lists(e) == _hist_lists(t)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_histogram_of_the_whole_float_range_counts_nothing(dtype):
    big = M32 if dtype == "float32" else BIG
    e, t = _both(lambda T: T.histogram(T.tensor([-big, 0.0, big], dtype=getattr(T, dtype)), 5))
    assert _hist_lists(e)[0] == _hist_lists(t)[0] == [0.0] * 5


def test_histogram_weights_add_in_order_in_the_dtype_and_unsorted_edges():
    x = [1.0, 2.0, 2.5, 0.7, 3.0, 2.0]
    w = [M32, M32, -M32, 1.0, INF, -M32]
    edges = [0.5, -1.0, 3.0, 2.2, 9.0]  # not increasing: torch's binary search decides

    def f(T):
        X, W = T.tensor(x), T.tensor(w)
        return (T.histogram(X, 3, range=(0.0, 3.0), weight=W)[0],
                T.histogram(X, T.tensor(edges), weight=W)[0],
                T.histogram(X, T.tensor(edges))[0])

    e, t = _both(f)
    assert _hist_lists(e) == _hist_lists(t)


def test_histc_error_messages():
    r = _raises(lambda T: T.histc(T.tensor([1.0]), 5, min=3, max=1))
    assert r[0] == r[1]
    r = _raises(lambda T: T.histc(T.tensor([2.0 ** 60], dtype=T.bfloat16), 5))
    assert r[0] == r[1]
    r = _raises(lambda T: T.histc(T.tensor([65504.0], dtype=T.float16), 5))
    assert r[0] == r[1]


# ------------------------------------------------------------------------------------------------
# numbers that overflow the dtype they are written in


@pytest.mark.parametrize("case", [
    lambda T: T.full((2,), 65505.0, dtype=T.float16),
    lambda T: T.zeros(2, dtype=T.bfloat16).fill_(1e39),
    lambda T: T.zeros(2, dtype=T.int8).masked_fill(T.tensor([True, False]), 1000),
    lambda T: T.zeros(2, dtype=T.float16).masked_fill(T.tensor([True, False]), T.tensor(1e6)),
    lambda T: T.zeros(2, dtype=T.int8).index_fill(0, T.tensor([0]), 1000),
    lambda T: T.zeros(2, dtype=T.int8).clamp(max=1000),
    lambda T: T.zeros(2, dtype=T.float16).clamp_min(-1e6),
    lambda T: T.zeros(2).clamp(-1e40, 1e40),
    lambda T: T.zeros(2, dtype=T.int64).clamp(max=1e39),
    lambda T: T.linspace(0, 65505.0, 3, dtype=T.float16),
    lambda T: T.logspace(0, 1e39, 3, dtype=T.float32),
])
def test_number_past_the_dtype_raises(case):
    r = _raises(case)
    assert r[0] == r[1]


@pytest.mark.parametrize("case", [
    lambda T: T.full((2,), INF, dtype=T.float16),
    lambda T: T.zeros(2, dtype=T.uint8).clamp(max=-1),
    lambda T: T.zeros(2, dtype=T.int8).clamp(max=0.5),
    lambda T: T.zeros(2, dtype=T.float16).clamp(max=T.tensor(1e6)),
    lambda T: T.linspace(0, 65505.0, 1, dtype=T.float16),
    lambda T: T.zeros(2).clamp(-INF, NAN),
])
def test_number_that_fits_or_is_not_converted(case):
    e, t = _both(case)
    assert e.dtype.itemsize == t.dtype.itemsize
    _same(_np(e.double()), _np(t.double()))


# ------------------------------------------------------------------------------------------------
# messages


@pytest.mark.parametrize("case", [
    lambda T: T.tensor([1, 2]).requires_grad_(),
    lambda T: T.tensor([1, 2], requires_grad=True),
    lambda T: setattr(T.tensor([1, 2]), "requires_grad", True),
    lambda T: T.zeros(2, dtype=T.int32, requires_grad=True),
    lambda T: T.nn.functional.embedding_bag(T.tensor([[4, 0]]), T.ones(2, 3)),
    lambda T: T.nn.functional.embedding_bag(T.tensor([0, -1]), T.ones(2, 3), T.tensor([0])),
])
def test_refusal_reads_as_torch(case):
    r = _raises(case)
    assert r[0] == r[1]
